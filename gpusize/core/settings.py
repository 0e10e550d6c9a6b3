"""Engine settings, each declared once (pure), as vLLM declares its config fields.

An `EngineSettings` field carries a `Setting`: the engine's own flag name, the engines that read it,
the help, and its bounds or choices. Everything else is derived from that declaration: the
command-line options (`cli.options.engine_options`), the range checks (`settings_from`), the flag a
refusal names (`SETTING_FLAGS`), the settings an engine accepts (`settings_of`), the JSON workload
keys (the field names) and the flags a launch command prints (`launch_flag`). A new engine flag is
the field here and its use in the engine.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import Field, dataclass, field, fields
from typing import Any, NamedTuple

from gpusize.core.registry import ENGINE_LABELS, ENGINE_NAMES, EngineName
from gpusize.core.releases import Version, parse_version
from gpusize.errors import InputError

__all__ = [
    "ATTN_IMPLEMENTATIONS",
    "ENGINE_LABELS",
    "ENGINE_NAMES",
    "LORA_DTYPES",
    "SETTING_FLAGS",
    "SPLIT_MODES",
    "TRANSFORMERS_VERSIONS",
    "EngineName",
    "EngineSettings",
    "Setting",
    "declared",
    "launch_env",
    "launch_flag",
    "launch_words",
    "settings_from",
    "setting_of",
    "settings_of",
    "taken_by",
]

#: llama.cpp's ways to spread one model over several GPUs (`-sm`): whole layers per GPU, run one GPU
#: after another for each token (the default), or every matrix split by rows across the GPUs.
SPLIT_MODES = ("layer", "row")
#: transformers attention implementations (`--attn-implementation`).
ATTN_IMPLEMENTATIONS = ("sdpa", "flash_attention_2", "eager")
#: "5": transformers 5.x (and 4.56-4.57): DynamicSlidingWindowLayer, boolean SDPA masks.
#: "4": 4.53-4.55: masks as in 5, but sliding-window layers cache every token (no sliding layer).
TRANSFORMERS_VERSIONS = ("5", "4")
#: vLLM `--lora-dtype` (vllm/config/lora.py LoRADType; auto: the model's dtype).
LORA_DTYPES = ("auto", "float16", "bfloat16")


class Setting(NamedTuple):
    """How one engine setting is taken: `flag` (the engine's own name for it, and gpusize's option),
    the engines that read it (any other refuses it), one line of help, and its bounds: `low`/`high`
    for numbers (an int in [low, high], a float in (low, high] or [low, high] when not `low_open`),
    `choices` for a word; `off`, a count below `low` the engine takes as "off" (SGLang's
    --chunked-prefill-size -1). `launch` is the flag a launch command prints it under when the user gave it
    (None: the command prints it another way: a budget with its effective value, llama-server's own
    short flags, an environment switch). `since`: the first release of the engine that has it.

    A NamedTuple, not a frozen dataclass: it is built on every start and a NamedTuple class is made
    about ten times faster (bench: 0.3 vs 3.4 ms per class under load); it is never serialized."""

    flag: str
    engines: tuple[EngineName, ...]
    help: str
    aliases: tuple[str, ...] = ()
    low: float | None = None
    high: float | None = None
    low_open: bool = True
    choices: tuple[str, ...] = ()
    off: int | None = None
    launch: str | None = None
    #: (engine, first release) where the `launch` flag exists later than the engines' first modelled
    #: release: an older release's command leaves it out.
    launch_since: tuple[tuple[EngineName, str], ...] = ()
    #: The value is several space-separated words, each its own argument (argparse nargs="*").
    many: bool = False
    #: The first release of its engine that takes the flag (None: every release modelled); an older
    #: release refuses it and its launch command leaves it out.
    since: str | None = None
    #: The environment variable a launch command sets before the program when the user gave the
    #: setting (a boolean as 1 / 0), where the engine reads it from the environment, not a flag.
    env: str | None = None


def _setting(default: Any, **declaration: Any) -> Any:
    return field(default=default, metadata={"setting": Setting(**declaration)})


_PAGED: tuple[EngineName, ...] = ("vllm", "sglang")
#: SGLang's speculative decoding flags came with EAGLE (sgl-project/sglang#2150, merged 2025-01-02);
#: 0.4.4 is the first release gpusize models that certainly has them.
_SGLANG_SPECULATIVE = "0.4.4"
#: SGLang's state pool flags came with Qwen3-Next (--max-mamba-cache-size) and sgl-project/sglang#10258
#: (--mamba-ssm-dtype, merged 2025-09-10); 0.5.3 is the first release gpusize models certainly after.
_SGLANG_MAMBA = "0.5.3"


@dataclass(frozen=True, kw_only=True)
class EngineSettings:
    """The engine and the settings passed under its own flag names; None means the engine's default."""

    name: EngineName = _setting(
        "vllm",
        flag="--engine",
        engines=ENGINE_NAMES,
        help="vllm (default), sglang, llamacpp (default for .gguf files), transformers, ollama (default for "
        "Ollama tags), trtllm (TensorRT-LLM's PyTorch backend).",
        choices=ENGINE_NAMES,
    )
    #: The engine release to model (None: the newest gpusize models).
    version: str | None = _setting(
        None,
        flag="--engine-version",
        engines=(*_PAGED, "trtllm"),
        help="Engine release to model (default the newest).",
    )
    gpu_memory_utilization: float | None = _setting(
        None,
        flag="--gpu-memory-utilization",
        engines=("vllm",),
        help="fraction of each GPU the engine may use (default 0.9; 0.92 from 0.20).",
        low=0,
        high=1,
    )
    max_num_seqs: int | None = _setting(
        None,
        flag="--max-num-seqs",
        engines=("vllm",),
        help="most sequences per step.",
        low=1,
        high=1 << 20,
        launch="--max-num-seqs",
    )
    max_num_batched_tokens: int | None = _setting(
        None,
        flag="--max-num-batched-tokens",
        engines=("vllm",),
        help="most tokens per step (chunked prefill size).",
        low=1,
        high=1 << 24,
        launch="--max-num-batched-tokens",
    )
    enforce_eager: bool = _setting(
        False, flag="--enforce-eager", engines=("vllm",), help="no CUDA graphs.", launch="--enforce-eager"
    )
    enable_expert_parallel: bool = _setting(
        False,
        flag="--enable-expert-parallel",
        engines=("vllm",),
        help="whole experts per GPU instead of slicing each by TP.",
        launch="--enable-expert-parallel",
        since="0.8.0",  # the first vLLM wheel whose arg_utils.py declares it
    )
    #: vLLM samples top-k/top-p with FlashInfer (VLLM_USE_FLASHINFER_SAMPLER=1; up to 0.11.0 whenever
    #: FlashInfer is installed, as in the vllm/vllm-openai image) instead of PyTorch.
    flashinfer_sampler: bool = _setting(
        False,
        flag="--flashinfer-sampler",
        engines=("vllm",),
        help="top-k/top-p sampled by FlashInfer (VLLM_USE_FLASHINFER_SAMPLER=1; up to 0.11.0 whenever "
        "FlashInfer is installed, as in the vllm/vllm-openai image): a smaller start-up peak before 0.17.",
    )
    #: vLLM's engine: V1 (True) or V0 (False), VLLM_USE_V1 (vllm/envs.py; default V0 up to 0.7.3, V1
    #: from 0.8.0; V0 removed in 0.11.0). None: the release's default.
    vllm_use_v1: bool | None = _setting(
        None,
        flag="--vllm-use-v1",
        engines=("vllm",),
        help="the V1 engine (VLLM_USE_V1=1, default from 0.8.0) or, with --no-vllm-use-v1, V0 "
        "(VLLM_USE_V1=0, default up to 0.7.3, removed in 0.11.0).",
        env="VLLM_USE_V1",
    )
    #: vLLM and SGLang keep this many GiB of each GPU's weights in pinned CPU memory, read over PCIe
    #: every step (the same rule in both: maybe_offload_to_cpu over the decoder layers).
    cpu_offload_gb: float | None = _setting(
        None,
        flag="--cpu-offload-gb",
        engines=_PAGED,
        help="GiB of weights per GPU kept in CPU memory (whole layers; read over PCIe every step).",
        low=0,
        high=1 << 16,
        launch="--cpu-offload-gb",
    )
    #: LoRA serving (core/engines/vllm/lora.py, core/engines/sglang_lora.py): adapter slots on the GPU.
    enable_lora: bool = _setting(
        False,
        flag="--enable-lora",
        engines=("vllm", "sglang"),
        help="serve LoRA adapters (SGLang before 0.4.10: give --lora-paths).",
        launch="--enable-lora",
        launch_since=(("sglang", "0.4.10"),),
    )
    max_loras: int | None = _setting(
        None,
        flag="--max-loras",
        engines=("vllm",),
        help="LoRA adapters in one batch: GPU slots (default 1).",
        low=1,
        high=4096,
        launch="--max-loras",
    )
    max_lora_rank: int | None = _setting(
        None,
        flag="--max-lora-rank",
        engines=("vllm", "sglang"),
        help="largest LoRA rank served (vLLM default 16; SGLang: the adapters' largest).",
        low=1,
        high=4096,
        launch="--max-lora-rank",
        launch_since=(("sglang", "0.4.10"),),
    )
    max_cpu_loras: int | None = _setting(
        None,
        flag="--max-cpu-loras",
        engines=("vllm",),
        help="LoRA adapters cached in CPU memory (default --max-loras).",
        low=1,
        high=1 << 16,
        launch="--max-cpu-loras",
    )
    lora_dtype: str | None = _setting(
        None,
        flag="--lora-dtype",
        engines=("vllm",),
        help="dtype of the LoRA slots: auto (the model's), float16 or bfloat16.",
        choices=LORA_DTYPES,
        launch="--lora-dtype",
    )
    lora_paths: str | None = _setting(
        None,
        flag="--lora-paths",
        engines=("sglang",),
        help="LoRA adapters loaded at start (NAME=PATH or PATH, space-separated).",
        launch="--lora-paths",
        many=True,
    )
    max_loras_per_batch: int | None = _setting(
        None,
        flag="--max-loras-per-batch",
        engines=("sglang",),
        help="LoRA adapters in one batch: GPU slots (default 8).",
        low=1,
        high=4096,
        launch="--max-loras-per-batch",
    )
    #: vLLM: most items of each modality per prompt, as vLLM takes it (JSON '{"image":0,"video":0}', or
    #: 'image=0,video=0' as older releases wrote it); parsed by `engines.vllm.multimodal`. Every
    #: modality at 0 serves a multimodal checkpoint text-only: no encoder profile.
    limit_mm_per_prompt: str | None = _setting(
        None,
        flag="--limit-mm-per-prompt",
        engines=("vllm",),
        help='items per prompt per modality, e.g. \'{"image":0,"video":0}\' (0 of each: text-only).',
        launch="--limit-mm-per-prompt",
    )
    #: vLLM `--speculative-config` JSON (method, model, num_speculative_tokens, ...), parsed and checked
    #: by core/speculative.py.
    speculative_config: str | None = _setting(
        None,
        flag="--speculative-config",
        engines=("vllm",),
        help='speculative decoding as JSON, e.g. \'{"method":"eagle3","model":"DRAFT",'
        '"num_speculative_tokens":3}\' (eagle, eagle3, draft_model, mtp, ngram).',
        launch="--speculative-config",
        since="0.8.2",  # the first vLLM wheel whose arg_utils.py declares it
    )
    mem_fraction_static: float | None = _setting(
        None,
        flag="--mem-fraction-static",
        engines=("sglang",),
        help="static memory fraction (default from GPU and TP).",
        low=0,
        high=0.999,
    )
    chunked_prefill_size: int | None = _setting(
        None,
        flag="--chunked-prefill-size",
        engines=("sglang",),
        help="tokens per prefill chunk (enters its reserve); -1: no chunking (SGLang's own meaning).",
        low=1,
        high=1 << 24,
        off=-1,
        launch="--chunked-prefill-size",
    )
    max_running_requests: int | None = _setting(
        None,
        flag="--max-running-requests",
        engines=("sglang",),
        help="most requests running at once.",
        low=1,
        high=1 << 20,
        launch="--max-running-requests",
    )
    #: SGLang's state pool of recurrent hybrids (core/engines/sglang_mamba.py).
    max_mamba_cache_size: int | None = _setting(
        None,
        flag="--max-mamba-cache-size",
        engines=("sglang",),
        help="state slots of a recurrent hybrid's state pool (default: 0.9 / 1.9 of the memory left "
        "after the weights).",
        low=1,
        high=1 << 20,
        launch="--max-mamba-cache-size",
        since=_SGLANG_MAMBA,
    )
    mamba_ssm_dtype: str | None = _setting(
        None,
        flag="--mamba-ssm-dtype",
        engines=("sglang",),
        help="dtype of a recurrent hybrid's state (default float32, or the config's mamba_ssm_dtype).",
        choices=("float32", "bfloat16"),
        launch="--mamba-ssm-dtype",
        since=_SGLANG_MAMBA,
    )
    #: SGLang data-parallel attention: attention (and the KV cache) split into dp_size groups of
    #: tp_size // dp_size GPUs, each serving its own requests; the MoE and MLP layers stay on all tp.
    enable_dp_attention: bool = _setting(
        False,
        flag="--enable-dp-attention",
        engines=("sglang",),
        help="data-parallel attention (with --dp-size): each group of TP / DP GPUs attends to its own "
        "requests with its own KV pool; the MoE stays tensor parallel (DeepSeek, MLA models).",
        launch="--enable-dp-attention",
    )
    dp_size: int | None = _setting(
        None,
        flag="--dp-size",
        engines=("sglang",),
        help="data-parallel attention groups (with --enable-dp-attention; must divide the TP size).",
        low=1,
        high=8,
        launch="--dp-size",
    )
    #: SGLang speculative decoding (core/speculative.py): the algorithm, its draft and its tree.
    speculative_algorithm: str | None = _setting(
        None,
        flag="--speculative-algorithm",
        engines=("sglang",),
        help="EAGLE, EAGLE3, NEXTN (the model's MTP layers), STANDALONE (a draft model) or NGRAM.",
        launch="--speculative-algorithm",
        since=_SGLANG_SPECULATIVE,
    )
    speculative_draft_model_path: str | None = _setting(
        None,
        flag="--speculative-draft-model-path",
        engines=("sglang",),
        help="the draft model (a catalog name, Hub id or local folder).",
        launch="--speculative-draft-model-path",
        since=_SGLANG_SPECULATIVE,
    )
    speculative_num_steps: int | None = _setting(
        None,
        flag="--speculative-num-steps",
        engines=("sglang",),
        help="draft steps per decode step.",
        low=1,
        high=64,
        launch="--speculative-num-steps",
        since=_SGLANG_SPECULATIVE,
    )
    speculative_eagle_topk: int | None = _setting(
        None,
        flag="--speculative-eagle-topk",
        engines=("sglang",),
        help="branches kept per draft step.",
        low=1,
        high=64,
        launch="--speculative-eagle-topk",
        since=_SGLANG_SPECULATIVE,
    )
    speculative_num_draft_tokens: int | None = _setting(
        None,
        flag="--speculative-num-draft-tokens",
        engines=("sglang",),
        help="draft tokens verified per step.",
        low=1,
        high=1024,
        launch="--speculative-num-draft-tokens",
        since=_SGLANG_SPECULATIVE,
    )
    n_gpu_layers: int | None = _setting(
        None,
        flag="--n-gpu-layers",
        aliases=("-ngl",),
        engines=("llamacpp",),
        help="layers on the GPU (default all).",
        low=0,
        high=100_000,
    )
    #: llama.cpp flash attention (`-fa on|off`); None: the release's default (auto), see
    #: `engines.llamacpp.flash_attention`.
    flash_attn: bool | None = _setting(
        None,
        flag="--flash-attn",
        engines=("llamacpp", "ollama"),
        help="flash attention on or off (llama.cpp -fa on|off, default auto: on for CUDA; Ollama "
        "OLLAMA_FLASH_ATTENTION, default off but for gpt-oss).",
    )
    #: llama.cpp `--split-mode` (one of SPLIT_MODES); None means its default, layer.
    split_mode: str | None = _setting(
        None,
        flag="--split-mode",
        aliases=("-sm",),
        engines=("llamacpp",),
        help="spread the model over GPUs by layer (default) or row.",
        choices=SPLIT_MODES,
    )
    #: Ollama (core/engines/ollama.py), under its own names: Modelfile num_gpu, OLLAMA_NUM_PARALLEL,
    #: OLLAMA_GPU_OVERHEAD (bytes); the launch lines print them as env vars / PARAMETER lines.
    num_gpu: int | None = _setting(
        None,
        flag="--num-gpu",
        engines=("ollama",),
        help="layers on the GPUs (default as many as fit).",
        low=0,
        high=100_000,
    )
    num_parallel: int | None = _setting(
        None,
        flag="--num-parallel",
        engines=("ollama",),
        help="OLLAMA_NUM_PARALLEL (default --batch).",
        low=1,
        high=1024,
    )
    gpu_overhead: int | None = _setting(
        None,
        flag="--gpu-overhead",
        engines=("ollama",),
        help="OLLAMA_GPU_OVERHEAD: bytes kept free per GPU.",
        low=0,
        high=1 << 40,
    )
    #: transformers: attention implementation (sdpa, flash_attention_2, eager), the release whose
    #: cache and masks are followed ("5", "4"), PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True.
    attn_implementation: str | None = _setting(
        None,
        flag="--attn-implementation",
        engines=("transformers",),
        help="sdpa (default; eager for gpt-oss), flash_attention_2 or eager.",
        choices=ATTN_IMPLEMENTATIONS,
    )
    transformers_version: str | None = _setting(
        None,
        flag="--transformers-version",
        engines=("transformers",),
        help="5 (5.x and 4.56+, default) or 4 (4.53-4.55: sliding layers cache every token).",
        choices=TRANSFORMERS_VERSIONS,
    )
    expandable_segments: bool = _setting(
        False,
        flag="--expandable-segments",
        engines=("transformers",),
        help="PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (less fragmentation).",
    )

    #: TensorRT-LLM (core/engines/trtllm.py), under trtllm-serve's own flag names
    #: (tensorrt_llm/commands/serve.py, the same spellings in every 1.x release).
    kv_cache_free_gpu_memory_fraction: float | None = _setting(
        None,
        flag="--kv_cache_free_gpu_memory_fraction",
        engines=("trtllm",),
        help="fraction of the memory free after the profiling pass that the KV cache takes (default 0.9).",
        low=0,
        high=1,
    )
    max_batch_size: int | None = _setting(
        None,
        flag="--max_batch_size",
        engines=("trtllm",),
        help="most requests scheduled at once (default 2048).",
        low=1,
        high=1 << 20,
        launch="--max_batch_size",
    )
    max_num_tokens: int | None = _setting(
        None,
        flag="--max_num_tokens",
        engines=("trtllm",),
        help="most batched tokens per step, the profiling pass's size (default 8192).",
        low=1,
        high=1 << 24,
        launch="--max_num_tokens",
    )
    pp_size: int | None = _setting(
        None,
        flag="--pp_size",
        engines=("trtllm",),
        help="pipeline stages (must divide --gpus; tp_size = GPUs / pp_size).",
        low=1,
        high=64,
        launch="--pp_size",
    )
    ep_size: int | None = _setting(
        None,
        flag="--ep_size",
        engines=("trtllm",),
        help="expert-parallel ranks of an MoE inside the TP group (must divide tp_size and the experts).",
        low=1,
        high=1024,
        launch="--ep_size",
    )
    #: No trtllm-serve flag: enable_attention_dp in the --extra_llm_api_options YAML (engines/trtllm/dp.py).
    enable_attention_dp: bool = _setting(
        False,
        flag="--enable_attention_dp",
        engines=("trtllm",),
        help="attention data parallel (enable_attention_dp in the extra options YAML): each GPU attends to "
        "its own requests with its own KV pool; MoE and MLP stay tensor or expert parallel.",
    )
    #: No trtllm-serve flag: kv_cache_config.tokens_per_block in the --extra_llm_api_options YAML.
    tokens_per_block: int | None = _setting(
        None,
        flag="--tokens_per_block",
        engines=("trtllm",),
        help="tokens per KV block (default 32; kv_cache_config.tokens_per_block in the extra options YAML).",
        low=1,
        high=1024,
    )

    def given(self) -> tuple[str, ...]:
        """The settings the user set (not left to the engine's default); the engine itself excluded."""
        return tuple(f.name for f in _DECLARED[1:] if getattr(self, f.name) != f.default)


