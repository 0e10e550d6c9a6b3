"""The validated-catalog cache and what a user catalog may do: the cache is keyed by a cryptographic
digest of the file (a CRC-32 collision once made one catalog answer for another), an unusable cache
file is rebuilt, a user entry that shadows a bundled name says so, and a GPU without memory above the
runtime's reserve is refused. Subprocess tests: the contract spans processes (cache files, exits)."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import zlib
from collections.abc import Callable
from dataclasses import asdict, fields, replace
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusize.core.gpu import GpuSpec
from gpusize.errors import CatalogError
from gpusize.sources import catalog, catalog_cache, schema


def run(cache: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1", catalog.CACHE_ENV: str(cache)}
    env.pop("GPUSIZE_GPUS", None)
    env.pop("GPUSIZE_MODELS", None)
    return subprocess.run(
        [sys.executable, "-m", "gpusize", *args], capture_output=True, text=True, env=env, timeout=60
    )


def my_gpu(**changes: object) -> dict[str, object]:
    skip = {f.name for f in fields(GpuSpec) if not f.metadata.get("catalog", True)}  # not in a file
    base = {k: v for k, v in asdict(catalog.Catalogs().find_gpu("H100")).items() if k not in skip}
    base.update(name="MyCard", full_name="Company card", aliases=[], cuda_visible_gib=None, source="ours")
    base.update(changes)
    return base


def forge_crc(data: bytes, target: int, at: int) -> bytes:
    """`data` with the 8 bytes at `at` (each '@'..'_', printable) chosen so its CRC-32 is `target`:
    CRC-32 is affine over GF(2), so the 40 free low bits (5 a byte) solve a linear system."""
    base = bytearray(data)
    base[at : at + 8] = b"@" * 8
    start = zlib.crc32(bytes(base))
    columns = []
    for bit in range(40):
        flipped = bytearray(base)
        flipped[at + bit // 5] ^= 1 << (bit % 5)
        columns.append(zlib.crc32(bytes(flipped)) ^ start)
    # Gaussian elimination: rows are (effect, choice of free bits)
    basis: list[tuple[int, int]] = []
    for bit, effect in enumerate(columns):
        choice = 1 << bit
        for b_effect, b_choice in basis:
            if effect ^ b_effect < effect:
                effect, choice = effect ^ b_effect, choice ^ b_choice
        if effect:
            basis.append((effect, choice))
            basis.sort(reverse=True)
    want, chosen = start ^ target, 0
    for b_effect, b_choice in basis:
        if want ^ b_effect < want:
            want, chosen = want ^ b_effect, chosen ^ b_choice
    assert want == 0, "the free bits do not span CRC-32 here"
    for bit in range(40):
        if chosen >> bit & 1:
            base[at + bit // 5] ^= 1 << (bit % 5)
    return bytes(base)


def test_two_catalogs_of_equal_length_and_crc32_are_not_confused(tmp_path: Path) -> None:
    a = yaml.safe_dump([my_gpu(memory_mib=81920)]).encode() + b"# @@@@@@@@\n"
    b = yaml.safe_dump([my_gpu(memory_mib=24576)]).encode() + b"# @@@@@@@@\n"
    b = forge_crc(b, zlib.crc32(a), len(b) - 9)
    assert len(a) == len(b) and zlib.crc32(a) == zlib.crc32(b) and a != b
    (tmp_path / "a.yaml").write_bytes(a)
    (tmp_path / "b.yaml").write_bytes(b)
    cache = tmp_path / "cache"
    sizes = []
    for name in ("a.yaml", "b.yaml", "b.yaml"):
        r = run(cache, "gpus", "--gpus-file", str(tmp_path / name), "--json")
        assert r.returncode == 0, r.stderr
        sizes.append(next(g["memory_mib"] for g in json.loads(r.stdout)["gpus"] if g["name"] == "MyCard"))
    assert sizes == [81920, 24576, 24576]


def test_an_unusable_cache_file_is_ignored_and_rebuilt(tmp_path: Path) -> None:
    path = tmp_path / "my.yaml"
    path.write_text(yaml.safe_dump([my_gpu(memory_mib=49152)]))
    cache = tmp_path / "cache"
    assert run(cache, "gpus", "--gpus-file", str(path), "--json").returncode == 0
    files = sorted(cache.glob("catalog-*.json"))
    assert files
    for bogus in ('[{"bogus": 1}]', "{not json", '{"rows": [{"bogus": 1}]}', "[]"):
        for f in files:
            f.write_text(bogus)
        r = run(cache, "gpus", "--gpus-file", str(path), "--json")
        assert r.returncode == 0, (bogus, r.stderr)
        gpus = {g["name"]: g for g in json.loads(r.stdout)["gpus"]}
        assert gpus["MyCard"]["memory_mib"] == 49152 and "H100-SXM" in gpus
    # and the rebuilt file is used again
    assert all(json.loads(f.read_text())["rows"] for f in cache.glob("catalog-*.json"))


def test_a_cached_row_that_lost_its_shape_is_rebuilt(tmp_path: Path) -> None:
    path = tmp_path / "my.yaml"
    path.write_text(yaml.safe_dump([my_gpu(memory_mib=49152)]))
    cache = tmp_path / "cache"
    assert run(cache, "gpus", "--gpus-file", str(path), "--json").returncode == 0
    for f in cache.glob("catalog-*.json"):
        data = json.loads(f.read_text())
        data["rows"][0][data["fields"].index("memory_mib")] = "lots"
        f.write_text(json.dumps(data))
    r = run(cache, "fit", "Qwen3-8B", "--gpu", "MyCard", "--gpus-file", str(path), "--json")
    assert r.returncode == 0, r.stderr


def test_memory_at_or_below_the_runtime_reserve_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "my.yaml"
    for memory_type, mib, reserve in (("GDDR6", 1, 470), ("HBM3", 698, 698)):
        path.write_text(yaml.safe_dump([my_gpu(memory_mib=mib, memory_type=memory_type)]))
        r = run(tmp_path / "cache", "fit", "Qwen3-8B", "--gpu", "MyCard", "--gpus-file", str(path))
        assert r.returncode == 2 and not r.stdout
        assert f"my.yaml: [0].memory_mib: {mib} MiB is not above the {reserve} MiB" in r.stderr
        assert len(r.stderr.strip().splitlines()) == 1


def test_a_date_that_is_no_date_is_an_input_error_not_a_crash(tmp_path: Path) -> None:
    path = tmp_path / "my.yaml"
    path.write_text(
        yaml.safe_dump([my_gpu()]).replace("name: MyCard", "name: MyCard\n  source_date: 2026-13-45")
    )
    r = run(tmp_path / "cache", "gpus", "--gpus-file", str(path))
    assert r.returncode == 2 and "my.yaml: not valid YAML (a value: month must be in 1..12)" in r.stderr


def test_a_user_entry_that_shadows_bundled_names_says_so_and_the_answer_names_its_file(
    tmp_path: Path,
) -> None:
    path = tmp_path / "my-gpus.yaml"
    path.write_text(yaml.safe_dump([my_gpu(name="MyH100", aliases=["H100", "A100"], memory_mib=24576)]))
    r = run(tmp_path / "cache", "fit", "Qwen3-8B", "--gpu", "H100", "--gpus-file", str(path), "--json")
    assert r.returncode == 0, r.stderr
    warnings = [line for line in r.stderr.splitlines() if "warning" in line]
    assert f"{path}: [0] 'MyH100' answers to 'H100', so it replaces the bundled GPU H100-SXM" in warnings[1]
    assert f"{path}: [0] 'MyH100' answers to 'A100', so it replaces the bundled GPU A100-80GB" in warnings[0]
    report = json.loads(r.stdout)
    assert report["plan"]["gpu"] == "MyH100"
    assert report["assumptions"]["gpu_files"] == [{"gpu": "MyH100", "file": str(path)}]
    text = run(tmp_path / "cache", "fit", "Qwen3-8B", "--gpu", "H100", "--gpus-file", str(path))
    assert f"MyH100 from {path} (user catalog)" in " ".join(text.stdout.split())
    listed = json.loads(run(tmp_path / "cache", "gpus", "--gpus-file", str(path), "--json").stdout)["gpus"]
    files = {g["name"]: g["catalog_file"] for g in listed}
    assert files["MyH100"] == str(path) and files["L4"] is None and "H100-SXM" not in files


def test_every_inference_answer_names_a_user_catalog_gpu_file(tmp_path: Path) -> None:
    path = tmp_path / "my-gpus.yaml"
    path.write_text(yaml.safe_dump([my_gpu()]))
    cache = tmp_path / "cache"
    for args in (
        ["serve", "Qwen3-8B", "--users", "8"],
        ["quote", "Qwen3-8B"],
        ["curve", "Qwen3-8B"],
        ["which"],
    ):
        r = run(cache, *args, "--gpu", "MyCard", "--gpus-file", str(path), "--json")
        assert r.returncode in (0, 1), (args, r.stderr)
        assert json.loads(r.stdout)["assumptions"]["gpu_files"] == [{"gpu": "MyCard", "file": str(path)}], (
            args
        )
        assert "warning" not in r.stderr
    bundled = run(cache, "curve", "Qwen3-8B", "--gpu", "H100", "--json")
    assert json.loads(bundled.stdout)["assumptions"]["gpu_files"] == [] and not bundled.stderr


@settings(max_examples=40, deadline=None)
@given(mib=st.integers(1, 4096), memory_type=st.sampled_from(["GDDR6", "GDDR7", "HBM3", "LPDDR5X"]))
def test_a_catalog_gpu_is_refused_or_has_memory_left_for_an_engine(mib: int, memory_type: str) -> None:
    raw = yaml.safe_dump([my_gpu(memory_mib=mib, memory_type=memory_type)]).encode()
    try:
        rows = schema.validate_file(Path("my.yaml"), raw, "gpus")
    except CatalogError as exc:
        assert "memory_mib" in str(exc) and "the runtime reserves" in str(exc)
        return
    gpu = catalog.GpuSpec(**{**rows[0], "aliases": ()})
    assert gpu.visible_bytes > 0


def test_a_gpu_built_with_less_than_the_reserve_shows_no_negative_bytes() -> None:
    gpu = replace(catalog.Catalogs().find_gpu("L4"), memory_mib=1)  # the API or --gpu local, no catalog
    assert gpu.visible_bytes == 0


def test_the_user_file_note_is_one_line_per_file_however_many_gpus_it_holds() -> None:
    from gpusize.reports.common import gpu_file_notes, gpu_files

    gpus = catalog.Catalogs().gpus()
    mine = [replace(g, catalog_file="a.yaml") for g in gpus[:9]] + [replace(gpus[10], catalog_file="b.yaml")]
    notes = gpu_file_notes([*mine, gpus[11]])
    assert len(notes) == 2 and notes[0].endswith("and 3 more from a.yaml (user catalog)")
    assert notes[1] == f"{gpus[10].name} from b.yaml (user catalog)"
    assert len(gpu_files([*mine, gpus[11]])) == 10


def _shape_ok_per_value(row: object, types: catalog_cache.RowTypes) -> bool:
    """The rule a value at a time, as the cache checked it before format 5's column check."""
    if not isinstance(row, list) or len(row) != len(types):
        return False
    for (name, allowed), value in zip(types.items(), row, strict=True):
        if not isinstance(value, allowed) or ((value is True or value is False) and bool not in allowed):
            return False
        if name == "aliases" and not (isinstance(value, list) and all(isinstance(a, str) for a in value)):
            return False
    return True


