"""The rules of core/kvcache.py, one case per rule, on synthetic configs built by the real parser.

Each case cites the upstream code it follows (vLLM 0.19 unless said). Exact arithmetic: the figures
are worked by hand from the config in the docstring, not taken from the code under test.
"""

from __future__ import annotations

import pytest

from gpusize.core import kvcache
from gpusize.core.kvcache import KvLayout
from tests.strategies import dense, hybrid_mamba, hybrid_windows, linear_attention, mla, spec_of

#: The layer-token bytes of the default synthetic layer: 2 (K, V) x 8 KV heads x 64 x 2 B (bf16).
LAYER_TOKEN = 2 * 8 * 64 * 2
#: Tokens per block and per scheduler step in the cases below.
BS, STEP = 16, 16


def _layout(config: dict[str, object], tp: int = 1, ratio: float = kvcache.GROUP_SIZE_RATIO) -> KvLayout:
    layout = kvcache.kv_layout(spec_of(config), 2.0, tp, ratio)
    assert layout is not None
    return layout


# --------------------------------------------------------------------------- bytes per token


def test_kv_heads_are_split_by_tp_and_replicated_beyond_it() -> None:
    """vllm/model_executor/layers/linear.py QKVParallelLinear.__init__: num_kv_heads =
    divide(total_num_kv_heads, tp) when tp < total, else 1 with tp / total replicas."""
    spec = spec_of(dense(heads=8, kv_heads=2))
    assert kvcache.kv_cache_bytes_per_token(spec, 2.0, tp=1) == 4 * 2 * 2 * 64 * 2
    assert kvcache.kv_cache_bytes_per_token(spec, 2.0, tp=2) == 4 * 2 * 1 * 64 * 2
    assert kvcache.kv_cache_bytes_per_token(spec, 2.0, tp=8) == 4 * 2 * 1 * 64 * 2  # replicated
    assert kvcache.kv_heads_per_gpu(2, 8) == 1 and kvcache.kv_heads_per_gpu(8, 2) == 4


def test_only_attention_layers_keep_kv() -> None:
    """vllm/model_executor/models/qwen3_next.py: only full_attention layers register an Attention
    (KV cache spec); Gated DeltaNet layers register a MambaSpec. 8 layers, attention every 4th."""
    spec = spec_of(linear_attention(attention_every=4, layers=8))
    assert kvcache.kv_cache_bytes_per_token(spec, 2.0) == 2 * LAYER_TOKEN


def test_mla_caches_the_latent_whole_on_every_rank() -> None:
    """vllm/v1/kv_cache_interface.py MLAAttentionSpec: one (kv_lora_rank + qk_rope_head_dim) row per
    token and layer, not split by TP (vllm/attention/layer.py MLAAttention keeps num_kv_heads=1)."""
    spec = spec_of(mla())
    assert kvcache.kv_cache_bytes_per_token(spec, 2.0, tp=1) == 4 * (128 + 16) * 2
    assert kvcache.kv_cache_bytes_per_token(spec, 2.0, tp=4) == 4 * (128 + 16) * 2


# --------------------------------------------------------------------------- recurrent state


def test_gated_deltanet_state_is_divided_by_tp() -> None:
    """vllm/model_executor/layers/mamba/mamba_utils.py MambaStateShapeCalculator.gated_delta_net_state_shape:
    conv (conv_dim // tp, kernel - 1) and temporal (value_heads // tp, key_dim, value_dim).
    6 DeltaNet layers x (8 x 32 x 64 + (2 x 4 x 32 + 8 x 64) x 3) x 2 B = 224,256 B at TP=1."""
    spec = spec_of(linear_attention(key_heads=4, value_heads=8, attention_every=4, layers=8))
    per_layer = 8 * 32 * 64 + (2 * 4 * 32 + 8 * 64) * 3
    assert kvcache.recurrent_state_bytes(spec, 2.0, tp=1) == 6 * per_layer * 2 == 224_256
    assert kvcache.recurrent_state_bytes(spec, 2.0, tp=2) == 112_128
    assert kvcache.recurrent_state_bytes(spec, 2.0, tp=4) == 56_064


def test_mamba2_state_is_divided_by_tp() -> None:
    """mamba_utils.py MambaStateShapeCalculator.mamba2_state_shape: conv (kernel - 1,
    (inner + 2 x groups x state) // tp), temporal (heads // tp, head_dim, state).
    3 Mamba layers x (8 x 32 x 64 + (256 + 2 x 2 x 64) x 3) x 2 B = 107,520 B at TP=1."""
    spec = spec_of(hybrid_mamba(mamba_heads=8, pattern="M-M*-M-*"))
    assert kvcache.recurrent_state_bytes(spec, 2.0, tp=1) == 3 * (8 * 32 * 64 + (256 + 256) * 3) * 2
    assert kvcache.recurrent_state_bytes(spec, 2.0, tp=1) == 107_520
    assert kvcache.recurrent_state_bytes(spec, 2.0, tp=2) == 53_760


# --------------------------------------------------------------------------- layout