_DECLARED: tuple[Field[Any], ...] = tuple(fields(EngineSettings))


def declared() -> tuple[tuple[str, Setting], ...]:
    """Every setting (the engine first) with its declaration, in declaration order."""
    return tuple((f.name, f.metadata["setting"]) for f in _DECLARED)


#: The command-line flag of each engine setting and the engines it belongs to, for messages.
SETTING_FLAGS: dict[str, tuple[str, str]] = {name: (s.flag, " or ".join(s.engines)) for name, s in declared()}


def settings_of(engine: EngineName) -> frozenset[str]:
    """The settings `engine` reads: those whose declaration names it (the engine choice aside)."""
    return frozenset(name for name, s in declared()[1:] if engine in s.engines)


def launch_flag(name: str, engine: str | None = None, release: str | None = None) -> str | None:
    """The flag a launch command carries the setting under, None when the command line has none (or,
    given the engine and its release, when the flag came later than that release)."""
    setting = setting_of(name)
    for owner, since in setting.launch_since:
        if owner == engine and release is not None and _before(release, since):
            return None
    return setting.launch


def taken_by(name: str, version: Version) -> bool:
    """Whether release `version` of the setting's engine has its flag (its declaration's `since`)."""
    since = setting_of(name).since
    first = parse_version(since) if since else None
    return first is None or version >= first


