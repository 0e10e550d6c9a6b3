"""The bundled catalogs ship validated (sources/shipped.py): the files are what validating data/*.yaml
yields, a run reads them without YAML or pydantic whatever the cache folder, and a stale one is
ignored."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpusize.sources import catalog, catalog_cache, schema, shipped

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("kind", shipped.KINDS)
def test_the_shipped_file_is_what_validating_the_yaml_yields(kind: str) -> None:
    path = catalog.data_dir() / f"{kind}.yaml"
    raw = path.read_bytes()
    digest = catalog_cache.digest_of(raw)
    types = catalog.row_types_of(kind)
    validated = schema.validate_file(path, raw, kind)
    expected = catalog.shipped_text(kind, digest, validated)
    got = shipped.shipped_path(path).read_text(encoding="utf-8")
    stale = f"{shipped.shipped_path(path).name} is stale: python -m gpusize.sources.shipped_build"
    assert got == expected, stale
    assert shipped.rows(path, kind, digest, types) == json.loads(json.dumps(validated))  # tuples: lists


def test_a_shipped_file_of_other_bytes_is_not_used(tmp_path: Path) -> None:
    path = catalog.data_dir() / "gpus.yaml"
    types = catalog.row_types_of("gpus")
    assert shipped.rows(path, "gpus", catalog_cache.digest_of(b"edited"), types) is None
    assert shipped.rows(tmp_path / "gpus.yaml", "gpus", "0" * 64, types) is None  # no file beside it


@pytest.mark.parametrize("cache", ["", "unwritable"])
def test_a_run_reads_the_bundled_catalogs_without_yaml(tmp_path: Path, cache: str) -> None:
    # the first run, a cache turned off or a read-only cache folder: no YAML parsed, no pydantic
    folder = tmp_path / "ro"
    folder.mkdir(mode=0o500)
    code = (
        "import sys\nfrom gpusize.sources import catalog\n"
        "print(len(catalog.load_models()), len(catalog.load_gpus()))\n"
        "assert 'yaml' not in sys.modules and 'pydantic' not in sys.modules, 'parsed the YAML'\n"
    )
    env = {**os.environ, "GPUSIZE_CACHE_DIR": "" if not cache else str(folder)}
    env.pop("GPUSIZE_MODELS", None)
    env.pop("GPUSIZE_GPUS", None)
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    # no catalog is validated or cached; a folder that is writable after all (as root) may get the
    # digest memo of the bundled files (test_a_remembered_digest_is_used_only_for_the_shipped_copy)
    written = [p.name for p in folder.iterdir()]
    assert written == [] if os.geteuid() != 0 else set(written) <= {catalog_cache._DIGEST_MEMO}


def _fresh(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPUSIZE_CACHE_DIR", str(folder))
    catalog_cache._digest_memo.cache_clear()
    catalog._indexed.cache_clear()
    catalog._DIGESTS.clear()


def test_a_remembered_digest_is_used_only_for_the_shipped_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, types = catalog.data_dir() / "gpus.yaml", catalog.row_types_of("gpus")
    shipped_rows = shipped.rows(path, "gpus", catalog_cache.digest_of(path.read_bytes()), types)
    _fresh(tmp_path, monkeypatch)
    assert catalog.validated_rows(path, "gpus") == shipped_rows  # hashed, then remembered
    memo = json.loads((tmp_path / catalog_cache._DIGEST_MEMO).read_bytes())
    stat = path.stat()
    assert memo[str(path)] == [stat.st_size, stat.st_mtime_ns, catalog_cache.digest_of(path.read_bytes())]

    def refused(raw: bytes) -> str:
        raise AssertionError("hashed although the digest was remembered")

    _fresh(tmp_path, monkeypatch)
    with monkeypatch.context() as patched:
        patched.setattr(catalog_cache, "digest_of", refused)
        assert catalog.validated_rows(path, "gpus") == shipped_rows
        assert catalog._indexed("gpus", catalog._identities((path,))[0]) is not None

    # a forged entry (another digest at the same size and time) never reaches the cache: the file is
    # hashed and the shipped copy of its true bytes answers, not a cache file planted for the forgery
    forged = "f" * 64
    (tmp_path / catalog_cache._DIGEST_MEMO).write_text(
        json.dumps({str(path): [stat.st_size, stat.st_mtime_ns, forged]})
    )
    planted = [{**shipped_rows[0], "name": "FORGED-GPU"}] if shipped_rows else []
    catalog_cache.store("gpus", forged, planted, types)
    assert catalog_cache.load("gpus", forged, types) == planted
    _fresh(tmp_path, monkeypatch)
    assert catalog.validated_rows(path, "gpus") == shipped_rows
    assert catalog._indexed("gpus", catalog._identities((path,))[0]) is not None

    # another size or time: hashed again
    (tmp_path / catalog_cache._DIGEST_MEMO).write_text(
        json.dumps(
            {str(path): [stat.st_size, stat.st_mtime_ns + 1, catalog_cache.digest_of(path.read_bytes())]}
        )
    )
    _fresh(tmp_path, monkeypatch)
    hashed: list[bytes] = []
    real = catalog_cache.digest_of
    monkeypatch.setattr(catalog_cache, "digest_of", lambda raw: hashed.append(raw) or real(raw))
    assert catalog.validated_rows(path, "gpus") == shipped_rows
    assert hashed == [path.read_bytes()]