def test_block_size_is_16_and_64_for_mla() -> None:
    """vllm/config/cache.py DEFAULT_BLOCK_SIZE = 16; vllm/v1/attention/backends/mla/flashmla.py
    get_supported_kernel_block_sizes -> [64] (vllm/platforms/cuda.py sets block_size 64 for FlashMLA)."""
    assert _layout(dense()).block_size == 16
    deepseek = _layout(mla())
    assert deepseek.block_size == 64
    # a 100-token request takes 2 blocks of 64 latent rows (144 x 2 B each) in each of the 4 layers
    assert kvcache.request_kv_bytes(deepseek, 100, STEP) == 2 * 64 * (128 + 16) * 2 * 4


def test_one_attention_type_is_one_group_of_every_layer() -> None:
    """vllm/v1/core/kv_cache_utils.py _get_kv_cache_groups_uniform_type: one group of all layers; a
    block id costs one page in each of them."""
    layout = _layout(dense(layers=4))
    assert (layout.group_size, len(layout.groups), layout.page_bytes) == (4, 1, BS * LAYER_TOKEN)
    assert layout.bytes_per_block == 4 * BS * LAYER_TOKEN
    assert kvcache.pool_blocks(layout, 10 * layout.bytes_per_block + 1) == 10
    assert kvcache.pool_blocks(layout, 0) == 0 and kvcache.pool_blocks(layout, -1) == 0  # never negative


@pytest.mark.parametrize(
    ("full", "local", "size", "groups"),
    [
        (4, 5, 5, 2),  # 5 < 1.5 x 4: groups of the largest count, one per type
        (5, 4, 5, 2),  # the same with the types swapped
        (2, 3, 2, 3),  # 3 is not < 1.5 x 2: groups of the smallest, 1 + 2
        (2, 6, 2, 4),  # 1 + 3
        (3, 3, 3, 2),  # equal counts
    ],
)
def test_hybrid_group_size_rule(full: int, local: int, size: int, groups: int) -> None:
    """vllm/v1/core/kv_cache_utils.py _get_kv_cache_groups_uniform_page_size: group_size =
    min_num_layers, or max_num_layers when max_num_layers < min_num_layers * 1.5; each type is cut
    into cdiv(count, group_size) groups."""
    layout = _layout(hybrid_windows(full, local, window=64))
    assert (layout.group_size, len(layout.groups)) == (size, groups)


def test_hybrid_group_ratio_is_the_engines_setting() -> None:
    """Releases before the 1.5 rule grouped by the smallest count (ratio 1: never the largest)."""
    layout = _layout(hybrid_windows(4, 5, window=64), ratio=1.0)
    assert (layout.group_size, len(layout.groups)) == (4, 3)


def test_pool_capacity_counts_tokens_per_group() -> None:
    """vllm/v1/core/kv_cache_utils.py get_max_concurrency_for_kv_cache_config / the logged
    'GPU KV cache size': num_blocks // num_groups * block_size."""
    layout = _layout(hybrid_windows(4, 5, window=64))
    assert kvcache.capacity_tokens(layout, 101) == 50 * 16


# --------------------------------------------------------------------------- blocks per request


def test_full_attention_request_blocks() -> None:
    """vllm/v1/kv_cache_interface.py FullAttentionSpec.max_memory_usage_bytes: cdiv(max_model_len, block)."""
    layout = _layout(dense())
    assert kvcache.blocks_per_request(layout, 1000, STEP) == 63
    assert kvcache.blocks_per_request(layout, 1024, STEP) == 64
    assert kvcache.request_kv_bytes(layout, 1000, STEP) == 63 * layout.bytes_per_block


def test_sliding_window_request_blocks() -> None:
    """kv_cache_interface.py SlidingWindowSpec.max_memory_usage_bytes: num_tokens =
    min(sliding_window - 1 + max_num_batched_tokens, max_model_len); cdiv(num_tokens, block) + 1
    (the window may start mid-block). Window 17, 16 tokens a step: min(32, ctx)."""
    layout = _layout(hybrid_windows(4, 5, window=17))  # one full group, one sliding group
    assert [g.kind for g in layout.groups] == ["full", "sliding"]
    assert kvcache.blocks_per_request(layout, 1000, STEP) == 63 + (2 + 1)
    assert kvcache.blocks_per_request(layout, 10, STEP) == 1 + (1 + 1)  # capped by the context
    assert kvcache.blocks_per_request(layout, 1000, 17) == 63 + (3 + 1)  # 17 - 1 + 17 = 33 tokens


def test_chunked_local_request_blocks() -> None:
    """kv_cache_interface.py ChunkedLocalAttentionSpec.max_memory_usage_bytes: num_tokens =
    min(attention_chunk_size + max_num_batched_tokens, max_model_len); cdiv(num_tokens, block), no
    extra block. Chunk 17, 16 tokens a step: 33 tokens, 3 blocks."""
    layout = _layout(hybrid_windows(4, 5, window=17, chunked=True))
    assert [g.kind for g in layout.groups] == ["full", "chunked"]
    assert kvcache.blocks_per_request(layout, 1000, STEP) == 63 + 3
    assert kvcache.blocks_per_request(layout, 20, STEP) == 2 + 2


def test_largest_context_is_the_last_that_fits() -> None:
    """Binary search over block multiples: 100 blocks, 2 requests of 4 full layers -> 50 blocks each."""
    layout = _layout(dense())
    assert kvcache.largest_context(layout, 100, 2, STEP, 100_000) == 50 * 16
    assert kvcache.largest_context(layout, 100, 2, STEP, 320) == 320  # capped by the limit
    assert kvcache.largest_context(layout, 1, 2, STEP, 100_000) == 0
