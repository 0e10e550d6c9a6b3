"""Memory the CUDA runtime and NCCL hold on each GPU outside PyTorch's allocator (pure constants).

Measured in the vLLM 0.19 H100 logs (shared reference engine-logs.yaml, records llmd-v019-*, the
'init cuda_memory' line of the worker's start-up snapshot): the CUDA context and its libraries take
0.51 GiB on one GPU; with two or more GPUs the NCCL communicators bring it to 1.53-2.07 GiB (we keep
the largest, 2.07). Used by every engine model and by training.
"""

from __future__ import annotations

from gpusize.units import GIB

__all__ = ["CUDA_CONTEXT_TP1", "CUDA_CONTEXT_TPN", "cuda_context_bytes"]

CUDA_CONTEXT_TP1 = int(0.51 * GIB)
CUDA_CONTEXT_TPN = int(2.07 * GIB)


def cuda_context_bytes(num_gpus: int) -> int:
    """CUDA context (+ NCCL communicators when the job spans several GPUs) per GPU."""
    return CUDA_CONTEXT_TP1 if num_gpus == 1 else CUDA_CONTEXT_TPN