def setting_of(name: str) -> Setting:
    """The declaration of the setting `name`."""
    setting: Setting = EngineSettings.__dataclass_fields__[name].metadata["setting"]
    return setting


def launch_env(settings: EngineSettings) -> list[str]:
    """The environment assignments a launch command starts with: each given setting declared with
    `env`, a boolean as 1 / 0 (VLLM_USE_V1=0)."""
    out = []
    for name in settings.given():
        env = setting_of(name).env
        value = getattr(settings, name)
        if env:
            out.append(f"{env}={int(value) if isinstance(value, bool) else value}")
    return out


def launch_words(name: str, value: object) -> list[str]:
    """The value's words on a command line: several for a `many` setting, else one."""
    setting: Setting = EngineSettings.__dataclass_fields__[name].metadata["setting"]
    if isinstance(value, float) and value.is_integer():  # SGLang's --cpu-offload-gb takes an int
        return [str(int(value))]
    return str(value).split() if setting.many else [str(value)]


def _before(release: str, since: str) -> bool:
    old, new = parse_version(release), parse_version(since)
    return old is not None and new is not None and old < new


def settings_from(values: Mapping[str, Any], default_engine: EngineName = "vllm") -> EngineSettings:
    """EngineSettings from values as typed (None: not given), each checked against its declaration;
    `default_engine` when the engine is not given. Raises InputError naming the flag and its range."""
    checked: dict[str, Any] = {}
    for name, setting in declared():
        value = values.get(name)
        if value is None:
            continue
        checked[name] = _checked(value, setting)
    checked.setdefault("name", default_engine)
    return EngineSettings(**checked)


