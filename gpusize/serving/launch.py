"""Launch commands for a plan (pure): the engine flags that reproduce what gpusize sized.

A command carries every setting the plan depends on (tensor parallel size, context, memory budget,
weight and KV dtypes, quantization, revision, scheduler limits); where the engine cannot express the
sized plan (int4 or int8 weights from a 16-bit checkpoint other than bitsandbytes' in-flight 4-bit;
llama.cpp given anything but a GGUF file), there is no command but a note saying what to use instead.
Every flag printed exists, with the value printed, in the release the command names: checked against
the releases' own argument definitions (tests/data/engine_flags.yaml, tests/serving/test_launch_flags.py).

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
from dataclasses import replace

from gpusize.core.engines import engine
from gpusize.core.engines.llamacpp import BACKENDS, cache_type, flash_attention
from gpusize.core.gpu import GpuSpec
from gpusize.core.releases import Version, parse_version
from gpusize.core.settings import launch_env, launch_flag, launch_words, setting_of, taken_by
from gpusize.core.spec import ModelSpec
from gpusize.core.workload import Workload
from gpusize.dataclass import dataclass

__all__ = [
    "SERVER_COMMANDS",
    "LaunchCommand",
    "half_precision",
    "llamacpp_command",
    "ollama_command",
    "sglang_command",
    "trtllm_command",
    "trtllm_options_yaml",
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


#: The first SGLang release whose --kv-cache-dtype takes fp8_e4m3 (sgl-project/sglang#2786, merged
#: 2025-01-08): first in the 0.4.1.post6 wheel's server_args.py choices (absent in 0.4.1.post5; read
#: with bench/release_sources.py). Before it the only fp8 cache is fp8_e5m2, one byte per value as well.
SGLANG_FP8_E4M3_KV_SINCE = parse_version("0.4.1.post6")

#: Flags that make each engine quantize a 16-bit checkpoint to 4 bits with bitsandbytes while loading:
#: vLLM sets load_format itself for --quantization bitsandbytes from 0.8.2 (engine/arg_utils.py
#: create_load_config; before it EngineArgs refuses "BitsAndBytes quantization and QLoRA adapter only
#: support 'bitsandbytes' load format" unless --load-format bitsandbytes is given too, read in the
#: 0.7.0-0.8.1 wheels); SGLang picks its BitsAndBytesModelLoader from --load-format only
#: (model_loader/loader.py get_model_loader).
VLLM_BNB_LOAD_FORMAT_IMPLIED = Version((0, 8, 2, 0), 0, "0.8.2")
_BITSANDBYTES_FLAGS = {
    "vLLM": ["--quantization", "bitsandbytes"],
    "SGLang": ["--quantization", "bitsandbytes", "--load-format", "bitsandbytes"],
}


def _weights_flags(work: Workload, engine: str, gpu: GpuSpec | None) -> tuple[list[str], str | None]:
    """Flags for the weight format, or a note when the engine cannot load the model that way."""
    dtype = work.requested_dtype
    # A 16-bit activation dtype the engine would choose as bf16 must be forced to half on such GPUs.
    half = gpu is not None and not gpu.supports_bf16 and work.weights.other_bytes == 2
    half_flags = ["--dtype", "half"] if half else []
    if dtype == "auto":
        return half_flags, None
    if dtype in _DTYPE_FLAG:
        return ["--dtype", "half" if half and dtype == "bf16" else _DTYPE_FLAG[dtype]], None
    if dtype == "fp8":
        return ["--quantization", "fp8", *half_flags], None
    if dtype == "int4" and work.load_quantization == "bitsandbytes":
        flags = _BITSANDBYTES_FLAGS[engine]
        if engine == "vLLM" and work.release.version < VLLM_BNB_LOAD_FORMAT_IMPLIED:
            flags = _BITSANDBYTES_FLAGS["SGLang"]  # both flags, as SGLang always needs
        return [*flags, *half_flags], None
    return [], (
        f"sized with {dtype} weights: {engine} does not quantize a 16-bit checkpoint to {dtype} while "
        f"loading; serve a pre-quantized {dtype} checkpoint of this model (GPTQ/AWQ or "
        f"compressed-tensors) with the same flags, or --quantization bitsandbytes for 4-bit while loading"
    )


def _settings_words(work: Workload) -> list[str]:
    """The engine settings the user gave that its command line takes as given (the declaration's
    `launch` flag): a switch alone, a value after its flag."""
    words: list[str] = []
    for name in work.engine.given():
        flag = launch_flag(name, work.engine.name, str(work.release.version))
        value = getattr(work.engine, name)
        if flag is None or not taken_by(name, work.release.version):
            continue
        if value is False:  # a switch turned off: its --no- form where the engine has one
            off = setting_of(name).launch_off
            words += [off] if off else []
            continue
        words += [flag] if value is True else [flag, *launch_words(name, value)]
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
    utilization: float | None,
    spec: ModelSpec,
    gpu: GpuSpec | None = None,
) -> LaunchCommand:
    flags, note = _weights_flags(work, "vLLM", gpu)
    if note:
        return LaunchCommand(None, note)
    # The FlashInfer sampler is an environment switch, not a flag.
    env = ["VLLM_USE_FLASHINFER_SAMPLER=1"] if work.engine.flashinfer_sampler else []
    words = [*env, *launch_env(work.engine, work.release.version), "vllm", "serve", model]
    if revision:
        words += ["--revision", revision]
    # the plan's tp counts the server's GPUs; under --data-parallel-size vLLM's own TP is each rank's
    rank = engine(work.engine.name).launch_tp(work, tp)
    words += ["--tensor-parallel-size", str(rank), "--max-model-len", str(work.context_tokens)]
    if utilization is not None:  # None: the engine's own default (EngineModel.budget), not passed
        words += ["--gpu-memory-utilization", str(utilization)]
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
        "--tp-size",
        str(tp),
        "--context-length",
        str(work.context_tokens),
        "--mem-fraction-static",
        str(mem_fraction),
    ]
    words += flags
    words += _sglang_kv_flags(spec, gpu, work)
    words += _settings_words(work)
    override = _rope_override(spec)
    if override:
        words += ["--json-model-override-args", json.dumps(override, separators=(",", ":"))]
    return LaunchCommand(_join(words), None, work.engine_version)


def _sglang_kv_flags(spec: ModelSpec, gpu: GpuSpec | None, work: Workload) -> list[str]:
    """--kv-cache-dtype where SGLang's own `auto` on `gpu` would not run the dtype sized: fp8 unless
    its auto is fp8 there (DeepSeek Sparse Attention on compute capability 10 and above), bf16 where
    it is (`bfloat16`, a choice from 0.5.4; the engine's `model_kv_default` says what auto means)."""
    model = engine(work.engine.name)
    auto = None
    if model.model_kv_default is not None and gpu is not None:
        auto = model.model_kv_default(spec, work.release.version, gpu)
    if work.kv_cache_dtype == auto:
        return []
    if work.kv_cache_dtype == "fp8":
        return ["--kv-cache-dtype", _sglang_fp8_kv(work)]
    if auto == "fp8" and work.kv_cache_dtype == "bf16":
        return ["--kv-cache-dtype", "bfloat16"]
    return []


def _sglang_fp8_kv(work: Workload) -> str:
    """SGLang's name for an fp8 KV cache in the release modelled (fp8_e5m2 before fp8_e4m3 existed)."""
    old = SGLANG_FP8_E4M3_KV_SINCE is not None and work.release.version < SGLANG_FP8_E4M3_KV_SINCE
    return "fp8_e5m2" if work.release.engine and old else "fp8_e4m3"


#: What to do with a model llama-server cannot load: it reads GGUF files only.
_NOT_GGUF = (
    "llama-server loads GGUF files only, and this model is not one: serve a GGUF build of it (a GGUF "
    "repo on the Hub: llama-server -hf ORG/REPO:QUANT) or convert it with llama.cpp's "
    "convert_hf_to_gguf.py (then llama-quantize for Q8_0/Q4_K_M), and size that .gguf file with "
    "gpusize for a command that runs what was sized"
)

#: llama.cpp's --rope-scaling kinds (common/arg.cpp: none, linear, yarn).
_LLAMACPP_ROPE = ("linear", "yarn")


def _llamacpp_rope(spec: ModelSpec | None) -> tuple[list[str], str | None]:
    """The rope flags for a scaling the user asked for, or a note when llama.cpp has no such kind."""
    if spec is None or not spec.rope_overridden or spec.rope_scaling is None:
        return [], None
    kind, factor, original = spec.rope_scaling
    if kind not in _LLAMACPP_ROPE:
        return [], f"llama.cpp has no {kind} rope scaling (--rope-scaling takes linear or yarn)"
    words = ["--rope-scaling", kind, "--rope-scale", f"{factor:g}"]
    return words + (["--yarn-orig-ctx", str(original)] if kind == "yarn" else []), None


def llamacpp_command(
    model: str,
    source: str,
    work: Workload,
    gpu_layers: int,
    parallel: int = 1,
    gpus: int = 1,
    spec: ModelSpec | None = None,
) -> LaunchCommand:
    """llama-server for a GGUF file (`source` "gguf"), or a note saying what to serve instead.
    Flash attention is printed either way (-fa on|off) so what runs is what was sized."""
    if source != "gguf":
        extra = (
            f"; sized with {work.requested_dtype} weights from config arithmetic, which a GGUF file "
            "of that type only approximates"
            if work.requested_dtype != "auto"
            else ""
        )
        return LaunchCommand(None, _NOT_GGUF + extra)
    if work.requested_dtype != "auto":
        return LaunchCommand(
            None,
            f"sized with {work.requested_dtype} weights, but llama-server runs the file's own tensors: "
            f"quantize it with llama-quantize to the type wanted and size that file, or size this "
            "one without --dtype",
        )
    rope, note = _llamacpp_rope(spec)
    if note:
        return LaunchCommand(None, note)
    words = [
        "llama-server",
        "-m",
        model,
        "-c",
        str(work.context_tokens * parallel),
        "-np",
        str(parallel),
        "-ngl",
        str(gpu_layers),
    ]
    if gpus > 1 or work.engine.split_mode:
        words += ["-sm", work.engine.split_mode or "layer"]
    words += ["-fa", "on" if flash_attention(work) else "off"]
    kind = cache_type(work)
    if kind != "f16":
        words += ["--cache-type-k", kind, "--cache-type-v", kind]
    return LaunchCommand(_join(words + rope), _build_note(work.engine.backend))


def _build_note(backend: str | None) -> str | None:
    """The build a --backend plan runs (None when the user left the GPU vendor's own)."""
    if backend is None:
        return None
    build = BACKENDS[backend]
    return f"run it with llama.cpp's {build.label} build ({build.made})"


def ollama_command(
    model: str, revision: str | None, tp: int, work: Workload, budget: float, spec: ModelSpec, gpu: GpuSpec
) -> LaunchCommand:
    """`ollama serve` under the environment that reproduces the sizing (OLLAMA_CONTEXT_LENGTH = num_ctx,
    OLLAMA_NUM_PARALLEL, OLLAMA_FLASH_ATTENTION, OLLAMA_KV_CACHE_TYPE, OLLAMA_GPU_OVERHEAD), shell-quoted;
    the note gives `ollama run <tag>` and the Modelfile PARAMETER lines that pin the same num_ctx
    (and num_gpu) per model. `model` is the Ollama tag."""
    model_of = engine(work.engine.name)
    settings = model_of.effective_settings(spec, gpu, tp, work)
    env = {
        "OLLAMA_CONTEXT_LENGTH": work.context_tokens,
        "OLLAMA_NUM_PARALLEL": settings["OLLAMA_NUM_PARALLEL"],
        "OLLAMA_FLASH_ATTENTION": settings["OLLAMA_FLASH_ATTENTION"],
    }
    if settings["OLLAMA_KV_CACHE_TYPE"] != "f16":
        env["OLLAMA_KV_CACHE_TYPE"] = settings["OLLAMA_KV_CACHE_TYPE"]
    if work.engine.gpu_overhead:
        env["OLLAMA_GPU_OVERHEAD"] = work.engine.gpu_overhead
    words = [f"{key}={value}" for key, value in env.items()] + ["ollama", "serve"]
    params = f"PARAMETER num_ctx {work.context_tokens}"
    if work.engine.num_gpu is not None:
        params += f", PARAMETER num_gpu {work.engine.num_gpu}"
    if model.endswith(".gguf"):
        note = (
            f"then a Modelfile of FROM {model} and {params}: ollama create NAME -f Modelfile, ollama run NAME"
        )
    elif ":" in model and "/" not in model:  # an Ollama tag
        note = f"then: ollama run {shlex.quote(model)} (or a Modelfile FROM {model} with {params})"
    else:
        return LaunchCommand(
            None,
            f"{model} has no Ollama tag in gpusize's table (data/ollama_tags.yaml): size its tag "
            "(e.g. qwen3:32b) or a .gguf file; ollama also pulls hf.co/ORG/REPO-GGUF:TYPE",
            model_of.version,
        )
    return LaunchCommand(_join(words), note, model_of.version)


#: TensorRT-LLM's --extra_llm_api_options file the printed command names; its content (the LLM API
#: settings trtllm-serve has no flag for) is the command's note, one line of YAML.
TRTLLM_OPTIONS_FILE = "extra-llm-api-options.yaml"
#: The LLM API dtype names (tensorrt_llm/llmapi/llm_args.py BaseLlmArgs.dtype) of the forced dtypes.
_TRTLLM_DTYPE = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}


