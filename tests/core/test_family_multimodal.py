"""Multimodal: vision tower and projector counted in weights, KV from the text tower only."""

from __future__ import annotations

from gpusize.core import kvcache
from tests.helpers import catalog_counts


def test_gemma3_siglip_exact() -> None:
    spec, counts = catalog_counts("gemma-3-4b-it")
    assert spec.vision is not None and spec.vision.exact
    assert counts.total == 4_300_079_472 and counts.vision > 400_000_000


def test_llama4_vision_exact() -> None:
    spec, counts = catalog_counts("Llama-4-Scout-17B-16E-Instruct")
    assert spec.vision is not None and spec.vision.exact and counts.total == 108_641_793_536


def test_kv_from_text_tower_only() -> None:
    spec, _ = catalog_counts("gemma-3-27b-it")
    assert kvcache.kv_cache_bytes_per_token(spec, 2.0) == 62 * 2 * 16 * 128 * 2


def test_other_towers_flagged_as_estimates() -> None:
    spec, _ = catalog_counts("Kimi-VL-A3B-Instruct")  # MoonViT: the generic ViT formula
    assert spec.vision is not None and not spec.vision.exact
