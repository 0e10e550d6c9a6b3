"""Catalog files: the shipped ones validate; broken ones are rejected with file, entry and field."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import venv
from pathlib import Path

import pytest

from gpusize import catalog
from gpusize.errors import CatalogError, UnknownNameError
from gpusize.model import parse_config

ROOT = Path(__file__).resolve().parent.parent


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
    ("- name: X\n", "[0].source: field required"),
    ("not: a list\n", "expected a list"),
    ("- [unclosed\n", "not valid YAML"),
]


@pytest.mark.parametrize("text, message", BROKEN)
def test_broken_gpu_files(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "my-gpus.yaml"
    path.write_text(text)
    with pytest.raises(CatalogError, match=message.replace("[", r"\[").replace("]", r"\]")):
        catalog.load_gpus(path)


def test_gpu_entry_with_bad_memory_names_file_entry_and_field(tmp_path: Path) -> None:
    good = catalog.load_gpus()[0].model_dump()
    import yaml

    bad = {**good, "name": "Mine", "aliases": [], "memory_mib": 0}
    path = tmp_path / "my-gpus.yaml"
    path.write_text(yaml.safe_dump([good, bad]))
    with pytest.raises(CatalogError, match=r"my-gpus.yaml: \[1\].memory_mib: input should be"):
        catalog.load_gpus(path)


def test_duplicate_names_rejected(tmp_path: Path) -> None:
    good = catalog.load_gpus()[0].model_dump()
    import yaml

    path = tmp_path / "dup.yaml"
    path.write_text(yaml.safe_dump([good, good]))
    with pytest.raises(CatalogError, match="already used"):
        catalog.load_gpus(path)


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
        import gpusize.catalog as c, sys
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


def test_fast_lookup_reads_the_same_entries_as_the_full_parse() -> None:
    """The bundled file's per-entry fast path must agree with parsing the whole file."""
    for entry in catalog.load_models():
        for key in (entry.name, entry.hf_id, *entry.aliases):
            fast = catalog._find_bundled_model(key)
            assert fast == entry, key
