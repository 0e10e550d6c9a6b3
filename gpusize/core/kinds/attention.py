"""Softmax attention with grouped KV heads (MHA, GQA, MQA), full, sliding-window or chunked.

Parameters: q, k, v and o projections (q doubled by a per-head output gate, Qwen3-Next; no v_proj
when the layer reuses its keys as values, Gemma 4 `attention_k_eq_v`), their biases, q/k norms and
per-head sinks (gpt-oss; MiMo-V2-Flash's sliding layers). Each layer may carry its own head widths
(`LayerSpec.head_dim`, `v_head_dim`; 0 = the model's): Gemma 4's global layers use a 512-wide
head, MiMo-V2-Flash keys of 192 and values of 128.

KV per token: K and V of every KV head this GPU holds, kv_heads x (head_dim + v_head_dim), i.e.
2 x kv_heads x head_dim when they are equal. This is vLLM's page (vllm/v1/kv_cache_interface.py
FullAttentionSpec.real_page_size_bytes = block x kv_heads x (head_size + head_size_v) x dtype, and
vllm/model_executor/layers/attention/attention.py get_kv_cache_spec passes head_size_v to the
sliding-window spec too; vllm-project/vllm commit 0014ca6b9929614f1b72c4bb11e5238de49cba89; a
vLLM whose SlidingWindowSpec has no head_size_v, as at commit 001cabc1, sizes a sliding page at
2 x head_size: 20% more on MiMo-V2-Flash's sliding layers, not modelled per release),
SGLang's MHATokenToKVPool (separate k and v buffers, v_head_dim) and llama.cpp's n_embd_k_gqa +
n_embd_v_gqa. K-equals-V layers still cache both: vLLM's Gemma4Attention loads the K weights into
the V slot of qkv_proj and writes K and V (vllm/model_executor/models/gemma4.py, commit
001cabc1be16a59a70d720ed61a13b678c060a18). The window rules live in `core.kvcache` (they belong
to the engine's block manager, not to the layer).

Block-sparse attention with an indexer (MiniMax-M3, `sparse_attention_config`): the layer's fused
qkv_proj also emits index queries (index heads x index width) and one index key; the key is cached
per token in its own full-attention spec (MLAAttentionSpec, one head), so vLLM puts the layer and its
index cache in one UniformTypeKVCacheSpecs group. Read from the MiniMax-M3 vLLM plugin of
baidu/vLLM-Kunlun (vllm/model_executor/models/minimax_m3.py, commit
2d92d40f11ca45704ac223142fe3b2f0b6072e05: MiniMaxM3SparseAttention, MiniMaxM3IndexerCache); the
block selection (top-k blocks of 128 tokens) saves compute, not cache: every token's K and V stay.
"""

from __future__ import annotations

from gpusize.core.spec import LayerSpec, Mixer, ModelSpec, ParamCounts

__all__ = ["KIND", "head_width", "value_width"]


def head_width(spec: ModelSpec, layer: LayerSpec) -> int:
    """Width of one query/key head of this layer (the model's head_dim unless the layer has its own)."""
    return layer.head_dim or spec.head_dim


def value_width(spec: ModelSpec, layer: LayerSpec) -> int:
    """Width of one value head of this layer (its key width unless the layer has its own)."""
    return layer.v_head_dim or head_width(spec, layer)


class _Attention:
    #: A class constant: a kind is a stateless singleton (no dataclass machinery at start-up).
    per_token_kv = True
    attention_projections = True
    parts: tuple[Mixer, ...] = ()

    def params(self, spec: ModelSpec, layer: LayerSpec) -> ParamCounts:
        h, d, dv = spec.hidden_size, head_width(spec, layer), value_width(spec, layer)
        q, k = layer.num_attention_heads * d, layer.num_key_value_heads * d
        v = 0 if layer.k_eq_v else layer.num_key_value_heads * dv
        q_out = 2 * q if spec.attention_output_gate else q
        weights = h * (q_out + k + v) + layer.num_attention_heads * dv * h
        weights += h * layer.num_attention_heads * layer.head_gate  # Step-3.x head-wise gate (g_proj)
        small = (q_out + k + v) * spec.qkv_bias + h * spec.o_bias
        small += {"none": 0, "head": 2 * d, "full": q + k, "per_head_full": q + k}[spec.qk_norm]
        small += layer.num_attention_heads * (spec.attention_sinks or layer.sinks)
        if layer.index_head_dim:  # index_q (index heads) + one index_k, and their two norms
            weights += h * (layer.index_heads + 1) * layer.index_head_dim
            small += 2 * layer.index_head_dim
        return ParamCounts(attention=weights, small=small)

    def kv_width(self, spec: ModelSpec, layer: LayerSpec, kv_heads: int) -> int:
        """K and V of the heads this GPU holds, plus the indexer's one key per token, which every
        rank keeps whole (MiniMax-M3: MiniMaxM3IndexerCache of head_dim sparse_index_dim; in the
        model dtype when the KV cache is quantized, counted here at the KV dtype)."""
        return kv_heads * (head_width(spec, layer) + value_width(spec, layer)) + layer.index_head_dim

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
