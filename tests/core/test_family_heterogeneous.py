"""Per-layer heterogeneous configs: DeciLM / Llama-Nemotron `block_configs`."""

from __future__ import annotations

from gpusize.core import kvcache
from tests.helpers import catalog_counts


def test_block_configs_no_op_attention_and_ffn_mult() -> None:
    spec, counts = catalog_counts("Llama-3_3-Nemotron-Super-49B-v1")
    attention = spec.attention_layers
    assert len(attention) < spec.num_hidden_layers  # some attention blocks are no-ops
    assert round(counts.total / 1e9, 1) == 49.9  # model card: 49B class ("49.9B")
    per_token = sum(2 * la.num_key_value_heads * 128 * 2 for la in attention)
    assert kvcache.kv_cache_bytes_per_token(spec, 2.0) == per_token
    assert len({la.intermediate_size for la in spec.layers if la.ffn == "dense"}) > 1

    layout = kvcache.kv_layout(spec, 2.0, 1)
    assert layout is not None and kvcache.request_kv_bytes(layout, 1600, 8192) == 1600 * per_token