def _trtllm_options(work: Workload, revision: str | None) -> dict[str, object]:
    """The LLM API arguments the plan depends on that trtllm-serve takes only from the YAML file:
    dtype, revision, enable_attention_dp, kv_cache_config.dtype (fp8) and .tokens_per_block."""
    options: dict[str, object] = {}
    dtype = _TRTLLM_DTYPE.get(work.requested_dtype)
    if dtype:  # every GPU TensorRT-LLM runs on (Ampere and newer) has bf16: no --dtype half case
        options["dtype"] = dtype
    if revision:
        options["revision"] = revision
    if work.engine.enable_attention_dp:
        options["enable_attention_dp"] = True
    kv: dict[str, object] = {}
    if work.kv_cache_dtype == "fp8":
        kv["dtype"] = "fp8"
    if work.engine.tokens_per_block:
        kv["tokens_per_block"] = work.engine.tokens_per_block
    if kv:
        options["kv_cache_config"] = kv
    return options


def trtllm_options_yaml(options: dict[str, object]) -> str:
    """`options` as one line of YAML flow style (valid file content): strings JSON-quoted."""
    items = []
    for key, value in options.items():
        shown = trtllm_options_yaml(value) if isinstance(value, dict) else json.dumps(value)
        items.append(f"{key}: {shown}")
    return "{" + ", ".join(items) + "}"