@functools.cache
def _first_row(kind: str) -> list[object]:
    row = catalog.validated_rows(catalog.data_dir() / f"{kind}.yaml", kind)[0]
    return [row[n] for n in catalog.row_types_of(kind)]


#: Every JSON value kind, and lists of strings or not (aliases).
_JSON_VALUES = [True, False, 0, 3, 1.5, "s", None, [], ["a"], ["a", 1], [True], {}, {"a": 1}]


@settings(max_examples=300, deadline=None)
@given(
    kind=st.sampled_from(["models", "gpus"]),
    data=st.data(),
)
def test_the_column_check_keeps_and_refuses_what_the_value_check_did(kind: str, data: st.DataObject) -> None:
    """Rows of valid values (the first row of the bundled catalog) with a few values swapped for any
    JSON value kind, a row cut short or not a list: the cache keeps exactly the files the rule a
    value at a time kept (the check is the cache's only guard on a file it did not just write)."""
    types = catalog.row_types_of(kind)
    names, good = list(types), _first_row(kind)
    rows: list[object] = []
    for _ in range(data.draw(st.integers(0, 4))):
        row = list(good)
        for i in data.draw(st.lists(st.integers(0, len(names) - 1), max_size=2)):
            row[i] = data.draw(st.sampled_from(_JSON_VALUES))
        rows.append(
            data.draw(st.sampled_from([row, row[:-1], tuple(row), "row"]))
            if data.draw(st.booleans())
            else row
        )
    expected = all(_shape_ok_per_value(r, types) for r in rows)
    assert catalog_cache._shape_ok(rows, types) is expected


