"""The V slot vLLM allocates for layers that reuse their keys as values (Gemma 4 `attention_k_eq_v`).

vllm/model_executor/models/gemma4.py (vllm-project/vllm commit 001cabc1be16a59a70d720ed61a13b678c060a18)
builds every attention layer's `QKVParallelLinear(hidden, head_dim, heads, kv_heads)`, which holds q,
k *and* v projections; for a K-equals-V global layer the checkpoint has no v_proj and the loader
copies the K weights into the V slot ("k_eq_v layers load K weights into both K and V slots"). So
vLLM holds hidden x max(1, kv_heads / tp) x head_dim more weights per such layer than the checkpoint
has parameters: Gemma-4-31B (10 global layers of 4 KV heads x 512, hidden 5,376) 110,100,480 at TP=1
in bf16 220,200,960 B; Gemma-4-26B-A4B (5 layers of 2 x 512, hidden 2,816) 14,417,920 (28.8 MB).
"""

from __future__ import annotations

from gpusize.core.gpu import GpuSpec
from gpusize.core.kinds.attention import value_width
from gpusize.core.reserves import Reserve
from gpusize.core.spec import ModelSpec
from gpusize.core.workload import Workload

__all__ = ["value_slots"]


def value_slots(spec: ModelSpec, gpu: GpuSpec, tp: int, work: Workload) -> Reserve | None:
    """The copied V projections of K-equals-V layers on one GPU, at the attention weights' width."""
    # each distinct layer once, times its count (every evaluation asks: the layer walk was a fortieth
    # of a batch row; the sum is of integers, so the same)
    counted = [(layer, n) for layer, n in spec.attention_layer_counts if layer.k_eq_v]
    if not counted or spec.mla:
        return None
    fmt = work.weights
    per_element = fmt.other_bytes if "attention" in fmt.unquantized else fmt.linear_bytes
    held = sum(
        n * spec.hidden_size * max(1, layer.num_key_value_heads // tp) * value_width(spec, layer)
        for layer, n in counted
    )
    how = (
        f"{sum(n for _, n in counted)} K-equals-V layer(s): vLLM's qkv_proj keeps a V slot the "
        "checkpoint lacks and loads the K weights into it (gemma4.py)"
    )
    return Reserve("value_slots", int(held * per_element), how)
