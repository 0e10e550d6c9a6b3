"""vLLM's scheduler limits: the user's, else the release's per-device defaults, clamped as it clamps them."""

from __future__ import annotations

from gpusize.core.engines.vllm.behaviour import Behaviour, behaviour, behaviour_of
from gpusize.core.gpu import GpuSpec
from gpusize.core.releases import parse_version
from gpusize.core.spec import ModelSpec
from gpusize.core.workload import Workload
from gpusize.dataclass import dataclass
from gpusize.units import GIB

__all__ = [
    "HUGE_GPU_BYTES",
    "LARGE_GPU_BYTES",
    "V0_LONG_CONTEXT",
    "V0_MAX_NUM_SEQS",
    "V0_MIN_BATCHED_TOKENS",
    "V0_MULTIMODAL_BATCHED_TOKENS",
    "SchedulerLimits",
    "scheduler_limits",
    "scheduler_note",
]


#: `vllm serve` scheduler defaults (engine/arg_utils.py get_batch_defaults; NVML total memory and name):
#: >= 70 GiB and not an A100: 8192 batched tokens / 1024 sequences; >= 160 GiB from 0.28.0: 16384 / 1024;
#: otherwise 2048 / 256.
LARGE_GPU_BYTES = 70 * GIB
HUGE_GPU_BYTES = 160 * GIB
#: V0 defaults (engine/arg_utils.py _set_default_args_v0, config.py SchedulerConfig): 256 sequences;
#: chunked prefill on by default above 32K tokens of context for a text model without MLA, sliding
#: windows, speculative decoding or LoRA (2048 batched tokens: _DEFAULT_MAX_NUM_BATCHED_TOKENS), else
#: max(max_model_len, 2048) batched tokens;
#: a multimodal model at least 5120 (_MULTIMODAL_MODEL_MAX_NUM_BATCHED_TOKENS) and never chunked.
V0_MAX_NUM_SEQS = 256
V0_MIN_BATCHED_TOKENS = 2048
V0_LONG_CONTEXT = 32768
V0_MULTIMODAL_BATCHED_TOKENS = 5120


@dataclass(frozen=True)
class SchedulerLimits:
    """vLLM's scheduler limits for a run: sequences at once and tokens per step."""

    max_num_seqs: int
    max_num_batched_tokens: int


def scheduler_limits(
    gpu: GpuSpec, work: Workload, beh: Behaviour | None = None, spec: ModelSpec | None = None
) -> SchedulerLimits:
    """The scheduler limits vLLM runs with: the user's, else the release's per-device defaults, clamped
    as the release clamps defaulted values (engine/arg_utils.py); `spec` the model (V0's defaults
    depend on it: a vision encoder, MLA, sliding windows)."""
    beh = beh or _own_behaviour(work)
    seqs, tokens = _v1_defaults(gpu, beh) if beh.v1 else _v0_defaults(work, spec)
    given_seqs, given_tokens = work.engine.max_num_seqs, work.engine.max_num_batched_tokens
    seqs, tokens = given_seqs or seqs, given_tokens or tokens
    if beh.clamp_tokens_to_len and given_tokens is None:
        tokens = min(seqs * work.context_tokens, tokens)
    if beh.clamp_seqs_to_tokens and given_seqs is None:
        seqs = min(seqs, tokens)
    return SchedulerLimits(seqs, tokens)


#: The release whose defaults another engine's workload borrows (SGLang's running-request cap: the
#: vLLM 0.10.0 V1 rule it has always used).
_BORROWED = parse_version("0.10.0")


def _own_behaviour(work: Workload) -> Behaviour:
    """The workload's vLLM behaviour; for another engine's workload (SGLang borrows the cap) 0.10.0 V1."""
    if work.engine.name == "vllm":
        return behaviour_of(work)
    assert _BORROWED is not None
    return behaviour(_BORROWED, v1=True)


def _v1_defaults(gpu: GpuSpec, beh: Behaviour) -> tuple[int, int]:
    """V1's (max_num_seqs, max_num_batched_tokens) for `vllm serve` on this device (Behaviour.batch_tier)."""
    name = gpu.full_name.lower()
    if beh.batch_tier == "h100":
        large = "h100" in name or "h200" in name
    else:
        large = gpu.reported_bytes >= LARGE_GPU_BYTES and (beh.batch_tier == "memory" or "a100" not in name)
    seqs, tokens = (1024, 8192) if large else (256, 2048)
    if beh.seqs_1024_everywhere:
        seqs = 1024
    if beh.huge_tier and gpu.reported_bytes >= HUGE_GPU_BYTES:
        seqs, tokens = 1024, 16384
    return seqs, tokens


def _v0_defaults(work: Workload, spec: ModelSpec | None) -> tuple[int, int]:
    """V0's (max_num_seqs, max_num_batched_tokens): see V0_MAX_NUM_SEQS."""
    if spec is not None and spec.vision is not None:
        return V0_MAX_NUM_SEQS, max(work.context_tokens, V0_MULTIMODAL_BATCHED_TOKENS)
    if work.context_tokens > V0_LONG_CONTEXT and _v0_chunks(work, spec):
        return V0_MAX_NUM_SEQS, V0_MIN_BATCHED_TOKENS
    return V0_MAX_NUM_SEQS, max(work.context_tokens, V0_MIN_BATCHED_TOKENS)


def _v0_chunks(work: Workload, spec: ModelSpec | None) -> bool:
    """V0 turns chunked prefill on for a long context only without MLA, sliding windows, speculative
    decoding or LoRA (engine/arg_utils.py _set_default_args_v0)."""
    if work.engine.enable_lora or work.engine.speculative_config:
        return False
    if spec is None:
        return True
    return not spec.mla and not any(layer.window for layer in spec.attention_layers)


def scheduler_note(gpu: GpuSpec, work: Workload) -> str | None:
    """Why fewer sequences per step frees memory on this GPU: on a card with vLLM's larger scheduler
    defaults (>= 70 GiB and not an A100) the sampler's logits and the CUDA graphs are sized for 1024
    sequences, where an A100 80GB gets 256; None when the GPU already has the small defaults or the
    user set the limits."""
    beh = _own_behaviour(work)
    if work.engine.max_num_seqs is not None:
        return None
    limits = scheduler_limits(gpu, work, beh)
    if limits.max_num_seqs <= 256:
        return None
    return (
        f"vLLM's scheduler defaults on this card are {limits.max_num_seqs} sequences / "
        f"{limits.max_num_batched_tokens:,} batched tokens per step (cards of 70 GiB and more, A100 "
        "excepted; A100 and smaller cards get 256 / 2,048): the sampler and CUDA graphs reserved for "
        "them take the room the KV cache needs"
    )
