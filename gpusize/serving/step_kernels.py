"""The kernels a decode step launches beyond what its bytes and FLOPs cost (pure): per layer, those a
layer runs beyond a dense attention layer's, counted from the engines' forward passes. Under CUDA
graphs each is a small, latency-bound kernel of a few rows (the decode batch), so a step pays a time
per kernel (`calibrated.EngineSpeed.kernel_s`, fitted) whatever the experts it touches: a MoE step
barely follows the experts its tokens route to (bench/VALIDATION.md, "The layers' kernels in place of
a cost per routed expert").
"""

from __future__ import annotations

import functools

from gpusize.core.spec import KV_MIXERS, ModelSpec
from gpusize.core.workload import Workload

__all__ = [
    "FP8_ACTIVATION_QUANT",
    "GROUPED_TOPK_KERNELS",
    "LINEAR_ATTENTION_KERNELS",
    "MLA_KERNELS",
    "MOE_FFN_KERNELS",
    "QK_NORM_KERNELS",
    "SHARED_EXPERT_KERNELS",
    "SHARED_GATE_KERNELS",
    "extra_kernels",
]

#: Kernels a decode step launches per layer beyond a dense attention layer's (input norm, QKV GEMM,
#: rotary, attention, O GEMM, post-attention norm, gate_up GEMM, activation, down GEMM: what `layer_s`
#: prices), counted from vLLM's forward passes (vllm/model_executor/models/deepseek_v2.py,
#: qwen3_moe.py, qwen3_next.py; layers/fused_moe/layer.py, fused_moe.py;
#: layers/quantization/utils/fp8_utils.py). A MoE FFN in place of the dense MLP: the router GEMM,
#: top-k, moe_align_block_size and moe_sum (+4); DeepSeek's grouped, bias-corrected top-k (+2).
MOE_FFN_KERNELS = 4
GROUPED_TOPK_KERNELS = 2
#: A shared expert beside the routed ones: its gate_up GEMM, activation and down GEMM (+3); a sigmoid
#: gate on its output (Qwen2-MoE, Qwen3-Next: gate GEMM and the gated add, +2).
SHARED_EXPERT_KERNELS = 3
SHARED_GATE_KERNELS = 2
#: MLA in place of GQA attention (decode, absorbed): q_a layernorm, q_b GEMM, kv_a layernorm, the
#: W_UK and W_UV batched GEMMs and the decode kernel's metadata/combine (+6).
MLA_KERNELS = 6
#: Qwen3 / Gemma 3 per-head q and k norms (+2).
QK_NORM_KERNELS = 2
#: A Gated DeltaNet layer in place of attention: a second input projection, the causal conv1d update,
#: the gating kernel and the gated RMSNorm (+4; the recurrence takes attention's place).
LINEAR_ATTENTION_KERNELS = 4
#: FP8 weights: each GEMM first quantizes its input (per-token or per-token-group, +1 a GEMM): QKV
#: (MLA: its fused q/kv_a and q_b projections) and O, the MLP's two (MoE: the fused kernel's two,
#: `moe_kernel_quantize_input` before each in fused_moe.py, and the shared expert's two). Counting it
#: for every FP8 GEMM fitted best of the forms tried (bench/VALIDATION.md: for none, for the experts
#: only, for block-scaled checkpoints only).
FP8_ACTIVATION_QUANT = frozenset({"fp8"})


def extra_kernels(spec: ModelSpec, work: Workload) -> int:
    """Kernels a decode step's layers launch beyond one dense attention layer's each (the counts
    above), summed over the model's layers."""
    return _extra_kernels(spec, work.weights.name in FP8_ACTIVATION_QUANT)


@functools.lru_cache(maxsize=256)
def _extra_kernels(spec: ModelSpec, quant: bool) -> int:
    moe = spec.moe
    total = 0
    for layer, count in spec.layer_counts:
        kernels, gemms = 0, 4  # QKV, O, gate_up, down
        if layer.mixer == "linear_attention":
            kernels += LINEAR_ATTENTION_KERNELS
            gemms += 1
        elif spec.mla is not None and layer.mixer in KV_MIXERS:
            kernels += MLA_KERNELS
            gemms += 1
        elif spec.qk_norm != "none" and layer.mixer in KV_MIXERS:
            kernels += QK_NORM_KERNELS
        if layer.ffn == "moe" and moe is not None:
            kernels += MOE_FFN_KERNELS + (GROUPED_TOPK_KERNELS if moe.score_correction_bias else 0)
            if moe.shared_intermediate_size:
                kernels += SHARED_EXPERT_KERNELS + (SHARED_GATE_KERNELS if moe.shared_expert_gate else 0)
                gemms += 2
        total += count * (kernels + (gemms if quant else 0))
    return total
