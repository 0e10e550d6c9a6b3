"""DeepSeek-V4 attention (V4-Flash, V4-Pro): one shared KV head of 512, a sliding window of 128
tokens on every layer, and per layer `compress_ratio` (0: the window only; 4: compressed KV with a
lightning indexer; 128: heavily compressed KV), inside hyper-connections of `hc_mult` streams.

Read from vLLM's vllm/models/deepseek_v4/attention.py (DeepseekV4Attention, DeepseekV4Indexer,
commit 0484480b) and compressor.py (DeepseekCompressor, CompressorStateCache, commit 01cc1d3e).

Parameters of one layer (this kind also counts the layer's hyper-connection mixers):
- attention: fused_wqa_wkv h x (q_lora_rank + head_dim) (replicated), q_norm, kv_norm, wq_b
  q_lora_rank x heads x head_dim, wo_a heads x head_dim x o_lora_rank (o_groups blocks), wo_b
  o_groups x o_lora_rank x h, attn_sink one per head;
- compressor (ratio > 1; coff = 2 when the ratio is 4, else 1): ape ratio x coff x head_dim,
  fused_wkv_wgate h x 2 x coff x head_dim, norm head_dim, replicated;
- indexer (ratio 4): wq_b q_lora_rank x index_n_heads x index_head_dim, weights_proj h x
  index_n_heads and its own compressor over index_head_dim, replicated;
- hyper-connections, for attention and for the FFN: fn (2 + hc) x hc x (hc x h), base (2 + hc) x hc,
  scale 3 (the mHC layout: hc_attn_fn / hc_attn_base / hc_attn_scale, hc_ffn_*).
Checks: V4-Flash counts 284.3B without its MTP layer (model card: 284B), V4-Pro 1.57T (1.6T). Left
out (under 0.01%): the model-level hc_head (hc x hc x h + hc + 1), and the first `num_hash_layers`
routers' token-to-expert table in place of the score-correction bias.

KV per token and layer (fp8: vLLM's fp8_ds_mla, "448B NoPE + 128B RoPE + 8B fp8 scale = 584B per
token"; bf16: the plain 512 x 2 B row), an ESTIMATE: the compressed entry divided by the ratio,
rounded up to a byte per token, plus the indexer key (128 fp8 + 4 B scale = 132 B, FP8 indexer
cache; Blackwell's MXFP4 cache is 68 B) divided by 4; vLLM's page alignment (576 B) is left out.
Constant per sequence (`window_state_bytes`): the window's 128 entries in every layer, and the
compressor's fp32 state (CompressorStateCache: coff x ratio tokens of 2 x coff x head_dim, and the
indexer's over index_head_dim). Every TP rank holds all of it (one KV head).
"""

from __future__ import annotations

from gpusize.core.spec import CompressedAttentionSpec, LayerSpec, Mixer, ModelSpec, ParamCounts

__all__ = [
    "DS_MLA_V4_BYTES",
    "INDEXER_KEY_BYTES",
    "KIND",
    "STATE_BYTES",
    "compressed_bytes_per_token",
    "window_state_bytes",
]

#: Bytes of one KV entry in vLLM's DeepSeek-V4 fp8_ds_mla layout (attention.py state_content_bytes).
DS_MLA_V4_BYTES = 584
#: Bytes of one indexer key in the FP8 indexer cache: 128 fp8 + one fp32 scale (attention.py).
INDEXER_KEY_BYTES = 132
#: The compressor state is fp32 (CompressorStateCache asserts torch.float32).
STATE_BYTES = 4
#: Ratio whose layers overlap two windows (coff = 2) and carry the indexer.
INDEXED_RATIO = 4


def _coff(ratio: int) -> int:
    return 1 + (ratio == INDEXED_RATIO)


def _compressor_params(h: int, ratio: int, dim: int) -> int:
    coff = _coff(ratio)
    return ratio * coff * dim + h * 2 * coff * dim + dim