def _stored_models(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[list[dict[str, object]], Path]:
    """Five models under other names, two configs between them, stored in a cache folder."""
    monkeypatch.setenv(catalog.CACHE_ENV, str(tmp_path))
    bundled = catalog.validated_rows(catalog.data_dir() / "models.yaml", "models")
    rows = [{**bundled[i % 2], "name": f"m-{i}", "hf_id": f"acme/m-{i}"} for i in range(5)]
    catalog_cache.store("models", "d" * 64, rows, catalog.row_types_of("models"))
    (path,) = tmp_path.glob("catalog-*-models-*.json")
    return rows, path


def test_repeated_values_are_stored_once_and_read_back_as_they_were(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows, path = _stored_models(tmp_path, monkeypatch)
    data = json.loads(path.read_text())
    assert len(data["shared"]["config"]) == 2 and "name" not in data["shared"]
    read = catalog_cache.load("models", "d" * 64, catalog.row_types_of("models"))
    assert read == rows
    assert read is not None and read[0]["config"] is read[2]["config"]  # one decoded value, shared


@pytest.mark.parametrize(
    "spoil",
    [
        lambda d: d["rows"][1].__setitem__(d["fields"].index("config"), 2),  # no such value
        lambda d: d["rows"][1].__setitem__(d["fields"].index("config"), -1),
        lambda d: d["rows"][1].__setitem__(d["fields"].index("config"), True),  # a bool, not an index
        lambda d: d["rows"][1].__setitem__(d["fields"].index("config"), {}),  # a value where an index is
        lambda d: d["shared"]["config"].__setitem__(0, "text"),  # a value of the wrong type
        lambda d: d["shared"].__setitem__("aliases", [["a"]]),  # a field that is never shared
        lambda d: d["shared"].__setitem__("bogus", []),
        lambda d: d.__setitem__("shared", []),
    ],
)
def test_a_spoiled_shared_value_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spoil: Callable[[dict[str, Any]], None]
) -> None:
    _, path = _stored_models(tmp_path, monkeypatch)
    data = json.loads(path.read_text())
    spoil(data)
    path.write_text(json.dumps(data))
    assert catalog_cache.load("models", "d" * 64, catalog.row_types_of("models")) is None
