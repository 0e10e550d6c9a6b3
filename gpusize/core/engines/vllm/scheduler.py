"""vLLM's scheduler limits: the user's, else the release's per-device defaults, clamped as it clamps them."""

from __future__ import annotations

from dataclasses import dataclass

from gpusize.core.engines.vllm.behaviour import Behaviour, behaviour
from gpusize.core.gpu import GpuSpec
from gpusize.core.workload import Workload
from gpusize.units import GIB

__all__ = ["HUGE_GPU_BYTES", "LARGE_GPU_BYTES", "SchedulerLimits", "scheduler_limits", "scheduler_note"]


#: `vllm serve` scheduler defaults (engine/arg_utils.py get_batch_defaults; NVML total memory and name):
#: >= 70 GiB and not an A100: 8192 batched tokens / 1024 sequences; >= 160 GiB from 0.28.0: 16384 / 1024;
#: otherwise 2048 / 256.
LARGE_GPU_BYTES = 70 * GIB
HUGE_GPU_BYTES = 160 * GIB


@dataclass(frozen=True)
class SchedulerLimits:
    max_num_seqs: int
    max_num_batched_tokens: int


def scheduler_limits(gpu: GpuSpec, work: Workload, beh: Behaviour | None = None) -> SchedulerLimits:
    """The scheduler limits vLLM runs with: the user's, else the release's per-device defaults, clamped
    as the release clamps defaulted values (engine/arg_utils.py)."""
    beh = beh or behaviour(work.release.version)
    large = gpu.reported_bytes >= LARGE_GPU_BYTES and "a100" not in gpu.full_name.lower()
    seqs, tokens = (1024, 8192) if large else (256, 2048)
    if beh.huge_tier and gpu.reported_bytes >= HUGE_GPU_BYTES:
        seqs, tokens = 1024, 16384
    given_seqs, given_tokens = work.engine.max_num_seqs, work.engine.max_num_batched_tokens
    seqs, tokens = given_seqs or seqs, given_tokens or tokens
    if beh.clamp_tokens_to_len and given_tokens is None:
        tokens = min(seqs * work.context_tokens, tokens)
    if beh.clamp_seqs_to_tokens and given_seqs is None:
        seqs = min(seqs, tokens)
    return SchedulerLimits(seqs, tokens)


def scheduler_note(gpu: GpuSpec, work: Workload) -> str | None:
    """Why fewer sequences per step frees memory on this GPU: on a card with vLLM's larger scheduler
    defaults (>= 70 GiB and not an A100) the sampler's logits and the CUDA graphs are sized for 1024
    sequences, where an A100 80GB gets 256; None when the GPU already has the small defaults or the
    user set the limits."""
    beh = behaviour(work.release.version)
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
