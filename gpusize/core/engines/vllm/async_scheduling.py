"""vLLM's async scheduling: from 0.14.0 the scheduler prepares step N+1 while step N runs on the GPU, so
a step's per-sequence host work overlaps it (pure)."""

from __future__ import annotations

from gpusize.core.gpu import GpuSpec
from gpusize.core.releases import VLLM, parse_version
from gpusize.core.speculative import speculation
from gpusize.core.workload import Workload

__all__ = ["ASYNC_SCHEDULING_SINCE", "ASYNC_SPECULATION", "overlaps_host_work"]

#: vllm/config/vllm.py from 0.14.0 (read from the wheel with bench/release_sources.py):
#: `scheduler_config.async_scheduling` None (the default, vllm/config/scheduler.py `Field(default=None)`)
#: becomes True "unless there is an incompatible option": pipeline_parallel_size > 1, speculative
#: decoding other than EAGLE/MTP, disable_padded_drafter_batch, or an executor other than mp, uni or
#: external_launcher. 0.13.0 and before: `async_scheduling: bool = False` (opt-in, --async-scheduling).
ASYNC_SCHEDULING_SINCE = "0.14.0"
#: The speculative methods async scheduling runs with (vllm/config/vllm.py: EagleModelTypes).
ASYNC_SPECULATION = frozenset({"eagle", "eagle3", "mtp"})


def overlaps_host_work(work: Workload, gpu: GpuSpec) -> bool:
    """Whether the release runs async scheduling by default for these settings on this GPU. The
    release is the one the plan names (`work.engine.version`, the default when none is
    named). ROCm builds keep the host work serial: the one ROCm record from 0.14 on (InferenceX PR
    1061, the vLLM 0.17 ROCm image, gpt-oss-120b on one MI300X at 64-256 in flight) is estimated
    1.8-2.1x too fast with it overlapped, 1.2-1.4x without (bench/VALIDATION.md)."""
    if gpu.vendor == "AMD":
        return False
    version = parse_version(work.engine.version) if work.engine.version else VLLM.default_version
    since = parse_version(ASYNC_SCHEDULING_SINCE)
    if version is None or since is None or version < since:
        return False
    if work.engine.speculative_config is None:
        return True
    found = speculation(work.engine, None)
    return found is None or found.method in ASYNC_SPECULATION
