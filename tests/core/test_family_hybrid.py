"""Hybrid linear attention (Qwen3-Next) and Mamba (Nemotron-H): KV only for attention layers,
plus a constant recurrent state per sequence."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from gpusize.core import kvcache
from tests.helpers import catalog_counts, evaluate


def test_kv_only_for_attention_layers() -> None:
    nxt, _ = catalog_counts("Qwen3-Next-80B-A3B-Instruct")
    assert kvcache.kv_cache_bytes_per_token(nxt, 2.0) == 12 * 2 * 2 * 256 * 2
    nemo, _ = catalog_counts("Nemotron-H-56B-Base-8K")
    assert kvcache.kv_cache_bytes_per_token(nemo, 2.0) == 10 * 2 * 8 * 128 * 2


def test_mamba_state_from_config() -> None:
    nemo, _ = catalog_counts("Nemotron-H-56B-Base-8K")
    per_layer = 256 * 64 * 256 + (256 * 64 + 2 * 8 * 256) * 3
    assert kvcache.recurrent_state_bytes(nemo, 2.0) == 54 * per_layer * 2


@settings(max_examples=40, deadline=None)
@given(st.integers(min_value=1024, max_value=150_000), st.integers(min_value=1, max_value=100_000))
def test_hybrid_kv_grows_only_with_attention_layers(ctx: int, extra: int) -> None:
    a = evaluate("Qwen3-Next-80B-A3B-Instruct", "H200", 1, ctx)
    b = evaluate("Qwen3-Next-80B-A3B-Instruct", "H200", 1, ctx + extra)
    assert a.per_gpu is not None and b.per_gpu is not None
    per_token = 12 * 2 * 2 * 256 * 2
    growth = b.per_gpu.kv_cache_bytes - a.per_gpu.kv_cache_bytes
    # vLLM raises the attention block to 544 tokens so that a page holds a Gated DeltaNet state
    # (core/engines/vllm/hybrid.py): the KV grows by whole 544-token blocks.
    assert 0 <= growth <= (extra + 544) * per_token
