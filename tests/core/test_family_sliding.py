"""Sliding windows: all layers (Mistral-7B-v0.1, Phi-3), interleaved (Gemma 2/3, gpt-oss),
chunked (Llama-4); vLLM 0.19's hybrid grouping."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from gpusize.core import kvcache
from tests.helpers import catalog_counts, catalog_spec


def _layout(name: str) -> kvcache.KvLayout:
    spec, _ = catalog_counts(name)
    layout = kvcache.kv_layout(spec, 2.0, 1)
    assert layout is not None
    return layout


def test_layer_patterns() -> None:
    assert {la.window for la in catalog_spec("Mistral-7B-v0.1").layers} == {4096}
    assert {la.window for la in catalog_spec("Phi-3-mini-4k-instruct").layers} == {2047}
    gemma2 = [la.window for la in catalog_spec("gemma-2-27b-it").layers]
    assert gemma2[:4] == [4096, None, 4096, None]
    oss = [la.window for la in catalog_spec("gpt-oss-20b").layers]
    assert oss.count(128) == 12 and oss.count(None) == 12
    scout = catalog_spec("Llama-4-Scout-17B-16E-Instruct").layers
    assert sum(la.chunked for la in scout) == 36 and scout[3].window is None


def test_vllm_grouping_matches_logged_block_math() -> None:
    """gemma-3-27b: 10 global + 52 local layers -> groups of 10, 7 groups (llmd-v019-23);
    gemma-2-27b: 23 + 23 -> 2 groups of 23 (llmd-v019-21)."""
    g3 = _layout("gemma-3-27b-it")
    assert (g3.group_size, len(g3.groups)) == (10, 7)
    g2 = _layout("gemma-2-27b-it")
    assert (g2.group_size, len(g2.groups)) == (23, 2)
    assert kvcache.capacity_tokens(g3, 15997) == 36560  # logged GPU KV cache size


@settings(max_examples=50, deadline=None)
@given(st.integers(min_value=4096 + 8192, max_value=1_000_000))
def test_all_sliding_kv_constant_beyond_window(ctx: int) -> None:
    layout = _layout("Mistral-7B-v0.1")
    window_cap = kvcache.request_kv_bytes(layout, 4096 + 8192, 8192)
    assert kvcache.request_kv_bytes(layout, ctx, 8192) == window_cap


def test_local_layers_stop_growing_global_layers_grow() -> None:
    layout = _layout("gemma-3-27b-it")
    a, b = (kvcache.request_kv_bytes(layout, n, 8192) for n in (65536, 131072))
    # only the single global group (10 layers) grows between 64k and 128k
    assert b - a == (131072 - 65536) // 16 * layout.bytes_per_block
