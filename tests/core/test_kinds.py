"""Layer kinds answer for themselves (core/kinds): the registry covers every mixer a LayerSpec may
carry, the per-token-KV kinds are the ones `ModelSpec.attention_layers` counts, and each kind's
formulas give the figures of the worked examples in their docstrings."""

from __future__ import annotations

import json
from typing import get_args

from gpusize.core import kinds, kvcache
from gpusize.core.parse import parse_config
from gpusize.core.spec import KV_MIXERS, Mixer
from tests.conftest import ROOT

CONFIGS = ROOT / "tests" / "data" / "reference" / "configs"


def _spec(name: str):  # type: ignore[no-untyped-def]
    return parse_config(json.loads((CONFIGS / f"{name}.json").read_text())["config"])


def test_every_mixer_a_layer_can_name_has_a_kind() -> None:
    assert set(get_args(Mixer)) <= set(kinds.MIXERS)


def test_the_per_token_kv_kinds_are_the_ones_counted_as_attention_layers() -> None:
    declared = {name for name, kind in kinds.MIXERS.items() if kind.per_token_kv and name in get_args(Mixer)}
    assert declared == set(KV_MIXERS)


def test_mla_layers_are_answered_by_the_mla_kind() -> None:
    spec = _spec("deepseek-ai__DeepSeek-V3")
    layer = spec.attention_layers[0]
    assert kinds.mixer_kind(spec, layer) is kinds.MIXERS["mla"]
    # latent 512 + rope 64, whatever the heads (vLLM MLAAttentionSpec)
    assert kvcache.kv_width(spec, 128, layer) == kvcache.kv_width(spec, 1, layer) == 576


def test_a_kind_refuses_a_split_it_cannot_shard() -> None:
    """Qwen3-Next: 16 linear-attention key heads and 32 value heads; Nemotron-H: 128 Mamba heads
    (vLLM shards the heads, so TP must divide them)."""
    nemotron = _spec("nvidia__Nemotron-H-56B-Base-8K")
    assert kinds.tp_problem(nemotron, 8) is None
    qwen = _spec("Qwen__Qwen3-Next-80B-A3B-Instruct")
    assert kinds.tp_problem(qwen, 8) is None
    assert kinds.tp_problem(qwen, 3) is not None


def test_the_packed_kinds_are_found_once_and_are_those_with_a_packed_format() -> None:
    # kinds/__init__.py looks the packed kinds up by identity (speed); it must name exactly the
    # kinds that have the packed format
    from gpusize.core import kinds

    packed = {name for name, k in kinds.MIXERS.items() if id(k) in kinds._PACKED}
    assert packed == {name for name, k in kinds.MIXERS.items() if isinstance(k, kinds.PackedKV)}
    assert packed  # DeepSeek Sparse Attention's fp8_ds_mla at least
