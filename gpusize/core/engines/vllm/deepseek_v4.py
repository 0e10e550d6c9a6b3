"""DeepSeek-V4 in vLLM (pure): what each running sequence holds whatever its length, as a reserve.

Every layer keeps its last `sliding_window` (128) KV entries and each compressing layer its
compressor's fp32 state (`core.kinds.compressed_mla.window_state_bytes`): 15,420,416 B per sequence
for V4-Flash in fp8, the same on every TP rank (one KV head). vLLM allocates them as sliding-window
KV groups from the same pool (vllm/models/deepseek_v4/compressor.py CompressorStateCache,
vllm/v1/attention/backends/mla/sparse_swa.py DeepseekV4SWACache); gpusize counts them for the
`--batch` sequences at the decode steady state (a prefilling sequence also holds its chunk's window
entries), an estimate.
"""

from __future__ import annotations

from gpusize.core.gpu import GpuSpec
from gpusize.core.kinds.compressed_mla import window_state_bytes
from gpusize.core.reserves import Reserve
from gpusize.core.spec import ModelSpec
from gpusize.core.workload import Workload

__all__ = ["window_state"]


def window_state(spec: ModelSpec, gpu: GpuSpec, tp: int, work: Workload) -> Reserve | None:
    """The sliding-window entries and compressor state of `batch` DeepSeek-V4 sequences on one GPU."""
    if spec.compressed is None:
        return None
    per_sequence = window_state_bytes(spec, work.kv_bytes)
    return Reserve(
        "window_state",
        per_sequence * work.batch,
        f"DeepSeek-V4: {work.batch} x {per_sequence:,} B per sequence of sliding-window KV (128 entries "
        "per layer) and fp32 compressor state, on every TP rank",
        estimate=True,
    )
