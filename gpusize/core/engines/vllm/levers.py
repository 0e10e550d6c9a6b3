"""vLLM's fix-suggestion levers: its flag names, FP8/int4 weights, its settings that leave the KV cache
more room, and a pipeline across servers (core/levers.py; searched by core/suggest.py)."""

from __future__ import annotations

import functools
from collections.abc import Sequence

from gpusize.core.engines.vllm.behaviour import utilization
from gpusize.core.engines.vllm.pool import THIN_MARGIN
from gpusize.core.engines.vllm.scheduler import scheduler_limits, scheduler_note
from gpusize.core.gpu import GpuSpec
from gpusize.core.levers import Levers, Variant, one
from gpusize.core.workload import EngineSettings, Workload
from gpusize.dataclass import replace

__all__ = ["HIGH_UTILIZATION", "LEVERS", "MIN_SEQS", "setting_levers"]

#: The highest --gpu-memory-utilization suggested: vLLM's own docs raise it to 0.95 for more KV cache
#: (docs.vllm.ai "Conserving Memory"); above it the CUDA context and graph capture have little room.
HIGH_UTILIZATION = 0.95
#: The smallest --max-num-seqs suggested: below it a server runs too few requests at once to be a
#: useful fix.
MIN_SEQS = 32


def setting_levers(work: Workload, gpu: GpuSpec) -> list[Variant]:
    """vLLM settings that leave the KV cache more room: fewer sequences per step (its sampler and
    CUDA-graph reservations scale with them), a higher memory utilization."""
    out: list[Variant] = []
    seqs = scheduler_limits(gpu, work).max_num_seqs
    note = scheduler_note(gpu, work)
    for value in _halvings(seqs, max(work.batch, MIN_SEQS)):
        fewer = replace(work, engine=_with_setting(work.engine, "max_num_seqs", value))
        out.append(
            one("seqs", "--max-num-seqs", str(value), f"at most {value} sequences per step", note, fewer)
        )
    if utilization(work) < HIGH_UTILIZATION:
        higher = replace(work, engine=_with_setting(work.engine, "gpu_memory_utilization", HIGH_UTILIZATION))
        summary = f"memory utilization {HIGH_UTILIZATION}"
        out.append(
            one("utilization", "--gpu-memory-utilization", f"{HIGH_UTILIZATION}", summary, None, higher)
        )
    return out


#: Cached (settings keep their hash): the rows of a batch share their settings, and each row's levers
#: changed them alike; one value per change then keeps its hash for the evaluations.
@functools.lru_cache(maxsize=256)
def _with_setting(engine: EngineSettings, name: str, value: float) -> EngineSettings:
    """`replace(engine, **{name: value})`: the settings with one of them changed."""
    return replace(engine, **{name: value})


def _halvings(value: int, floor: int) -> list[int]:
    out, v = [], value // 2
    while v >= floor:
        out.append(v)
        v //= 2
    return out


#: Cached (a few dozen workloads at a time; each variant a few kB): a fit asks for them twice per GPU
#: type, for its one-GPU suggestions and the setting that needs fewer GPUs, on every row of a batch
#: (bench/RESULTS.md). Built from the workload and GPU alone, so a kept answer is the answer.
@functools.lru_cache(maxsize=64)
def _kept_levers(work: Workload, gpu: GpuSpec) -> tuple[Variant, ...]:
    return tuple(setting_levers(work, gpu))


def _setting_levers(work: Workload, gpu: GpuSpec) -> Sequence[Variant]:
    """`setting_levers`, kept (`_kept_levers`) where the GPU can be hashed."""
    try:
        return _kept_levers(work, gpu)
    except TypeError:  # a GpuSpec built by a caller that cannot be hashed: not kept
        return setting_levers(work, gpu)


LEVERS = Levers(
    count_flag="--tensor-parallel-size",
    context_flag="--max-model-len",
    thin_margin=THIN_MARGIN,
    settings=_setting_levers,
    chained=frozenset({"seqs"}),  # setting_levers lists --max-num-seqs from the largest value down
)
