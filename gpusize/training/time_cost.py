"""FLOPs and cost of a training job (pure): FLOPs per token and dollars for hours (the hours come from
training/speed.py's step model).
"""

from __future__ import annotations

from gpusize.core.spec import ModelSpec
from gpusize.training.setup import TrainSetup

__all__ = [
    "attention_flops_per_token",
    "flops_per_token",
    "training_cost_usd",
]

# --------------------------------------------------------------------------- FLOPs and cost
# The step's time is training/speed.py: efficiencies fitted on published throughputs.


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


def training_cost_usd(hours: float, price_usd_per_gpu_hour: float, num_gpus: int) -> float:
    """Cost = hourly rate x hours, the rate being price per GPU x GPUs."""
    return hours * price_usd_per_gpu_hour * num_gpus
