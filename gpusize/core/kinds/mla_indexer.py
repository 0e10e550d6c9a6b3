"""DeepSeek Sparse Attention (DeepSeek-V3.2, GLM-5): MLA plus a lightning indexer that picks the
`index_topk` past tokens each query attends to; the indexer keeps its own key cache per layer.

Parameters: the MLA tensors (`core.kinds.mla`) plus the indexer of vLLM's
vllm/model_executor/models/deepseek_v2.py `Indexer` (read at vllm-project/vllm commit 002d6073):
wq_b (q_lora_rank -> index_n_heads x index_head_dim), wk (hidden -> index_head_dim), weights_proj
(hidden -> index_n_heads), all bias-free, and k_norm, a LayerNorm over index_head_dim (weight and
bias). vLLM replicates all of them on every TP rank (ReplicatedLinear; wk_weights_proj disable_tp).
Check: DeepSeek-V3.2's Hub total 685,396,921,376 - DeepSeek-V3's 684,531,386,000 = 865,535,376 =
62 layers (61 + MTP) x 13,959,424 indexer parameters + 51,088 FP8 scales of wq_b and wk.

KV per token and layer, in bytes (vLLM `packed_kv_bytes`, not elements x dtype):
- the latent, kv_lora_rank + qk_rope_head_dim: in bf16 2 x 576 = 1,152 B; in fp8 vLLM stores it
  in its `fp8_ds_mla` format (vllm/v1/attention/backends/mla/flashmla_sparse.py: "each token's KV
  cache is 656 Bytes"): kv_lora_rank fp8 values + one fp32 scale per 128 of them + the rope part in
  bf16 = 512 + 4 x 4 + 64 x 2 = 656 B;
- the indexer key: DeepseekV32IndexerCache(head_dim = index_head_dim + index_head_dim //
  quant_block_size * 4, dtype uint8), quant_block_size 128: 128 + 4 = 132 B, whatever the KV dtype.
DeepSeek-V3.2 at fp8: 61 layers x (656 + 132) = 48,068 B per token; at bf16 61 x 1,284 = 78,324 B.
GLM-5.2's IndexCache layers (`indexer_types` "shared", LayerSpec.shares_indexer) reuse the previous
full layer's top-k: no indexer weights and no indexer key there (the MTP layer owns one).
Both caches are MLAAttentionSpec layers of one KV group (one block spans every layer's pages), kept
whole on every TP rank like the MLA latent. SGLang's NSATokenToKVPool keeps the same per-token bytes
(index_k_with_scale_buffer: page_size x index_head_dim + page_size x 4; kv_cache_dim 656 when the
NSA cache is stored in fp8).
"""

from __future__ import annotations

from gpusize.core.kinds import mla
from gpusize.core.spec import IndexerSpec, LayerSpec, Mixer, ModelSpec, ParamCounts

__all__ = ["FP8_SCALE_BYTES", "INDEXER_QUANT_BLOCK", "KIND", "indexer_key_bytes", "latent_bytes"]

#: Values per fp32 scale in the indexer key cache and in fp8_ds_mla's latent (vLLM Indexer
#: `quant_block_size = 128`; flashmla_sparse.py "the scale for the first 128 float8_e4m3 values").
INDEXER_QUANT_BLOCK = 128
#: Bytes of one fp32 scale.
FP8_SCALE_BYTES = 4
#: Bytes of one bf16 rope value in fp8_ds_mla ("This part is not quantized for accuracy").
_ROPE_BYTES = 2


def indexer_key_bytes(indexer: IndexerSpec) -> int:
    """Bytes one token's indexer key takes in one layer: fp8 values + an fp32 scale per 128."""
    return indexer.head_dim + indexer.head_dim // INDEXER_QUANT_BLOCK * FP8_SCALE_BYTES


def latent_bytes(spec: ModelSpec, kv_bytes: float) -> int:
    """Bytes one token's MLA latent takes in one layer: fp8_ds_mla at one byte per element, else
    (kv_lora_rank + qk_rope_head_dim) x bytes."""
    assert spec.mla is not None
    m = spec.mla
    if kv_bytes == 1:
        return (
            m.kv_lora_rank
            + m.kv_lora_rank // INDEXER_QUANT_BLOCK * FP8_SCALE_BYTES
            + m.qk_rope_head_dim * _ROPE_BYTES
        )
    return int((m.kv_lora_rank + m.qk_rope_head_dim) * kv_bytes)


class _MLAIndexer:
    #: A class constant: a kind is a stateless singleton (no dataclass machinery at start-up).
    per_token_kv = True
    attention_projections = False
    parts: tuple[Mixer, ...] = ()

    def params(self, spec: ModelSpec, layer: LayerSpec) -> ParamCounts:
        assert spec.mla is not None and spec.mla.indexer is not None
        if layer.shares_indexer:
            return mla.KIND.params(spec, layer)
        m, ix, h = spec.mla, spec.mla.indexer, spec.hidden_size
        weights = (m.q_lora_rank or h) * ix.n_heads * ix.head_dim + h * ix.head_dim + h * ix.n_heads
        return mla.KIND.params(spec, layer) + ParamCounts(
            attention=weights, small=2 * ix.head_dim, replicated_attention=weights
        )

    def kv_width(self, spec: ModelSpec, layer: LayerSpec, kv_heads: int) -> int:
        """Elements of the latent (engines that size by elements); vLLM uses `packed_kv_bytes`."""
        return mla.KIND.kv_width(spec, layer, kv_heads)

    def packed_kv_bytes(self, spec: ModelSpec, layer: LayerSpec, kv_heads: int, kv_bytes: float) -> int:
        assert spec.mla is not None and spec.mla.indexer is not None
        key = 0 if layer.shares_indexer else indexer_key_bytes(spec.mla.indexer)
        return latent_bytes(spec, kv_bytes) + key

    def state_elements(self, spec: ModelSpec, layer: LayerSpec) -> int:
        return 0

    def state_bytes(
        self, spec: ModelSpec, layer: LayerSpec, tp: int, conv_bytes: float, ssm_bytes: float
    ) -> int:
        return 0

    def tp_problem(self, spec: ModelSpec, layer: LayerSpec, tp: int) -> str | None:
        return mla.KIND.tp_problem(spec, layer, tp)


KIND = _MLAIndexer()
