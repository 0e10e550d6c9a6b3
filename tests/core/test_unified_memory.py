"""Unified-memory devices (Apple M-series, NVIDIA DGX Spark / GB10, AMD Strix Halo): the names people
type, the GPU's default share of the RAM and its documented override, the engines that run there
(refused with exit 2 otherwise, naming what does) and one device (tensor parallel 1)."""

from __future__ import annotations

import json
from dataclasses import asdict, fields
from pathlib import Path

import pytest
import yaml

from gpusize.core.engines import engine
from gpusize.core.gpu import GpuSpec
from gpusize.sources.catalog import find_gpu, load_gpus
from tests.helpers import CliResult, catalog_spec, run_in_process, workload


def run(*args: str) -> CliResult:
    return run_in_process(*args, env={"NO_COLOR": "1", "COLUMNS": "160"})


@pytest.mark.parametrize(
    ("typed", "name"),
    [
        ("M3-Ultra", "M3-Ultra-512GB"),
        ("Apple M4 Max", "M4-Max-128GB"),
        ("apple_m2_ultra", "M2-Ultra-192GB"),
        ("M3-Ultra-256GB", "M3-Ultra-256GB"),
        ("DGX-Spark", "DGX-Spark"),
        ("GB10", "DGX-Spark"),
        ("Strix-Halo", "Strix-Halo-128GB"),
        ("Ryzen AI Max+ 395", "Strix-Halo-128GB"),
    ],
)
def test_the_names_people_type(typed: str, name: str) -> None:
    gpu = find_gpu(typed)
    assert gpu.name == name and gpu.unified_memory and gpu.one_device and gpu.interconnect == "none"


def test_apple_default_share_follows_the_macos_rule() -> None:
    apple = [g for g in load_gpus() if g.vendor == "Apple"]
    assert len(apple) >= 10
    for gpu in apple:
        ram_mib = int(gpu.marketing_memory_gb) * 1024
        share = (2, 3) if gpu.marketing_memory_gb <= 36 else (3, 4)
        assert gpu.memory_mib == ram_mib * share[0] // share[1], gpu.name
        assert gpu.memory_max_mib == ram_mib - 8 * 1024 and "iogpu.wired_limit_mb" in (
            gpu.memory_override or ""
        )
        assert gpu.engines == ("llamacpp", "ollama") and gpu.visible_bytes == gpu.memory_mib << 20
        assert "apple.com/newsroom" in gpu.source


def test_fit_on_an_apple_mac_answers_with_llama_cpp_and_the_override() -> None:
    r = run("fit", "Qwen3-32B", "--gpu", "M3-Ultra")
    assert r.code == 0, r.stderr
    assert "1x Apple M3 Ultra 512GB (llama.cpp" in r.stdout
    assert "iogpu.wired_limit_mb" in r.stdout and "384.0 GiB of the 512 GB" in r.stdout
    assert "NVLink" not in r.stdout and "PCIe" not in r.stdout and "CUDA" not in r.stdout


@pytest.mark.parametrize(
    ("args", "runs"),
    [
        (("fit", "Qwen3-8B", "--gpu", "M3-Ultra", "--engine", "vllm"), "--engine llamacpp"),
        (("serve", "Qwen3-8B", "--gpu", "M4-Max", "--users", "4", "--engine", "sglang"), "--engine llamacpp"),
        (
            ("fit", "Qwen3-8B", "--gpu", "Strix-Halo", "--engine", "sglang"),
            "--engine vllm or --engine llamacpp",
        ),
        (("which", "--gpu", "M2-Ultra"), "--engine llamacpp"),
    ],
)
def test_an_engine_that_does_not_run_there_is_refused_naming_what_does(
    args: tuple[str, ...], runs: str
) -> None:
    r = run(*args)
    assert r.code == 2 and not r.stdout
    assert r.stderr.count("\n") == 1 and "does not run on" in r.stderr and runs in r.stderr


def test_vllm_runs_on_dgx_spark_with_the_start_up_caveat() -> None:
    r = run("fit", "Qwen3-32B", "--gpu", "DGX-Spark", "--json")
    assert r.code == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["plan"]["tensor_parallel"] == 1
    assert any("0.85" in n for n in data["assumptions"]["notes"])


@pytest.mark.parametrize("name", ["DGX-Spark", "M3-Ultra", "Strix-Halo"])
def test_one_device_no_tensor_parallel(name: str) -> None:
    gpu = find_gpu(name)
    engine_name = gpu.engines[0] if gpu.engines else "vllm"
    spec = catalog_spec("Qwen3-8B")
    work = workload(spec, 4096, 1, "bf16", engine_name=engine_name)
    c = engine(engine_name).evaluate(spec, gpu, 2, work)
    assert not c.fits and "one device" in (c.reason or "")
    r = run("fit", "Qwen3-8B", "--gpu", name, "--gpus", "2")
    assert r.code == 1 and "tensor parallel size 1 only" in r.stdout


def test_strix_halo_states_its_default_gtt_share_and_the_override() -> None:
    r = run("fit", "Qwen3-8B", "--gpu", "Strix-Halo")
    assert r.code == 0, r.stderr
    assert "ttm.pages_limit" in r.stdout and "62.5 GiB of the 128 GB" in r.stdout
    assert "CUDA" not in r.stdout


def _entry(**changes: object) -> dict[str, object]:
    skip = {f.name for f in fields(GpuSpec) if not f.metadata.get("catalog", True)}
    base = {k: v for k, v in asdict(find_gpu("M4-Max")).items() if k not in skip}
    base.update({"name": "MyMac", "full_name": "My Mac", "aliases": [], "engines": ["llamacpp"], **changes})
    return base


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"engines": ["mlx"]}, "engines: 'mlx' is not an engine"),
        ({"unified_memory": False}, "memory_max_mib: only for a unified-memory device"),
        ({"memory_max_mib": 1024}, "memory_max_mib: below memory_mib"),
    ],
)
def test_catalog_files_are_checked(tmp_path: Path, changes: dict[str, object], message: str) -> None:
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump([_entry(**changes)]))
    r = run("fit", "Qwen3-8B", "--gpu", "MyMac", "--gpus-file", str(path))
    assert r.code == 2 and message in r.stderr, r.stderr


@pytest.mark.parametrize(
    ("typed", "mib"), [("Strix-Halo-raised", 98304), ("M3-Ultra-raised", 512 * 1024 - 8192)]
)
def test_the_raised_share_is_a_device_of_its_own(typed: str, mib: int) -> None:
    gpu = find_gpu(typed)
    assert gpu.memory_mib == mib and gpu.name.endswith("-raised") and gpu.unified_memory
    assert "planned with the GPU's share raised" in (gpu.memory_note or "")
    assert "--gpu Strix-Halo-128GB-raised" in (find_gpu("Strix-Halo").memory_note or "")
    with pytest.raises(LookupError):
        find_gpu("DGX-Spark-raised")  # nothing to raise: the GPU shares the whole pool already


def test_a_model_that_needs_the_raised_share_fits_only_with_it() -> None:
    args = ("fit", "Llama-3.3-70B", "--engine", "llamacpp", "--dtype", "int4", "--ctx", "128k")
    assert run(*args, "--gpu", "Strix-Halo").code == 1
    assert run(*args, "--gpu", "Strix-Halo-raised").code == 0
