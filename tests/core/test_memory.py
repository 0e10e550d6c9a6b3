"""Memory terms: exact arithmetic and the worked figures of the Huananzhi GPU-server guide."""

from __future__ import annotations

from typing import Any

from gpusize.core import kvcache
from gpusize.core.parse import parse_config
from gpusize.core.weights import rope_cache_bytes, weight_format, weights_bytes
from tests.conftest import REFERENCE, load_reference


def test_guide_llama3_8b_kv_cache(llama8b_config: dict[str, Any]) -> None:
    """The guide: 2 x 32 layers x 8 KV heads x 128 x 8192 tokens x 2 B = 1,073,741,824 B."""
    spec = parse_config(llama8b_config)
    per_token = kvcache.kv_cache_bytes_per_token(spec, 2.0)
    assert per_token * 8192 == 1_073_741_824
    layout = kvcache.kv_layout(spec, 2.0, 1)
    assert layout is not None
    assert kvcache.request_kv_bytes(layout, 8192, 8192) == 1_073_741_824
    assert kvcache.request_kv_bytes(layout, 32768, 8192) == 4 * 1_073_741_824


def test_guide_llama3_8b_fp16_weights_about_16_gb(llama8b_config: dict[str, Any]) -> None:
    spec = parse_config(llama8b_config)
    fmt = weight_format(spec, "fp16")
    weights = weights_bytes(spec, fmt) - rope_cache_bytes(spec, fmt)
    assert weights == 2 * 8_030_261_248  # ~16.06 GB
    assert 15.5e9 < weights < 16.5e9


def test_mla_kv_per_token_deepseek_v3_and_tp_independent() -> None:
    spec = parse_config(load_reference(REFERENCE / "configs" / "deepseek-ai__DeepSeek-V3.json")["config"])
    assert kvcache.kv_cache_bytes_per_token(spec, 2.0) == 70_272  # 61 x 576 x 2
    assert kvcache.kv_cache_bytes_per_token(spec, 2.0, tp=8) == 70_272
    assert kvcache.kv_cache_bytes_per_token(spec, 1.0) == 35_136  # fp8 halves it


def test_kv_heads_replicated_when_tp_exceeds_them() -> None:
    assert kvcache.kv_heads_per_gpu(8, 16) == 1
    assert kvcache.kv_heads_per_gpu(8, 4) == 2


def test_quantized_checkpoint_formats() -> None:
    oss = parse_config(load_reference(REFERENCE / "configs" / "openai__gpt-oss-120b.json")["config"])
    fmt = weight_format(oss, "auto")
    assert fmt.name == "mxfp4" and fmt.linear_bytes == 0.5 + 1 / 32
    assert "attention" in fmt.unquantized  # modules_to_not_convert: model.layers.*.self_attn
    ds = parse_config(load_reference(REFERENCE / "configs" / "deepseek-ai__DeepSeek-V3.json")["config"])
    assert weight_format(ds, "auto").linear_bytes == 1 + 4 / (128 * 128)


def test_recurrent_state_is_constant_per_sequence() -> None:
    spec = parse_config(
        load_reference(REFERENCE / "configs" / "Qwen__Qwen3-Next-80B-A3B-Instruct.json")["config"]
    )
    state = kvcache.recurrent_state_bytes(spec, 2.0)
    # 36 Gated DeltaNet layers x (32 heads x 128 x 128 + 8192 conv channels x 3) x 2 B
    assert state == 36 * (32 * 128 * 128 + (2 * 16 * 128 + 32 * 128) * 3) * 2