def trtllm_command(
    model: str,
    revision: str | None,
    tp: int,
    work: Workload,
    fraction: float,
    spec: ModelSpec,
    gpu: GpuSpec | None = None,
) -> LaunchCommand:
    """trtllm-serve (PyTorch backend) with the plan's parallelism, max_seq_len and KV fraction; the
    settings without a flag go into the --extra_llm_api_options file, whose YAML is the note.
    TensorRT-LLM does not quantize a 16-bit checkpoint while loading: a ModelOpt checkpoint instead."""
    if work.requested_dtype not in ("auto", *_TRTLLM_DTYPE):
        return LaunchCommand(
            None,
            f"sized with {work.requested_dtype} weights: TensorRT-LLM does not quantize a 16-bit checkpoint "
            f"while loading; serve a pre-quantized {work.requested_dtype} checkpoint (NVIDIA ModelOpt, e.g. "
            "an nvidia/*-FP8 repo) with the same flags",
        )
    if spec.rope_overridden:
        return LaunchCommand(
            None,
            "a rope scaling override is not expressed for trtllm-serve: edit the checkpoint's config.json",
        )
    words = ["trtllm-serve", model, "--backend", "pytorch", "--tp_size", str(tp)]
    words += ["--max_seq_len", str(work.context_tokens), "--kv_cache_free_gpu_memory_fraction", str(fraction)]
    words += _settings_words(work)
    options = _trtllm_options(work, revision)
    if not options:
        return LaunchCommand(_join(words), None, work.engine_version)
    command = _join([*words, "--extra_llm_api_options", TRTLLM_OPTIONS_FILE])
    yaml = trtllm_options_yaml(options)
    note = f"write {TRTLLM_OPTIONS_FILE} first (settings trtllm-serve has no flag for): {yaml}"
    return LaunchCommand(command, note, work.engine_version)


#: The launch line of each engine that serves tensor-parallel replicas, by engine name: (model, revision,
#: tensor parallel size, workload, the engine's budget fraction, spec, GPU) -> command. Ollama's takes
#: the tag as the model and reads no budget.
SERVER_COMMANDS: dict[str, Callable[..., LaunchCommand]] = {
    "vllm": vllm_command,
    "sglang": sglang_command,
    "ollama": ollama_command,
    "trtllm": trtllm_command,
}
