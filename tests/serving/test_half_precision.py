"""GPUs without bf16 (compute capability below 8.0, the T4): vLLM refuses a bf16 model there ("Bfloat16
is only supported on GPUs with compute capability of at least 8.0 ... --dtype=half"), so the plan is
sized in fp16 and the printed command carries --dtype half."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from gpusize.core.parse import parse_config
from gpusize.core.workload import Workload
from gpusize.serving.launch import half_precision, sglang_command, vllm_command
from gpusize.sources.catalog import find_gpu, find_model
from tests.helpers import workload

ENV = {**os.environ, "NO_COLOR": "1", "COLUMNS": "160"}
SPEC = parse_config(find_model("Qwen3-8B").config)


def _work(dtype: str = "auto") -> Workload:
    return workload(SPEC, 8192, dtype=dtype)


def test_t4_runs_bf16_models_in_fp16_with_the_same_bytes() -> None:
    t4, l4 = find_gpu("T4"), find_gpu("L4")
    work = _work()
    assert work.weight_dtype == "bf16" and work.kv_cache_dtype == "bf16"
    half = half_precision(work, t4)
    assert half.weight_dtype == "fp16" and half.kv_cache_dtype == "fp16"
    assert half.kv_bytes == work.kv_bytes and half.weights.linear_bytes == work.weights.linear_bytes
    assert half_precision(work, l4) is work


def test_the_printed_command_carries_dtype_half_on_a_t4_only() -> None:
    t4, l4 = find_gpu("T4"), find_gpu("L4")
    work = _work()
    t4_cmd = vllm_command("Qwen/Qwen3-8B", None, 1, half_precision(work, t4), 0.9, SPEC, t4).command
    assert t4_cmd is not None and t4_cmd.endswith("--dtype half")
    l4_cmd = vllm_command("Qwen/Qwen3-8B", None, 1, work, 0.9, SPEC, l4).command
    assert l4_cmd is not None and "--dtype" not in l4_cmd
    sglang = sglang_command("Qwen/Qwen3-8B", None, 1, half_precision(work, t4), 0.8, SPEC, t4).command
    assert sglang is not None and "--dtype half" in sglang


def test_forced_bf16_and_fp8_become_half_on_a_t4() -> None:
    t4 = find_gpu("T4")
    forced = vllm_command("m", None, 1, half_precision(_work("bf16"), t4), 0.9, SPEC, t4).command
    assert forced is not None and forced.endswith("--dtype float16") and "bfloat16" not in forced
    fp8 = vllm_command("m", None, 1, half_precision(_work("fp8"), t4), 0.9, SPEC, t4).command
    assert fp8 is not None and "--quantization fp8 --dtype half" in fp8
    fp32 = vllm_command("m", None, 1, half_precision(_work("fp32"), t4), 0.9, SPEC, t4).command
    assert fp32 is not None and "--dtype float32" in fp32 and "half" not in fp32


def _serve(*extra: str) -> dict[str, object]:
    out = subprocess.run(
        [sys.executable, "-m", "gpusize", "serve", "Qwen3-8B", "--gpu", "T4", "--gpus", "2", "--users", "4"]
        + ["--ctx", "8k", "--json", *extra],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    data: dict[str, object] = json.loads(out.stdout)
    return data


def test_serve_on_t4_sizes_fp16_and_prints_dtype_half() -> None:
    auto, fp16 = _serve(), _serve("--dtype", "fp16")
    work = auto["workload"]
    assert isinstance(work, dict) and work["weight_dtype"] == "fp16" and work["kv_cache_dtype"] == "fp16"
    assert auto["layouts"] == fp16["layouts"]  # sized exactly as an explicit fp16 run
    assert "--dtype half" in json.dumps(auto["launch"])