def _entry_bytes(c: CompressedAttentionSpec, kv_bytes: float) -> int:
    """One KV entry: fp8_ds_mla at one byte per element, else head_dim x bytes."""
    return DS_MLA_V4_BYTES if kv_bytes == 1 else int(c.head_dim * kv_bytes)


def compressed_bytes_per_token(spec: ModelSpec, layer: LayerSpec, kv_bytes: float) -> int:
    """Per-token share of the layer's compressed KV and indexer keys (0 for a window-only layer)."""
    c, ratio = spec.compressed, layer.compress_ratio
    assert c is not None
    if ratio <= 1:
        return 0
    per = _entry_bytes(c, kv_bytes) + (INDEXER_KEY_BYTES if ratio == INDEXED_RATIO else 0)
    return -(-per // ratio)


def window_state_bytes(spec: ModelSpec, kv_bytes: float) -> int:
    """Bytes one sequence keeps whatever its length: every layer's sliding-window entries and each
    compressor's fp32 state (coff x ratio tokens x 2 x coff x dim, the indexer's too)."""
    c = spec.compressed
    assert c is not None
    total = 0
    for layer in spec.layers:
        ratio = layer.compress_ratio
        total += c.window * _entry_bytes(c, kv_bytes)
        if ratio > 1:
            coff = _coff(ratio)
            total += coff * ratio * 2 * coff * c.head_dim * STATE_BYTES
        if ratio == INDEXED_RATIO:
            total += 2 * ratio * 2 * 2 * c.index_head_dim * STATE_BYTES
    return total


class _CompressedMLA:
    #: A class constant: a kind is a stateless singleton (no dataclass machinery at start-up).
    per_token_kv = True
    attention_projections = False
    parts: tuple[Mixer, ...] = ()

    def params(self, spec: ModelSpec, layer: LayerSpec) -> ParamCounts:
        c = spec.compressed
        assert c is not None
        h, heads, ratio = spec.hidden_size, layer.num_attention_heads, layer.compress_ratio
        down = h * (c.q_lora_rank + c.head_dim)
        q_up = c.q_lora_rank * heads * c.head_dim
        out = heads * c.head_dim * c.o_lora_rank + c.o_groups * c.o_lora_rank * h
        replicated = down
        if ratio > 1:
            replicated += _compressor_params(h, ratio, c.head_dim)
        if ratio == INDEXED_RATIO:
            replicated += c.q_lora_rank * c.index_n_heads * c.index_head_dim + h * c.index_n_heads
            replicated += _compressor_params(h, ratio, c.index_head_dim)
        mix = (2 + c.hc_mult) * c.hc_mult
        hyper = 2 * (mix * c.hc_mult * h + mix + 3)
        return ParamCounts(
            attention=q_up + out + replicated,
            small=c.q_lora_rank + c.head_dim + heads + hyper,
            replicated_attention=replicated,
        )

    def kv_width(self, spec: ModelSpec, layer: LayerSpec, kv_heads: int) -> int:
        """Elements of one KV entry (engines that size by elements); vLLM uses `packed_kv_bytes`."""
        assert spec.compressed is not None
        return spec.compressed.head_dim

    def packed_kv_bytes(self, spec: ModelSpec, layer: LayerSpec, kv_heads: int, kv_bytes: float) -> int:
        return compressed_bytes_per_token(spec, layer, kv_bytes)

    def state_elements(self, spec: ModelSpec, layer: LayerSpec) -> int:
        """0: the window and compressor state are replicated, not sharded, so the vLLM model counts
        them per sequence itself (`window_state_bytes`)."""
        return 0

    def state_bytes(
        self, spec: ModelSpec, layer: LayerSpec, tp: int, conv_bytes: float, ssm_bytes: float
    ) -> int:
        return 0

    def tp_problem(self, spec: ModelSpec, layer: LayerSpec, tp: int) -> str | None:
        c = spec.compressed
        if layer.num_attention_heads % tp:
            return f"TP={tp} does not divide the {layer.num_attention_heads} attention heads"
        if c is not None and c.o_groups % tp:
            return f"TP={tp} does not divide the {c.o_groups} output groups"
        return None


KIND = _CompressedMLA()
