"""Launch commands for a plan (pure): the engine flags that reproduce what gpusize computed.

Every value placed in a command is shell-quoted (`shlex.quote`): a model path or Hub id comes
from the user, a folder name or a user catalog and may hold `;`, `$(...)`, backticks, spaces or
newlines; pasted into a shell, the printed command must run the engine and nothing else.
"""

from __future__ import annotations

import shlex


def _join(words: list[str]) -> str:
    return " ".join(shlex.quote(word) for word in words)


def vllm_command(
    model: str, tp: int, max_model_len: int, utilization: float, kv_dtype: str, weight_dtype: str
) -> str:
    words = [
        "vllm",
        "serve",
        model,
        "--tensor-parallel-size",
        str(tp),
        "--max-model-len",
        str(max_model_len),
        "--gpu-memory-utilization",
        str(utilization),
    ]
    if kv_dtype == "fp8":
        words += ["--kv-cache-dtype", "fp8"]
    if weight_dtype == "fp8":
        words += ["--quantization", "fp8"]
    return _join(words)


def sglang_command(model: str, tp: int, max_model_len: int, mem_fraction: float, kv_dtype: str) -> str:
    words = [
        "python",
        "-m",
        "sglang.launch_server",
        "--model-path",
        model,
        "--tp",
        str(tp),
        "--context-length",
        str(max_model_len),
        "--mem-fraction-static",
        str(mem_fraction),
    ]
    if kv_dtype == "fp8":
        words += ["--kv-cache-dtype", "fp8_e4m3"]
    return _join(words)


def llamacpp_command(model_file: str, context: int, gpu_layers: int, parallel: int = 1) -> str:
    return _join(
        [
            "llama-server",
            "-m",
            model_file,
            "-c",
            str(context * parallel),
            "-np",
            str(parallel),
            "-ngl",
            str(gpu_layers),
        ]
    )
