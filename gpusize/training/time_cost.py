"""Time and cost of a training job (pure): FLOPs per token, an assumed utilization, scaling across
data-parallel GPUs, hours and dollars.
"""

from __future__ import annotations

import math

from gpusize.core.spec import ModelSpec
from gpusize.training.setup import TrainSetup

__all__ = [
    "ASSUMED_MFU",
    "SCALING_PER_DOUBLING",
    "attention_flops_per_token",
    "flops_per_token",
    "scaling_efficiency",
    "training_cost_usd",
    "training_hours",
]

# --------------------------------------------------------------------------- time and cost

#: Utilization assumed for time estimates, applied to the FLOPs executed (recompute included): 0.40,
#: the low end of Llama 3 405B pre-training on 16k H100s (38-43% BF16 MFU; Meta, "The Llama 3 Herd of
#: Models", 2024, table 4). A planning figure for well-tuned bf16 training, not a measurement.
ASSUMED_MFU = 0.40
#: Throughput kept per doubling of data-parallel GPUs, by interconnect. PCIe: 80% at 4 GPUs, the worked
#: example of the article "单GPU与多GPU服务器：AI训练、推理扩展及基础设施成本" (single- vs multi-GPU
#: servers: 3.2x on 4 GPUs), i.e. sqrt(0.8) per doubling; NVLink/NVSwitch "almost linear" (the
#: Huananzhi GPU-server guide: 4x A100 with NVLink): 0.97 per doubling, 91% at 8. NVLink bridges
#: join pairs only, so beyond 2 GPUs the pairs talk over PCIe. Assumptions, not measurements.
SCALING_PER_DOUBLING: dict[str, float] = {"nvswitch": 0.97, "pcie": 0.8**0.5}


def scaling_efficiency(interconnect: str, num_gpus: int) -> float:
    """Fraction of linear speed-up kept on num_gpus GPUs (measured speed-up / GPU count)."""
    doublings = math.log2(max(num_gpus, 1))
    pcie = SCALING_PER_DOUBLING["pcie"]
    if interconnect == "nvswitch":
        return float(SCALING_PER_DOUBLING["nvswitch"] ** doublings)
    if interconnect == "bridge-pairs" and doublings >= 1:
        return float(SCALING_PER_DOUBLING["nvswitch"] * pcie ** (doublings - 1))
    return float(pcie**doublings)


def attention_flops_per_token(spec: ModelSpec, seq: int) -> float:
    """Forward attention-score FLOPs per token: QK^T and AV, 2 x 2 x q_dim x the average causal
    context (seq / 2, capped by a sliding window) per attention layer (PaLM appendix B, halved for the
    causal mask that FlashAttention skips)."""
    total = 0.0
    for layer in spec.attention_layers:
        context = min(seq / 2, layer.window or seq)
        total += 4 * layer.num_attention_heads * spec.head_dim * context
    return total


def flops_per_token(spec: ModelSpec, setup: TrainSetup) -> float:
    """FLOPs executed per trained token. Forward F = 2 N + attention (N = weights multiplied per token:
    active parameters, without input lookup tables or the vision tower). Full: F + 2F backward = 6N
    (Kaplan et al. 2020); LoRA/QLoRA skip the frozen weights' gradients: F + 2N + 2 x attention.
    Checkpointing runs the forward once more (+F)."""
    n = spec.params.active - spec.params.vision
    attn = attention_flops_per_token(spec, setup.seq_tokens)
    forward = 2 * n + attn
    backward = 2 * forward if setup.method == "full" else 2 * n + 2 * attn
    return forward + backward + setup.grad_ckpt * forward


def training_hours(total_flops: float, peak_tflops: float, num_gpus: int, interconnect: str) -> float:
    """Wall-clock hours: FLOPs / (GPUs x peak x ASSUMED_MFU x scaling_efficiency)."""
    rate = num_gpus * peak_tflops * 1e12 * ASSUMED_MFU * scaling_efficiency(interconnect, num_gpus)
    return total_flops / rate / 3600


def training_cost_usd(hours: float, price_usd_per_gpu_hour: float, num_gpus: int) -> float:
    """Cost = hourly rate x hours, the rate being price per GPU x GPUs."""
    return hours * price_usd_per_gpu_hour * num_gpus
