"""Softmax attention with grouped KV heads (MHA, GQA, MQA), full, sliding-window or chunked.

Parameters: q, k, v and o projections (q doubled by a per-head output gate, Qwen3-Next), their
biases, q/k norms and per-head sinks (gpt-oss). KV per token: K and V of every KV head this GPU
holds, 2 x kv_heads x head_dim (vLLM's FullAttentionSpec / SlidingWindowSpec page, SGLang's
MHATokenToKVPool, llama.cpp's n_embd_k_gqa + n_embd_v_gqa). The window rules live in
`core.kvcache` (they belong to the engine's block manager, not to the layer).
"""

from __future__ import annotations

from dataclasses import dataclass

from gpusize.core.spec import LayerSpec, ModelSpec, ParamCounts

__all__ = ["KIND"]


@dataclass(frozen=True)
class _Attention:
    per_token_kv: bool = True

    def params(self, spec: ModelSpec, layer: LayerSpec) -> ParamCounts:
        h, d = spec.hidden_size, spec.head_dim
        q, kv = layer.num_attention_heads * d, layer.num_key_value_heads * d
        q_out = 2 * q if spec.attention_output_gate else q
        weights = h * (q_out + 2 * kv) + q * h
        small = (q_out + 2 * kv) * spec.qkv_bias + h * spec.o_bias
        small += {"none": 0, "head": 2 * d, "full": q + kv, "per_head_full": q + kv}[spec.qk_norm]
        small += layer.num_attention_heads * spec.attention_sinks
        return ParamCounts(attention=weights, small=small)

    def kv_width(self, spec: ModelSpec, layer: LayerSpec, kv_heads: int) -> int:
        return 2 * kv_heads * spec.head_dim

    def state_elements(self, spec: ModelSpec, layer: LayerSpec) -> int:
        return 0

    def tp_problem(self, spec: ModelSpec, layer: LayerSpec, tp: int) -> str | None:
        """vLLM shards query heads evenly and either splits KV heads or replicates them (a KV head
        is never split): tp must divide the query heads, and KV heads and tp must divide one another
        (vllm/model_executor/layers/linear.py QKVParallelLinear)."""
        heads, kv = layer.num_attention_heads, layer.num_key_value_heads
        if heads % tp:
            return f"TP={tp} does not divide the {heads} attention heads"
        if kv and kv % tp and tp % kv:
            return f"TP={tp} and the {kv} KV heads do not divide one another"
        return None

    def state_bytes(
        self, spec: ModelSpec, layer: LayerSpec, tp: int, conv_bytes: float, ssm_bytes: float
    ) -> int:
        return 0


KIND = _Attention()
