"""Prefill attention FLOPs per layer kind (serving/prefill_attention.py), from the configs' widths and
the keys each kind reads; synthetic cases with the arithmetic written out."""

from __future__ import annotations

import pytest

from gpusize.serving.prefill_attention import capped_keys, layer_attention_flops, prefill_attention_flops
from gpusize.serving.throughput import _tflops, matmul_seconds, prefill_mfu, prefill_seconds, speed_on
from gpusize.sources.catalog import find_gpu
from tests.helpers import catalog_spec, workload


def test_causal_pairs_with_and_without_a_cap() -> None:
    # no cap: past + new / 2 keys a query (the dense estimate); a cap of K: sum of min(position, K)
    assert capped_keys(1000, 100, None) == 100 * 1050
    assert capped_keys(0, 10, 4) == (1 + 2 + 3 + 4) + 6 * 4
    assert capped_keys(6, 4, 4) == 4 * 4  # every query past the cap reads K keys
    assert capped_keys(0, 4, 100) == 1 + 2 + 3 + 4


def test_latent_attention_prefills_at_its_own_widths() -> None:
    """DeepSeek-V3: 128 heads, q/k of qk_nope 128 + qk_rope 64 = 192, v of 128 (vLLM's MLA prefill,
    non-absorbed): 2 x 128 x (192 + 128) = 81,920 FLOPs a (query, key) pair on each of 61 layers; the
    config's derived head_dim (7168 / 128 = 56) is no kernel's width."""
    spec = catalog_spec("DeepSeek-V3")
    layer = spec.attention_layers[0]
    assert layer_attention_flops(spec, layer, 0, 2048) == 81_920 * capped_keys(0, 2048, None)
    assert prefill_attention_flops(spec, 0, 2048) == 61 * 81_920 * capped_keys(0, 2048, None)


def test_sparse_attention_reads_its_top_k_and_its_indexer_scores_every_key() -> None:
    """DeepSeek-V3.2 (index_topk 2048, index_n_heads 64, index_head_dim 128): up to 2,048 tokens every
    query reads every earlier key (latent attention) plus the indexer's 2 x 64 x 128 = 16,384 FLOPs a
    pair; beyond, each query reads 2,048 keys while the indexer still scores all of them."""
    spec = catalog_spec("DeepSeek-V3.2")
    layer = spec.attention_layers[0]
    mla, indexer = 81_920, 16_384
    short = layer_attention_flops(spec, layer, 0, 2048)
    assert short == mla * capped_keys(0, 2048, 2048) + indexer * capped_keys(0, 2048, None)
    assert capped_keys(0, 2048, 2048) == 2048 * 2049 / 2  # every key up to the cap: all of them
    long = layer_attention_flops(spec, layer, 0, 131072)
    assert long == mla * capped_keys(0, 131072, 2048) + indexer * capped_keys(0, 131072, None)
    dense = layer_attention_flops(
        catalog_spec("DeepSeek-V3"), catalog_spec("DeepSeek-V3").attention_layers[0], 0, 131072
    )
    assert long < dense / 4  # at 128k the sparse layer costs under a quarter of the dense one


def test_deepseek_v4_reads_its_window_and_its_compressed_entries() -> None:
    """DeepSeek-V4-Flash: 64 query heads over one shared KV head of 512 (keys and values), a 128-token
    window on every layer; ratio-128 layers add every compressed entry, ratio-4 layers the indexer's
    512 of them and the indexer's scores (2 x 64 x 128) over every entry; ratio-0 layers the window."""
    spec = catalog_spec("DeepSeek-V4-Flash")
    by_ratio = {layer.compress_ratio: layer for layer in spec.attention_layers}
    n, width, indexer = 65536, 2 * 64 * 2 * 512, 2 * 64 * 128
    window = width * capped_keys(0, n, 128)
    assert layer_attention_flops(spec, by_ratio[0], 0, n) == window
    assert layer_attention_flops(spec, by_ratio[128], 0, n) == pytest.approx(
        window + width * capped_keys(0, n / 128, None) * 128
    )
    assert layer_attention_flops(spec, by_ratio[4], 0, n) == pytest.approx(
        window + width * capped_keys(0, n / 4, 512) * 4 + indexer * capped_keys(0, n / 4, None) * 4
    )


def test_plain_attention_keeps_its_dense_count() -> None:
    """Llama-3.1-8B: 32 heads of 128, 4 x 32 x 128 = 16,384 FLOPs a pair (QK^T and PV), 32 layers."""
    spec = catalog_spec("Llama-3.1-8B")
    assert prefill_attention_flops(spec, 100, 1000) == 32 * 16_384 * capped_keys(100, 1000, None)


def test_attention_runs_at_the_16_bit_rate_under_fp8_weights() -> None:
    """FP8 weights make the matmuls FP8; prefill attention stays on bf16 activations (FlashAttention
    class kernels): an FP8 and a bf16 plan of the same model differ by their matmul time alone."""
    spec, h100 = catalog_spec("Qwen3-32B"), find_gpu("H100")
    fp8, bf16 = workload(spec, 32768, dtype="fp8"), workload(spec, 32768)

    def rest(work) -> float:  # type: ignore[no-untyped-def]
        peak = (_tflops(h100, work) or 0) * 1e12
        matmul = matmul_seconds(spec, speed_on(work, h100), h100, work, 16384, peak)
        assert prefill_mfu(speed_on(work, h100), h100, work) > 0
        return (prefill_seconds(spec, work, h100, 1, 16384) or 0) - matmul

    assert rest(fp8) == pytest.approx(rest(bf16), rel=1e-9)
