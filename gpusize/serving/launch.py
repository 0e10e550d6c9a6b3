"""Launch commands for a plan (pure): the engine flags that reproduce what gpusize sized.

A command carries every setting the plan depends on (tensor parallel size, context, memory budget,
weight and KV dtypes, quantization, revision, scheduler limits); where the engine cannot express the
sized plan (int4 weights from a 16-bit checkpoint: engines do not quantize to int4 while loading),
there is no command but a note saying what to use instead.

Every value is shell-quoted (`shlex.quote`): a model path or Hub id comes from the user, a folder
name or a user catalog and may hold `;`, `$(...)`, backticks, spaces or newlines; pasted into a
shell, the printed command must run the engine and nothing else.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from gpusize.core.workload import Workload

__all__ = ["LaunchCommand", "llamacpp_command", "sglang_command", "vllm_command"]

#: --dtype values the engines take for a weight dtype the user forced.
_DTYPE_FLAG = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}


@dataclass(frozen=True)
class LaunchCommand:
    """A command line that reproduces the plan, or None with a note saying what cannot be expressed."""

    command: str | None
    note: str | None = None


def _join(words: list[str]) -> str:
    return " ".join(shlex.quote(word) for word in words)


def _weights_flags(work: Workload, engine: str) -> tuple[list[str], str | None]:
    """Flags for the weight format, or a note when the engine cannot load the model that way."""
    dtype = work.requested_dtype
    if dtype == "auto":
        return [], None
    if dtype in _DTYPE_FLAG:
        return ["--dtype", _DTYPE_FLAG[dtype]], None
    if dtype == "fp8":
        return ["--quantization", "fp8"], None
    return [], (
        f"sized with {dtype} weights: {engine} does not quantize a 16-bit checkpoint to {dtype} while "
        f"loading; serve a pre-quantized {dtype} checkpoint of this model (GPTQ/AWQ or "
        f"compressed-tensors) with the same flags"
    )


def vllm_command(
    model: str, revision: str | None, tp: int, work: Workload, utilization: float
) -> LaunchCommand:
    flags, note = _weights_flags(work, "vLLM")
    if note:
        return LaunchCommand(None, note)
    words = ["vllm", "serve", model]
    if revision:
        words += ["--revision", revision]
    words += [
        "--tensor-parallel-size",
        str(tp),
        "--max-model-len",
        str(work.context_tokens),
        "--gpu-memory-utilization",
        str(utilization),
    ]
    words += flags
    if work.kv_cache_dtype == "fp8":
        words += ["--kv-cache-dtype", "fp8"]
    if work.engine.max_num_seqs:
        words += ["--max-num-seqs", str(work.engine.max_num_seqs)]
    if work.engine.max_num_batched_tokens:
        words += ["--max-num-batched-tokens", str(work.engine.max_num_batched_tokens)]
    return LaunchCommand(_join(words))


def sglang_command(
    model: str, revision: str | None, tp: int, work: Workload, mem_fraction: float
) -> LaunchCommand:
    flags, note = _weights_flags(work, "SGLang")
    if note:
        return LaunchCommand(None, note)
    words = ["python", "-m", "sglang.launch_server", "--model-path", model]
    if revision:
        words += ["--revision", revision]
    words += [
        "--tp",
        str(tp),
        "--context-length",
        str(work.context_tokens),
        "--mem-fraction-static",
        str(mem_fraction),
    ]
    words += flags
    if work.kv_cache_dtype == "fp8":
        words += ["--kv-cache-dtype", "fp8_e4m3"]
    return LaunchCommand(_join(words))


def llamacpp_command(
    model_file: str, work: Workload, gpu_layers: int, parallel: int = 1, gpus: int = 1
) -> LaunchCommand:
    words = [
        "llama-server",
        "-m",
        model_file,
        "-c",
        str(work.context_tokens * parallel),
        "-np",
        str(parallel),
        "-ngl",
        str(gpu_layers),
    ]
    if gpus > 1 or work.engine.split_mode:
        words += ["-sm", work.engine.split_mode or "layer"]
    if work.engine.flash_attn:
        words += ["-fa", "on"]
    if work.kv_cache_dtype == "fp8":
        words += ["--cache-type-k", "q8_0", "--cache-type-v", "q8_0"]
    return LaunchCommand(_join(words))
