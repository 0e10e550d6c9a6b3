"""Launch commands for a plan (pure): the engine flags that reproduce what gpusize sized.

A command carries every setting the plan depends on (tensor parallel size, context, memory budget,
weight and KV dtypes, quantization, revision, scheduler limits); where the engine cannot express the
sized plan (int4 weights from a 16-bit checkpoint: engines do not quantize to int4 while loading),
there is no command but a note saying what to use instead.

On a GPU without bf16 (compute capability below 8.0: T4, V100) vLLM refuses a bf16 model and asks for
`--dtype half`; the plan is then sized in fp16 (`half_precision`: the same 2 bytes per value, labelled
as what runs) and the command carries the flag.

Every value is shell-quoted (`shlex.quote`): a model path or Hub id comes from the user, a folder
name or a user catalog and may hold `;`, `$(...)`, backticks, spaces or newlines; pasted into a
shell, the printed command must run the engine and nothing else.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable
from dataclasses import dataclass, replace

from gpusize.core.gpu import GpuSpec
from gpusize.core.settings import launch_flag
from gpusize.core.spec import ModelSpec
from gpusize.core.workload import Workload

__all__ = [
    "SERVER_COMMANDS",
    "LaunchCommand",
    "half_precision",
    "llamacpp_command",
    "sglang_command",
    "vllm_command",
]

#: --dtype values the engines take for a weight dtype the user forced.
_DTYPE_FLAG = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}


@dataclass(frozen=True)
class LaunchCommand:
    """A command line that reproduces the plan, or None with a note saying what cannot be expressed;
    `engine_version` is the release the plan was sized for (install that one)."""

    command: str | None
    note: str | None = None
    engine_version: str | None = None


def _join(words: list[str]) -> str:
    return " ".join(shlex.quote(word) for word in words)


def half_precision(work: Workload, gpu: GpuSpec) -> Workload:
    """The workload as it runs on `gpu`: on a GPU without bf16, bf16 weights, activations and KV cache
    run in fp16 (vLLM: --dtype half). The bytes are the same; the labels say what runs."""
    if gpu.supports_bf16:
        return work
    weights = work.weights
    if weights.name == "bf16":
        weights = replace(
            weights, name="fp16", note=(weights.note + "; " if weights.note else "") + _HALF_NOTE
        )
    return replace(
        work,
        requested_dtype="fp16" if work.requested_dtype == "bf16" else work.requested_dtype,
        weights=weights,
        kv_cache_dtype="fp16" if work.kv_cache_dtype == "bf16" else work.kv_cache_dtype,
    )


_HALF_NOTE = "fp16: this GPU has no bf16 (compute capability below 8.0), so vLLM runs it with --dtype half"


def _weights_flags(work: Workload, engine: str, gpu: GpuSpec | None) -> tuple[list[str], str | None]:
    """Flags for the weight format, or a note when the engine cannot load the model that way."""
    dtype = work.requested_dtype
    # A 16-bit activation dtype the engine would choose as bf16 must be forced to half on such GPUs.
    half = gpu is not None and not gpu.supports_bf16 and work.weights.other_bytes == 2
    if dtype == "auto":
        return (["--dtype", "half"] if half else []), None
    if dtype in _DTYPE_FLAG:
        return ["--dtype", "half" if half and dtype == "bf16" else _DTYPE_FLAG[dtype]], None
    if dtype == "fp8":
        return ["--quantization", "fp8", *(["--dtype", "half"] if half else [])], None
    return [], (
        f"sized with {dtype} weights: {engine} does not quantize a 16-bit checkpoint to {dtype} while "
        f"loading; serve a pre-quantized {dtype} checkpoint of this model (GPTQ/AWQ or "
        f"compressed-tensors) with the same flags"
    )


def _settings_words(work: Workload) -> list[str]:
    """The engine settings the user gave that its command line takes as given (the declaration's
    `launch` flag): a switch alone, a value after its flag."""
    words: list[str] = []
    for name in work.engine.given():
        flag, value = launch_flag(name), getattr(work.engine, name)
        if flag is None:
            continue
        words += [flag] if value is True else [flag, str(value)]
    return words


def _rope_override(spec: ModelSpec) -> dict[str, object] | None:
    """The config override for a rope scaling the user asked for (--rope-scaling), in the form the
    Qwen and vLLM docs give for YaRN, with max_position_embeddings raised to match (vLLM 0.30+ no
    longer derives the maximum from rope_scaling); None when the config's own scaling is used."""
    if not spec.rope_overridden or spec.rope_scaling is None:
        return None
    kind, factor, original = spec.rope_scaling
    return {
        "rope_scaling": {"rope_type": kind, "factor": factor, "original_max_position_embeddings": original},
        "max_position_embeddings": int(original * factor),
    }


def vllm_command(
    model: str,
    revision: str | None,
    tp: int,
    work: Workload,
    utilization: float,
    spec: ModelSpec,
    gpu: GpuSpec | None = None,
) -> LaunchCommand:
    flags, note = _weights_flags(work, "vLLM", gpu)
    if note:
        return LaunchCommand(None, note)
    # The FlashInfer sampler is an environment switch, not a flag.
    env = ["VLLM_USE_FLASHINFER_SAMPLER=1"] if work.engine.flashinfer_sampler else []
    words = [*env, "vllm", "serve", model]
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
    words += _settings_words(work)
    override = _rope_override(spec)
    if override:
        words += ["--hf-overrides", json.dumps(override, separators=(",", ":"))]
    return LaunchCommand(_join(words), None, work.engine_version)


def sglang_command(
    model: str,
    revision: str | None,
    tp: int,
    work: Workload,
    mem_fraction: float,
    spec: ModelSpec,
    gpu: GpuSpec | None = None,
) -> LaunchCommand:
    flags, note = _weights_flags(work, "SGLang", gpu)
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
    words += _settings_words(work)
    override = _rope_override(spec)
    if override:
        words += ["--json-model-override-args", json.dumps(override, separators=(",", ":"))]
    return LaunchCommand(_join(words), None, work.engine_version)


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


#: The launch line of each engine that serves tensor-parallel replicas, by engine name: (model, revision,
#: tensor parallel size, workload, the engine's budget fraction, spec, GPU) -> command.
SERVER_COMMANDS: dict[str, Callable[..., LaunchCommand]] = {"vllm": vllm_command, "sglang": sglang_command}
