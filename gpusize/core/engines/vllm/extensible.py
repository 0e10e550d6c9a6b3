"""vLLM's extensible KV cache (0.34.0 on, pure): the pool sized from the memory free after warmup.

Read from the 0.34.0 wheel on PyPI (bench/release_sources.py):
- `vllm/config/cache.py`: `enable_extensible_kv_cache` (default: on for CUDA and ROCm, unless
  `kv_cache_memory_bytes` is set or the driver lacks virtual memory management) and
  `resolved_gpu_memory_utilization`: `gpu_memory_utilization` when given, else 1.0 with the
  extensible cache (0.92 without it).
- `vllm/v1/worker/utils.py` `request_memory`: the budget is ceil(total x utilization).
- `vllm/v1/worker/extensible_kv_cache.py` `measure_kv_cache_bytes`, after warmup and CUDA-graph
  capture, with torch's cache emptied:
  `available = min(requested - non_kv_used, headroom - margin) - max(transient_peak, growth)`,
  headroom = the free memory plus the KV prefix committed (what the device leaves with no KV cache),
  non_kv_used = what the engine allocated since its start-up snapshot besides the KV cache (weights,
  CUDA graphs, buffers), margin = max(KV_CACHE_MARGIN_FLOOR_BYTES, KV_CACHE_MARGIN_FRACTION x
  transient_peak), transient_peak = `reserved_headroom_bytes`: `peak_activation_memory` (gpu_worker.py
  determine_available_memory: the profiled activation peak + the CUDA-graph memory estimate, on by
  default, VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS), the warmup's own peak where larger. So the
  graphs are taken twice: as captured (in non_kv_used) and as estimated (in the peak).

The start-up snapshot comes after the CUDA context, NCCL and cuBLAS, so at the default utilization
of 1.0 the first term is the larger and the pool is what the device leaves, less the margin and the
peak: the CUDA context and CUDA graphs are measured, not estimated, and no share of the memory is
held back. What it keeps free in full beside the pool is the activation peak and the margin.

Not modelled: torch's reservation growth during warmup (`torch_reserve_growth_bytes`, taken as no
more than the peak), the warmup's own peak above the profiled one, and the frontend's multimodal IPC
reservation (`reserve_mm_ipc_gpu_memory`: `mm_ipc_gpu_memory_gb` for GPU-decoded video frames, off by
default). Where the driver lacks virtual memory management vLLM falls back to 0.33.0's
estimate-based sizing at 0.92; gpusize assumes the default path.
"""

from __future__ import annotations

import math

from gpusize.core.releases import Version, parse_version

__all__ = [
    "EXTENSIBLE_KV_SINCE",
    "MARGIN_FLOOR_BYTES",
    "MARGIN_FRACTION",
    "budget_bytes",
    "extensible",
    "margin_bytes",
]

#: The first release with the extensible KV cache (absent from the 0.33.0 wheel).
EXTENSIBLE_KV_SINCE = "0.34.0"
#: KV_CACHE_MARGIN_FLOOR_BYTES: `(3 if current_platform.is_rocm() else 1) << 30` (ROCr maps kernel
#: scratch outside the allocator).
MARGIN_FLOOR_BYTES = {"NVIDIA": 1 << 30, "AMD": 3 << 30}
#: KV_CACHE_MARGIN_FRACTION: the margin is at least this share of the transient peak ("the first
#: prefill of an 8B model needed over 25% beyond its allocated peak", measured on GB200 by vLLM).
MARGIN_FRACTION = 0.75


def extensible(version: Version) -> bool:
    """Whether a release sizes its KV cache as an extensible cache by default (CUDA and ROCm)."""
    since = parse_version(EXTENSIBLE_KV_SINCE)
    assert since is not None
    return version >= since


def margin_bytes(peak_bytes: int, vendor: str) -> int:
    """max(KV_CACHE_MARGIN_FLOOR_BYTES, KV_CACHE_MARGIN_FRACTION x the transient peak)."""
    floor = MARGIN_FLOOR_BYTES.get(vendor, MARGIN_FLOOR_BYTES["NVIDIA"])
    return max(floor, int(peak_bytes * MARGIN_FRACTION))


def budget_bytes(
    visible: int,
    utilization: float,
    before_snapshot: int,
    activation_bytes: int,
    graph_bytes: int,
    vendor: str,
) -> int:
    """What the engine may fill (weights, graphs, buffers, the activation peak and the KV cache), as
    `measure_kv_cache_bytes` bounds it: the requested ceil(visible x utilization), or the device less
    what it held before the engine's start-up snapshot (`before_snapshot`: the CUDA context, NCCL,
    other processes) and the margin, whichever is smaller; less the CUDA graphs' estimate a second
    time (`graph_bytes`: the transient peak holds it beside the activations). The pool is this less
    what the engine holds besides it (`pool.evaluate` subtracts them, the graphs once, as for any
    budget)."""
    requested = math.ceil(visible * utilization)
    margin = margin_bytes(activation_bytes + graph_bytes, vendor)
    return min(requested, visible - before_snapshot - margin) - graph_bytes
