"""Invariants of the KV, split and weight rules over synthetic configs (tests/strategies.py): heads and
KV heads that do not divide 8, hybrid layer ratios between 1 and 1.5, fp32 checkpoints, recurrent
state at TP >= 2, expert parallel at the expert count, windows and chunks. The catalog strategy of
test_properties.py never reaches these branches.

Where a property needs an oracle, it is written from the upstream code it cites, not from gpusize.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from gpusize.core import kvcache
from gpusize.core.engines import engine
from gpusize.core.plan import TP_SIZES, split_problem
from gpusize.core.spec import ModelSpec
from gpusize.core.weights import rope_cache_bytes, weight_format, weights_bytes
from gpusize.sources.catalog import find_gpu
from tests.helpers import workload
from tests.strategies import hybrid_windows, moe, spec_of, synthetic_configs

FAST = settings(max_examples=60, deadline=None, derandomize=True)


def _vllm_accepts(spec: ModelSpec, tp: int) -> bool:
    """vllm/config/model.py verify_with_parallel_config (heads % tp), linear.py QKVParallelLinear
    (KV heads divide tp or tp divides them; not for MLA), qwen3_next.py (both linear-attention head
    counts), mamba_mixer2.py (Mamba heads)."""
    kv = spec.num_key_value_heads
    la, mb = spec.linear_attention, spec.mamba
    return (
        spec.num_attention_heads % tp == 0
        and (spec.mla is not None or kv % tp == 0 or tp % kv == 0)
        and (la is None or (la.num_key_heads % tp == 0 and la.num_value_heads % tp == 0))
        and (mb is None or mb.num_heads % tp == 0)
    )


@FAST
@given(synthetic_configs(), st.sampled_from(TP_SIZES))
def test_split_rule_matches_the_engines_checks(config: dict[str, Any], tp: int) -> None:
    spec = spec_of(config)
    assert (split_problem(spec, tp, None) is None) == _vllm_accepts(spec, tp)


@FAST
@given(synthetic_configs())
def test_per_gpu_kv_and_state_shrink_with_tp(config: dict[str, Any]) -> None:
    """Over the accepted splits: KV per token never grows with TP, every KV head is held somewhere,
    and the recurrent state is split exactly TP ways (mamba_utils.py divides every state dim by tp)."""
    spec = spec_of(config)
    valid = [tp for tp in TP_SIZES if split_problem(spec, tp, None) is None]
    per_token = [kvcache.kv_cache_bytes_per_token(spec, 2.0, tp) for tp in valid]
    assert per_token == sorted(per_token, reverse=True)
    for tp in valid:
        assert kvcache.kv_heads_per_gpu(spec.num_key_value_heads, tp) * tp >= spec.num_key_value_heads
        whole = kvcache.recurrent_state_bytes(spec, 2.0, 1)
        assert abs(kvcache.recurrent_state_bytes(spec, 2.0, tp) * tp - whole) < tp


@FAST
@given(synthetic_configs())
def test_weights_split_and_replicate(config: dict[str, Any]) -> None:
    """Per GPU weights at TP=n are at most the whole model and at least 1/n of it; fp32 checkpoints
    cost what bf16 ones do (vLLM dtype=auto serves them in bf16)."""
    spec = spec_of(config)
    fmt = weight_format(spec, "auto")
    whole = weights_bytes(spec, fmt, 1)
    for tp in (tp for tp in TP_SIZES if split_problem(spec, tp, None) is None):
        part = weights_bytes(spec, fmt, tp)
        assert whole / tp <= part <= whole
    bf16 = weight_format(spec, "bf16")
    assert weights_bytes(spec, fmt) - rope_cache_bytes(spec, fmt) == weights_bytes(
        spec, bf16
    ) - rope_cache_bytes(spec, bf16)


def _vllm_group_size(counts: list[int]) -> int:
    """kv_cache_utils.py _get_kv_cache_groups_uniform_page_size."""
    smallest, largest = min(counts), max(counts)
    return largest if largest < smallest * 1.5 else smallest


@FAST
@given(st.integers(1, 12), st.integers(1, 12), st.integers(16, 4096), st.booleans())
def test_hybrid_groups_follow_vllm(full: int, local: int, window: int, chunked: bool) -> None:
    layout = kvcache.kv_layout(spec_of(hybrid_windows(full, local, window, chunked)), 2.0, 1)
    assert layout is not None
    size = _vllm_group_size([full, local])
    assert layout.group_size == size
    assert len(layout.groups) == -(-full // size) + -(-local // size)


@FAST
@given(
    st.integers(1, 12),
    st.integers(1, 12),
    st.integers(16, 4096),
    st.booleans(),
    st.integers(1, 200_000),
    st.integers(16, 16_384),
)
def test_request_blocks_grow_with_context_and_local_groups_are_bounded(
    full: int, local: int, window: int, chunked: bool, context: int, step: int
) -> None:
    """kv_cache_interface.py max_memory_usage_bytes: full groups cdiv(ctx, 16); a sliding group at
    most cdiv(window - 1 + step, 16) + 1 blocks, a chunked one cdiv(chunk + step, 16)."""
    layout = kvcache.kv_layout(spec_of(hybrid_windows(full, local, window, chunked)), 2.0, 1)
    assert layout is not None
    fulls = sum(g.kind == "full" for g in layout.groups)
    blocks = kvcache.blocks_per_request(layout, context, step)
    local_blocks = blocks - fulls * -(-context // 16)
    locals_ = len(layout.groups) - fulls
    cap = -(-(window + step) // 16) if chunked else -(-(window - 1 + step) // 16) + 1
    assert 0 < local_blocks <= locals_ * cap
    assert kvcache.blocks_per_request(layout, context + 16, step) >= blocks


@FAST
@given(synthetic_configs(), st.integers(0, 5000), st.integers(1, 16), st.integers(16, 65_536))
def test_largest_context_is_the_last_that_fits(
    config: dict[str, Any], blocks: int, batch: int, limit: int
) -> None:
    layout = kvcache.kv_layout(spec_of(config), 2.0, 1)
    assert layout is not None
    step = 2048
    best = kvcache.largest_context(layout, blocks, batch, step, limit)
    assert best % layout.block_size == 0 and best <= limit
    if best:
        assert batch * kvcache.blocks_per_request(layout, best, step) <= blocks
    after = best + layout.block_size
    if after <= limit:
        assert batch * kvcache.blocks_per_request(layout, after, step) > blocks


@FAST
@given(st.sampled_from(TP_SIZES), st.sampled_from(TP_SIZES))
def test_expert_parallel_up_to_one_expert_per_rank(experts: int, tp: int) -> None:
    """fused_moe/layer.py determine_expert_map: EP over tp ranks needs tp <= experts; the fullest
    rank holds cdiv(experts, tp) whole experts."""
    spec = spec_of(moe(experts=experts))
    assert (split_problem(spec, tp, None, expert_parallel=True) is None) == (tp <= experts)
    if tp <= experts:
        fmt = weight_format(spec, "auto")
        dealt = weights_bytes(spec, fmt, tp, expert_parallel=True) - weights_bytes(spec, fmt, tp)
        assert dealt == 0  # powers of two: even deal, the same bytes as slicing


@settings(max_examples=40, deadline=None, derandomize=True)
@given(synthetic_configs(), st.sampled_from(TP_SIZES), st.integers(1, 4096))
def test_engine_refuses_exactly_the_invalid_splits(config: dict[str, Any], tp: int, context: int) -> None:
    spec = spec_of(config)
    candidate = engine("vllm").evaluate(spec, find_gpu("H100"), tp, workload(spec, context))
    if not _vllm_accepts(spec, tp):
        assert not candidate.fits and candidate.per_gpu is None and candidate.reason
    else:
        assert candidate.per_gpu is not None
        if candidate.fits:
            assert candidate.per_gpu.total_bytes <= candidate.per_gpu.usable_bytes
