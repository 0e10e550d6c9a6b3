"""MLA (DeepSeek-V2/V3/R1, Kimi): latent KV cache, not divided by TP; fp8 halves it."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from gpusize.core import kvcache
from tests.helpers import catalog_counts, evaluate


def test_v2_lite_without_q_lora() -> None:
    spec, counts = catalog_counts("DeepSeek-V2-Lite")
    assert spec.mla is not None and spec.mla.q_lora_rank is None
    assert 15.6e9 < counts.total < 15.8e9  # model card: 15.7B total


def test_kimi_k2_kv_per_token() -> None:
    spec, _ = catalog_counts("Kimi-K2-Instruct")
    assert kvcache.kv_cache_bytes_per_token(spec, 2.0) == 61 * 576 * 2


def test_deepseek_v3_32k_on_h200_needs_8_and_small_kv() -> None:
    """About 2.1 GiB of KV per 32k sequence (not ~60), and 8x H200."""
    best = evaluate("DeepSeek-V3", "H200", 8, 32768)
    assert best.fits and best.per_gpu is not None
    assert 2.0 < best.per_gpu.kv_cache_bytes / 2**30 < 2.2
    assert not evaluate("DeepSeek-V3", "H200", 4, 32768).fits


@settings(max_examples=30, deadline=None)
@given(
    st.sampled_from(["DeepSeek-V3", "Kimi-K2-Instruct", "DeepSeek-V2-Lite", "Kimi-VL-A3B-Instruct"]),
    st.sampled_from([1, 2, 4, 8]),
)
def test_mla_kv_independent_of_tp(name: str, tp: int) -> None:
    spec, _ = catalog_counts(name)
    assert kvcache.kv_cache_bytes_per_token(spec, 2.0, tp) == kvcache.kv_cache_bytes_per_token(spec, 2.0, 1)
