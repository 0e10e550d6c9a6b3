"""Catalog files: the shipped ones validate; broken ones are rejected with file, entry and field."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import venv
import zipfile
from pathlib import Path

import pytest
import yaml

from gpusize.core.parse import parse_config
from gpusize.errors import CatalogError, UnknownNameError
from gpusize.sources import catalog
from gpusize.sources.catalog import validated_rows
from tests.conftest import ROOT


def test_shipped_catalogs_validate_and_parse() -> None:
    gpus, models = catalog.load_gpus(), catalog.load_models()
    assert len(gpus) >= 30 and len(models) >= 40
    for entry in models:
        parse_config(entry.config)  # every catalog config is sizable
        assert entry.source


@pytest.mark.parametrize(
    "name, expected",
    [
        ("H100", "H100-SXM"),
        ("h100-pcie", "H100-PCIe"),
        ("H200", "H200-SXM"),
        ("B200", "B200"),
        ("A100-80GB", "A100-80GB"),
        ("A100-40GB", "A100-40GB"),
        ("L40S", "L40S"),
        ("L4", "L4"),
        ("A10", "A10"),
        ("RTX4090", "RTX4090"),
        ("rtx 4090", "RTX4090"),
        ("RTX3090", "RTX3090"),
        ("RTX5090", "RTX5090"),
        ("RTX3060", "RTX3060"),
        ("RTX-PRO-6000", "RTX-PRO-6000"),
        ("MI300X", "MI300X"),
    ],
)
def test_gpu_aliases(name: str, expected: str) -> None:
    assert catalog.find_gpu(name).name == expected


@pytest.mark.parametrize(
    "name, hf_id",
    [
        ("Qwen3-32B", "Qwen/Qwen3-32B"),
        ("qwen/qwen3-32b", "Qwen/Qwen3-32B"),
        ("Llama-3.3-70B", "meta-llama/Llama-3.3-70B-Instruct"),
        ("DeepSeek-V3", "deepseek-ai/DeepSeek-V3"),
        ("gpt-oss-20b", "openai/gpt-oss-20b"),
    ],
)
def test_model_names(name: str, hf_id: str) -> None:
    assert catalog.find_model(name).hf_id == hf_id


def test_unknown_names_suggest() -> None:
    with pytest.raises(UnknownNameError) as err:
        catalog.find_gpu("H10")
    assert "H100" in " ".join(err.value.suggestions)


def test_h100_visible_total_is_cuda_figure() -> None:
    assert round(catalog.find_gpu("H100").visible_bytes / 2**30, 2) == 79.19


BROKEN = [
    ("- name: X\n", "[0].full_name: field required"),
    ("not: a list\n", "expected a list"),
    ("- [unclosed\n", "not valid YAML"),
]


@pytest.mark.parametrize("text, message", BROKEN)
def test_broken_gpu_files(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "my-gpus.yaml"
    path.write_text(text)
    with pytest.raises(CatalogError, match=message.replace("[", r"\[").replace("]", r"\]")):
        validated_rows(path, "gpus")


def _good_gpu() -> dict[str, object]:
    row = validated_rows(catalog.data_dir() / "gpus.yaml", "gpus")[0]
    return {**row, "name": "Mine", "aliases": []}


@pytest.mark.parametrize(
    "field, value, message",
    [
        ("memory_mib", 0, r"\[1\].memory_mib: must be > 0"),
        ("memory_mib", "80000", r"\[1\].memory_mib: input should be a valid integer"),
        ("memory_mib", True, r"\[1\].memory_mib: input should be a valid integer"),
        ("price_usd_per_hour", float("inf"), r"\[1\]: holds a value that is not a finite number"),
        ("price_usd_per_hour", -1.0, r"\[1\].price_usd_per_hour: must be > 0"),
        ("cuda_visible_gib", 1e6, r"\[1\].cuda_visible_gib: above the reported total"),
        ("free_mib", 10, r"\[1\].free_mib: unknown field"),
        ("catalog_file", "/etc/passwd", r"\[1\].catalog_file: unknown field"),
        ("memory_mib", 470, r"\[1\].memory_mib: 470 MiB is not above the 470 MiB the runtime reserves"),
        ("interconnect", "carrier-pigeon", r"\[1\].interconnect: input should be"),
        ("interconnect", "infinity-fabric", r"\[1\].interconnect: infinity-fabric is an AMD interconnect"),
        ("price_usd_per_hour", 1.0, r"\[1\].price_date: required with price_usd_per_hour"),
        ("price_date", "2026-13-01", r"\[1\].price_date: '2026-13-01' is not a date"),
        ("purchase_price_date", None, r"\[1\].purchase_price_date: required with purchase_price_usd"),
        ("purchase_price_date", "spring 2026", r"\[1\].purchase_price_date: 'spring 2026' is not a date"),
        ("rocm_visible_gib", 10.0, r"\[1\].rocm_visible_gib: not a fact of a NVIDIA GPU"),
        ("gfx_target", "gfx942", r"\[1\].gfx_target: not a fact of a NVIDIA GPU"),
        ("compute_capability", "eight", r"\[1\].compute_capability: 'eight' is not major.minor"),
        ("p2p", "unknown", r"\[1\].p2p: input should be a valid boolean"),
    ],
)
def test_gpu_entry_errors_name_file_entry_and_field(
    tmp_path: Path, field: str, value: object, message: str
) -> None:
    path = tmp_path / "my-gpus.yaml"
    path.write_text(yaml.safe_dump([_good_gpu(), {**_good_gpu(), "name": "Bad", field: value}]))
    with pytest.raises(CatalogError, match=r"my-gpus.yaml: " + message):
        validated_rows(path, "gpus")


def test_duplicate_names_rejected(tmp_path: Path) -> None:
    path = tmp_path / "dup.yaml"
    path.write_text(yaml.safe_dump([_good_gpu(), _good_gpu()]))
    with pytest.raises(CatalogError, match="already used"):
        validated_rows(path, "gpus")


def test_not_utf8_and_alias_bombs_are_refused(tmp_path: Path) -> None:
    latin = tmp_path / "latin.yaml"
    latin.write_bytes(b"- name: caf\xe9\n")
    with pytest.raises(CatalogError, match="not UTF-8"):
        validated_rows(latin, "models")
    bomb = tmp_path / "bomb.yaml"
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join(f'*a{i - 1}' for _ in range(10))}]" for i in range(1, 9)]
    bomb.write_text("- " + "\n  ".join(lines) + "\n")
    assert len(bomb.read_bytes()) < 1000
    with pytest.raises(CatalogError, match="expands to more than"):
        validated_rows(bomb, "models")


@pytest.mark.slow
def test_wheel_ships_catalogs(tmp_path: Path) -> None:
    """Build the wheel, install it in a fresh venv, run `gpusize gpus` outside the checkout."""
    dist = tmp_path / "dist"
    subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(dist), str(ROOT)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    wheel = next(dist.glob("gpusize-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert {
        "gpusize/data/gpus.validated.json",
        "gpusize/data/models.validated.json",
        "gpusize/data/models.specs.json",
    } <= set(names)
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    py = env_dir / "bin" / "python"
    # The runtime dependencies come from this test environment (no network needed); gpusize
    # itself only from the wheel.
    site = subprocess.run(
        [str(py), "-c", "import site; print(site.getsitepackages()[0])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    deps = [p for p in sys.path if p.endswith("site-packages")]
    Path(site, "_test_deps.pth").write_text("\n".join(deps) + "\n")
    subprocess.run(
        [str(py), "-m", "pip", "install", "--no-deps", "-q", str(wheel)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    code = textwrap.dedent("""
        import gpusize.sources.catalog as c, sys
        assert c.__file__.startswith(sys.prefix), c.__file__
        print(len(c.load_gpus()), len(c.load_models()))
    """)
    out = subprocess.run([str(py), "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    cli = subprocess.run(
        [str(env_dir / "bin" / "gpusize"), "gpus", "--json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert cli.returncode == 0 and '"H100-SXM"' in cli.stdout


def test_merging_user_catalogs_is_linear() -> None:
    """Merging looks each entry's names up a bounded number of times (it was quadratic: 4,000 user
    GPUs took 9.5 s, 20,000 over two minutes)."""
    calls = 0

    def keys(entry: tuple[str, ...]) -> set[str]:
        nonlocal calls
        calls += 1
        return set(entry)

    entries = [(f"g{i}", f"alias{i}") for i in range(5000)] + [("g1", "new")]
    merged = catalog.merge_by_name(entries, keys)
    assert len(merged) == 5000 and ("g1", "new") in merged and ("g1", "alias1") not in merged
    assert calls <= 3 * len(entries)
