"""AMD answers in AMD terms: Infinity Fabric (xGMI), HIP graphs and context, ROCm-visible memory, amd-smi,
a dated price and a stated caveat that its speed figures are uncalibrated; the words come from the
GPU (GpuSpec.terms), not from tests on its name."""

from __future__ import annotations

import re

import pytest

from gpusize.core.gpu import VENDOR_TERMS
from gpusize.sources.catalog import find_gpu
from tests.helpers import CliResult, run_in_process


def run(*args: str) -> CliResult:
    return run_in_process(*args, env={"NO_COLOR": "1", "COLUMNS": "200"})


AMD_COMMANDS = [
    ("fit", "Qwen3-32B", "--gpu", "MI300X"),
    ("fit", "Llama-3.3-70B", "--gpu", "MI300X", "--gpus", "2"),
    ("fit", "Qwen3-32B", "--gpu", "MI325X", "--engine", "sglang"),
    ("fit", "Qwen3-8B", "--gpu", "MI300X", "--engine", "transformers"),
    ("serve", "Qwen3-32B", "--gpu", "MI300X", "--gpus", "8", "--users", "64"),
    ("quote", "Qwen3-32B", "--gpu", "MI300X", "--gpu", "MI355X", "--users", "64"),
    ("curve", "Qwen3-32B", "--gpu", "MI300X"),
    ("train", "Qwen3-8B", "--method", "lora", "--gpu", "MI300X"),
]


@pytest.mark.parametrize("args", AMD_COMMANDS, ids=lambda a: " ".join(a))
def test_amd_answers_name_no_nvidia_link_or_runtime(args: tuple[str, ...]) -> None:
    r = run(*args)
    assert r.code in (0, 1), r.stderr
    text = r.stdout + r.stderr
    assert not re.search("nvlink", text, re.IGNORECASE), text
    assert "CUDA" not in text and "nvidia-smi" not in text, text


def test_amd_answers_say_infinity_fabric_hip_graphs_and_the_speed_caveat() -> None:
    fit = run("fit", "Qwen3-32B", "--gpu", "MI300X").stdout
    assert "HIP graphs inside the budget" in fit and "HIP context" in fit
    serve = run("serve", "Qwen3-32B", "--gpu", "MI300X", "--gpus", "8", "--users", "64").stdout
    assert "Infinity Fabric (xGMI)" in serve and "HIP_VISIBLE_DEVICES" in serve
    assert "ROCm's kernel floors" in " ".join(serve.split())
    quote = " ".join(run("quote", "Llama-3.3-70B", "--gpu", "MI300X", "--users", "64").stdout.split())
    assert "Infinity Fabric (xGMI)" in quote and "fitted on MI300X records" in quote and "2026-05-18" in quote


def test_nvidia_answers_keep_their_words() -> None:
    fit = run("fit", "Qwen3-32B", "--gpu", "H100").stdout
    assert "CUDA graphs inside the budget" in fit and "CUDA context" in fit
    serve = run("serve", "Qwen3-32B", "--gpu", "H100", "--gpus", "8", "--users", "64").stdout
    assert "uncalibrated" not in serve and "NVLink" in serve


def test_terms_are_a_member_of_the_gpu() -> None:
    assert find_gpu("MI300X").terms == VENDOR_TERMS["AMD"]
    assert find_gpu("MI300X").tp_link == "Infinity Fabric (xGMI)"
    assert find_gpu("H100").tp_link == "NVLink" and find_gpu("L40S").tp_link == "PCIe"
    assert find_gpu("MI300X").speed_caveat and find_gpu("H100").speed_caveat is None


def test_amd_prices_are_dated_and_sourced() -> None:
    for name in ("MI300X", "MI325X"):
        gpu = find_gpu(name)
        assert gpu.price_usd_per_hour and gpu.price_date == "2026-05-18"
        assert "cliffcenter.com" in (gpu.price_source or "")
