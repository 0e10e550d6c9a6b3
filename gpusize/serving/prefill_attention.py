"""FLOPs of prefill attention, layer by layer (pure): QK^T and PV of `new` prompt tokens that attend
causally to a cached prefix of `past` tokens and to the earlier new tokens, with each layer kind's
own widths and the keys it really reads.

- Plain attention (MHA/GQA, sliding windows): 2 x heads x (key width + value width) per (query, key)
  pair, a window capping the keys.
- Multi-head latent attention (DeepSeek-V2/V3, Kimi-K2, GLM-5): prefill runs the non-absorbed form
  (vLLM's MLA backends' `_forward_prefill`, SGLang's MHA path for prefill): per head a query/key of
  qk_nope_head_dim + qk_rope_head_dim (192) and a value of v_head_dim (128), where `head_dim`
  (hidden / heads = 56 for DeepSeek-V3) is not a width any kernel uses.
- DeepSeek Sparse Attention (DeepSeek-V3.2, GLM-5: `index_topk`): each query attends to the top-k
  keys its lightning indexer selects (causally, min(position, top-k)), and the indexer scores every
  earlier key at 2 x index_n_heads x index_head_dim a pair; a layer that reuses the previous
  layer's selection (GLM-5.2 IndexCache) has no indexer of its own.
- DeepSeek-V4 compressed attention: a sliding window on every layer (`sliding_window`), plus the
  layer's compressed entries (one per `compress_ratio` tokens): all of them at ratio 128, the
  indexer's top-k (`index_topk`) at ratio 4, scored by the indexer over every compressed entry;
  one shared KV head of head_dim for keys and values.
Attention in the configs' own terms, exact given the kernels' dense math; what the kernels reach of
the peak is the engine's fitted attention MFU (`throughput.prefill_seconds`).
"""

from __future__ import annotations

from gpusize.core.kinds.attention import head_width, value_width
from gpusize.core.kinds.compressed_mla import INDEXED_RATIO
from gpusize.core.spec import LayerSpec, ModelSpec

__all__ = ["capped_keys", "layer_attention_flops", "prefill_attention_flops"]


def _keys_to(n: float, cap: float | None) -> float:
    """Sum over the queries at positions 1..n of the keys each reads: min(position, cap)."""
    if cap is None or n <= cap:
        return n * (n + 1) / 2
    return cap * (cap + 1) / 2 + (n - cap) * cap


def capped_keys(past: float, new: float, cap: float | None) -> float:
    """(query, key) pairs of `new` tokens after `past` cached ones, each query reading at most `cap`
    keys (None: all before it, causally); `past + new / 2` per query without a cap, as the dense
    estimate always counted them."""
    if cap is None:
        return new * (past + new / 2)
    return _keys_to(past + new, cap) - _keys_to(past, cap)


def layer_attention_flops(spec: ModelSpec, layer: LayerSpec, past: int, new: int) -> float:
    """QK^T + PV FLOPs of one attention layer for `new` tokens after `past` (see the module)."""
    heads = layer.num_attention_heads or spec.num_attention_heads
    compressed = spec.compressed
    if compressed is not None:
        width = 2 * heads * 2 * compressed.head_dim  # one shared KV head: keys and values of head_dim
        flops = width * capped_keys(past, new, compressed.window)
        ratio = layer.compress_ratio
        if ratio:
            entries_past, entries_new = past / ratio, new / ratio
            indexed = ratio == INDEXED_RATIO
            topk = compressed.index_topk if indexed and compressed.index_topk else None
            flops += width * capped_keys(entries_past, entries_new, topk) * ratio  # every query
            if indexed:  # the indexer scores every compressed entry
                scoring = 2 * compressed.index_n_heads * compressed.index_head_dim
                flops += scoring * capped_keys(entries_past, entries_new, None) * ratio
        return flops
    mla = spec.mla
    if mla is not None:
        qk, v = mla.qk_nope_head_dim + mla.qk_rope_head_dim, mla.v_head_dim
    else:
        qk, v = head_width(spec, layer), value_width(spec, layer)
    width = 2 * heads * (qk + v)
    indexer = mla.indexer if mla is not None else None
    if indexer is None:
        return width * capped_keys(past, new, layer.window)
    flops = width * capped_keys(past, new, indexer.topk)
    if not layer.shares_indexer:
        flops += 2 * indexer.n_heads * indexer.head_dim * capped_keys(past, new, None)
    return flops


def prefill_attention_flops(spec: ModelSpec, past: int, new: int) -> float:
    """QK^T + PV FLOPs of every attention layer for `new` prompt tokens after `past` cached ones."""
    return sum(layer_attention_flops(spec, layer, past, new) * n for layer, n in spec.attention_layer_counts)
