"""Memory the CUDA runtime and NCCL hold on each GPU outside PyTorch's allocator (pure constants).

Measured in the vLLM 0.19 H100 logs (shared reference engine-logs.yaml, records llmd-v019-*, the
'init cuda_memory' line of the worker's start-up snapshot): the CUDA context and its libraries take
0.51 GiB on one GPU; with two or more GPUs the NCCL communicators bring it to 1.53-2.07 GiB (we keep
the largest, 2.07). Those H100s sit on an NVSwitch, where NCCL's NVLink-SHARP and vLLM's custom
all-reduce hold large buffers; on PCIe or bridged cards neither is set up, and a vLLM run at
utilization 0.98 on 2x RTX 4090 (engine-logs vllm-13061) left under 0.5 GiB for everything outside the
budget, so there the NCCL share is the small one SGLang logs after its distributed init.
Used by every engine model and by training.
"""

from __future__ import annotations

from gpusize.units import GIB, MIB

__all__ = [
    "CUDA_CONTEXT_TP1",
    "CUDA_CONTEXT_TPN",
    "NCCL_PEER_TPN",
    "TORCH_CUDA_CONTEXT_BYTES",
    "cuda_context_bytes",
]

CUDA_CONTEXT_TP1 = int(0.51 * GIB)
CUDA_CONTEXT_TPN = int(2.07 * GIB)
#: NCCL communicators per GPU without an NVSwitch (PCIe, bridges): an ASSUMPTION, the ~0.13 GB an SGLang
#: TP4 start-up log shows taken by distributed init; bounded above by vllm-13061 (see the module doc).
NCCL_PEER_TPN = int(0.13 * GIB)


def cuda_context_bytes(num_gpus: int, interconnect: str = "nvswitch") -> int:
    """CUDA context (+ NCCL communicators when the job spans several GPUs) per GPU; the NVSwitch
    figure is the measured one and the default where the interconnect is not known."""
    if num_gpus == 1:
        return CUDA_CONTEXT_TP1
    return CUDA_CONTEXT_TPN if interconnect in ("nvswitch", "unknown") else CUDA_CONTEXT_TP1 + NCCL_PEER_TPN


#: What nvidia-smi shows beyond PyTorch's reserved memory, one process on one GPU: the CUDA context with
#: lazily loaded kernels, cuBLAS/cuDNN handles and the attention kernels. Measured on the H200 with torch
#: 2.11.0+cu130 (tests/data/reference/measured: smi_used_mib - peak_reserved = 695 MiB for the first case
#: of the process, 767-775 MiB for every later one): the larger, 775 MiB. Other cards report 256-426 MiB
#: for a bare context (pytorch/pytorch #86509, #109888; facts in bench/train_calibration.md), so this
#: errs high there.
TORCH_CUDA_CONTEXT_BYTES = 775 * MIB
