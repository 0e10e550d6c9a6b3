"""A layer whose attention sits beside a Mamba mixer (Falcon-H1, `core.kinds.attention_mamba`) has
the attention projections of an attention layer: LoRA slots, GGUF tensors and the training anatomy
ask the layer's kind (`kinds.has_attention_projections`, `kinds.mixer_parts`), not its mixer's name.

Falcon-H1-0.5B-Base (tests/data/reference/configs): 36 layers, attention 8 heads / 2 KV heads of 64
(q 512, k and v 128 wide) beside a Mamba-2 mixer (in_proj 1024 -> 2 x 1536 + 2 x 128 + 24 = 3352,
out_proj 1536 -> 1024), a gated MLP of 2048."""

from __future__ import annotations

from dataclasses import replace

from gpusize.core import kinds
from gpusize.core.gguf_tensors import gguf_tensors
from gpusize.core.lora import lora_modules
from gpusize.core.parse import parse_config
from gpusize.core.spec import ModelSpec
from tests.conftest import REFERENCE, load_reference

H1_05B = REFERENCE / "configs" / "tiiuae__Falcon-H1-0.5B-Base.json"


def _spec() -> ModelSpec:
    return parse_config(load_reference(H1_05B)["config"])


def test_the_kind_says_which_layers_have_attention_projections() -> None:
    spec = _spec()
    layer = spec.layers[0]
    assert kinds.has_attention_projections(spec, layer)
    assert [part.mixer for part in kinds.mixer_parts(spec, layer)] == ["attention", "mamba"]
    mamba = replace(layer, mixer="mamba")
    assert not kinds.has_attention_projections(spec, mamba)
    assert kinds.mixer_parts(spec, mamba) == (mamba,)


def test_lora_slots_cover_the_attention_half_of_every_layer() -> None:
    # Before: an attention_mamba layer was "something else": no qkv_proj / o_proj slot at all.
    modules, complete = lora_modules(_spec())
    names = [m.name for m in modules]
    assert names.count("qkv_proj") == names.count("o_proj") == 36
    qkv = next(m for m in modules if m.name == "qkv_proj")
    assert (qkv.input_size, qkv.output_sizes, qkv.kv_heads) == (1024, (512, 128, 128), 2)
    assert not complete  # the Mamba half (in_proj, out_proj) is not counted


def test_gguf_blocks_carry_the_attention_tensors_beside_the_mamba_ones() -> None:
    # Before: the whole mixer was one "other" tensor, typed as the default type (attn_v is not).
    spec = _spec()
    layer = spec.layers[0]
    got = {t.category: t.elements for t in gguf_tensors(spec, layer) if not t.category.startswith("ffn")}
    assert got == {
        "attn_q": 1024 * 512,
        "attn_k": 1024 * 128,
        "attn_v": 1024 * 128,
        "attn_output": 512 * 1024,
        "other": kinds.MIXERS["mamba"].params(spec, replace(layer, mixer="mamba")).attention,
    }
    assert sum(got.values()) == kinds.mixer_kind(spec, layer).params(spec, layer).attention


def test_training_lora_adapts_both_mixers_of_every_layer() -> None:
    # Before: mixer_linears gave nothing for attention_mamba: LoRA and the gradient memory saw the
    # MLP only.
    from gpusize.training.anatomy import lora_params, mixer_linears

    spec = _spec()
    lins = mixer_linears(spec, spec.layers[0])
    assert [(lin.module, lin.fan_in, lin.fan_out) for lin in lins] == [
        ("q", 1024, 512),
        ("k", 1024, 128),
        ("v", 1024, 128),
        ("o", 512, 1024),
        ("q", 1024, 3352),
        ("o", 1536, 1024),
    ]
    mixers = (1024 + 512) + 2 * (1024 + 128) + (512 + 1024) + (1024 + 3352) + (1536 + 1024)
    mlp = 2 * (1024 + 2048) + (2048 + 1024)
    assert lora_params(spec, 16) == 16 * 36 * (mixers + mlp)


def test_training_activations_are_both_halves_behind_one_norm() -> None:
    # FalconH1DecoderLayer: one input_layernorm feeds both mixers (each through its own multiplier,
    # so each projection keeps its own input); before, the layer kept its norm alone.
    from gpusize.training.activations import _norm, attention_activation_bytes
    from gpusize.training.setup import TrainSetup

    spec = _spec()
    layer = spec.layers[0]
    setup = TrainSetup("full", 2048)
    halves = [attention_activation_bytes(spec, part, setup) for part in kinds.mixer_parts(spec, layer)]
    assert all(half > _norm(setup, 1024) for half in halves)
    assert attention_activation_bytes(spec, layer, setup) == sum(halves) - _norm(setup, 1024)


def test_deepseek_v4_layers_have_their_own_projections_not_gqa_shapes() -> None:
    # DeepSeek-V4's compressed attention has no GQA q/k/v/o (`kinds.has_attention_projections` is
    # False); before, the training anatomy gave it GQA shapes of 64 heads x 512 (272,629,760 per
    # layer, 2.5x its weights). Now: the kind's attention weights of a window-only layer exactly.
    from gpusize.training.anatomy import mixer_linears

    spec = parse_config(
        load_reference(REFERENCE / "configs" / "deepseek-ai__DeepSeek-V4-Flash.json")["config"]
    )
    layer = next(layer for layer in spec.layers if layer.compress_ratio == 0)
    assert not kinds.has_attention_projections(spec, layer)
    weights = sum(lin.fan_in * lin.fan_out for lin in mixer_linears(spec, layer))
    assert weights == kinds.mixer_kind(spec, layer).params(spec, layer).attention == 106_954_752