def _checked(value: Any, s: Setting) -> Any:
    if isinstance(value, bool):
        return value
    if s.many:
        return _words(str(value), s)
    if s.choices:
        key = str(value).strip().lower()
        if key not in s.choices:
            raise InputError(f"unknown {s.flag} '{str(value)[:40]}'; use one of {', '.join(s.choices)}")
        return key
    if isinstance(value, int) and s.low is not None:
        return _count(value, s)
    if isinstance(value, float) and s.low is not None and s.high is not None:
        inside = (value > s.low if s.low_open else value >= s.low) and value <= s.high
        if not math.isfinite(value) or not inside:
            bracket = "(" if s.low_open else "["
            raise InputError(f"invalid {s.flag} {value}: must be in {bracket}{s.low:g}, {s.high:g}]")
    return value


def _words(value: str, s: Setting) -> str:
    """A `many` value: printable words, none read as an option; InputError names the flag."""
    words = value.split()
    if not words:
        raise InputError(f"invalid {s.flag}: give at least one value")
    for word in words:
        if word.startswith("-") or not word.isprintable():
            raise InputError(
                f"invalid {s.flag} value {ascii(word)[:60]}: each adapter is a printable NAME=PATH or "
                "PATH, not an option"
            )
    return " ".join(words)


def _count(value: int, s: Setting) -> int:
    assert s.low is not None and s.high is not None
    if value == s.off:
        return value
    if value < s.low:
        floor = "greater than zero" if s.low == 1 else f"at least {s.low:g}"
        off = f", or {s.off} (off)" if s.off is not None else ""
        raise InputError(f"invalid {s.flag} {value}: must be {floor}{off}")
    if value > s.high:
        raise InputError(f"invalid {s.flag} {value}: at most {int(s.high):,}")
    return value
