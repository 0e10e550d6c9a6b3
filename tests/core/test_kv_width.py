"""The per-token KV width is written once (core/kvcache.kv_width) and every engine reads it; transformers'
expanded MLA cache is the one named alternative (kv_width's neighbour, expanded_kv_width)."""

from __future__ import annotations

from gpusize.core import kvcache
from gpusize.core.engines import hf_prefill, llamacpp
from tests.helpers import catalog_counts


def test_gqa_width_is_k_plus_v_of_the_kv_heads() -> None:
    spec, _ = catalog_counts("Llama-3.1-8B")
    layer = spec.layers[0]
    assert kvcache.kv_width(spec, 8) == 2 * 8 * 128
    assert kvcache.expanded_kv_width(spec, layer) == kvcache.kv_width(spec, layer.num_key_value_heads)


def test_mla_latent_and_transformers_expanded_cache() -> None:
    spec, _ = catalog_counts("DeepSeek-V2-Lite")
    assert spec.mla is not None
    layer = spec.layers[0]
    assert kvcache.kv_width(spec, 1) == kvcache.kv_width(spec, 16) == 512 + 64
    assert kvcache.expanded_kv_width(spec, layer) == 16 * (128 + 64 + 128)


def test_every_engine_reads_the_one_width() -> None:
    spec, _ = catalog_counts("DeepSeek-V2-Lite")
    layers = len(spec.attention_layers)
    assert kvcache.kv_cache_bytes_per_token(spec, 2.0) == layers * 576 * 2
    assert llamacpp.llamacpp_kv_bytes(spec, 4096, "f16") == (4096 * layers * 576 * 2, 0)
    layer = spec.attention_layers[0]
    assert hf_prefill.layer_kv_bytes(spec, layer, 10, 2.0) == 10 * 16 * 320 * 2
