"""Falcon-H1 (`falcon_h1`): attention and a Mamba-2 mixer side by side in every layer
(`core.kinds.attention_mamba`), a gated MLP; parameters as transformers' modeling_falcon_h1 builds
them, the state and KV per GPU as vLLM's falcon_h1.py registers them (one Attention and one
MambaMixer2 per decoder layer; mamba_utils.mamba2_state_shape with d_ssm as the inner width)."""

from __future__ import annotations

from typing import Any

import pytest

from gpusize.core import kvcache
from gpusize.core.engines.vllm import hybrid
from gpusize.core.kinds import tp_problem
from gpusize.core.parse import parse_config
from gpusize.errors import ConfigError
from tests.conftest import REFERENCE, load_reference
from tests.helpers import workload

# A FalconH1Config of two layers (the field names and defaults of transformers' FalconH1Config;
# mamba_rms_norm false as in the released Falcon-H1 configs), with its mup multipliers.
TINY: dict[str, Any] = {
    "architectures": ["FalconH1ForCausalLM"],
    "model_type": "falcon_h1",
    "hidden_size": 32,
    "intermediate_size": 32,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 8,
    "vocab_size": 100,
    "max_position_embeddings": 128,
    "mamba_d_ssm": 16,
    "mamba_n_heads": 2,
    "mamba_d_head": 8,
    "mamba_n_groups": 1,
    "mamba_d_state": 8,
    "mamba_d_conv": 4,
    "mamba_expand": 2,
    "mamba_conv_bias": True,
    "mamba_proj_bias": False,
    "mamba_rms_norm": False,
    "projectors_bias": False,
    "attention_bias": False,
    "mlp_bias": False,
    "tie_word_embeddings": False,
    "embedding_multiplier": 2.0,
    "lm_head_multiplier": 0.5,
    "mlp_multipliers": [1.5, 0.5],
    "ssm_multipliers": [0.9, 1.1, 0.8, 1.2, 1.3],
    "torch_dtype": "bfloat16",
}
ATTENTION = 32 * 32 + 2 * 32 * 16 + 32 * 32  # q, k, v (2 KV heads of 8), o
# FalconH1Mixer: in_proj 32 x (16 + 32 + 2), out_proj 16 x 32, conv1d 32 x 4 + bias 32, A_log / D /
# dt_bias 2 each, no gated norm (mamba_rms_norm false)
MAMBA = 32 * 50 + 16 * 32 + 32 * 4 + 32 + 3 * 2
LAYER = ATTENTION + MAMBA + 3 * 32 * 32 + 2 * 32  # + gated MLP + input / pre-FFN norms
TOTAL = 2 * LAYER + 2 * 100 * 32 + 32  # untied embedding and lm_head, final norm

# The mixer fields of Falcon-H1-7B-Instruct's config as a public sizing test quotes them (mlx-community's
# 4-bit copy): 44 layers, hidden 3072, 12 heads / 2 KV heads of 128, Mamba-2 24 heads of 128, d_ssm
# 3072, state 256, 1 group. The MLP width and vocabulary stay TINY's: they touch neither state nor KV.
H1_7B: dict[str, Any] = {
    **TINY,
    "hidden_size": 3072,
    "num_hidden_layers": 44,
    "num_attention_heads": 12,
    "num_key_value_heads": 2,
    "head_dim": 128,
    "max_position_embeddings": 262144,
    "mamba_d_ssm": 3072,
    "mamba_n_heads": 24,
    "mamba_d_head": 128,
    "mamba_d_state": 256,
}


def test_every_layer_holds_attention_and_mamba_and_an_mlp() -> None:
    spec = parse_config(TINY)
    assert [layer.mixer for layer in spec.layers] == ["attention_mamba"] * 2
    assert [layer.ffn for layer in spec.layers] == ["dense"] * 2
    assert len(spec.attention_layers) == 2
    assert spec.params.total == TOTAL == 23_404


def test_mamba_d_head_auto_splits_d_ssm_over_the_heads() -> None:
    assert parse_config({**TINY, "mamba_d_head": "auto"}).params.total == TOTAL


def test_gated_norm_counts_only_with_mamba_rms_norm() -> None:
    assert parse_config({**TINY, "mamba_rms_norm": True}).params.total == TOTAL + 2 * 16


def test_d_ssm_that_is_not_the_heads_is_refused_by_name() -> None:
    with pytest.raises(ConfigError, match="mamba_d_ssm"):
        parse_config({**TINY, "mamba_d_ssm": 24})


@pytest.mark.parametrize(
    ("tp", "expected"),
    [
        # conv (3, (3072 + 2 x g x 256) / tp) + ssm (24 / tp, 128, 256), both bf16; the one group
        # replicated up to tp (extra_groups_for_head_shards)
        (1, (3 * 3584 + 24 * 128 * 256) * 2),  # 1,594,368
        (2, (3 * 4096 // 2 + 12 * 128 * 256) * 2),  # 798,720
        (4, (3 * 5120 // 4 + 6 * 128 * 256) * 2),  # 400,896
        (8, (3 * 7168 // 8 + 3 * 128 * 256) * 2),  # 201,984
    ],
)
def test_falcon_h1_7b_mamba_state_per_gpu(tp: int, expected: int) -> None:
    spec = parse_config(H1_7B)
    conv, ssm = hybrid.state_dtypes(spec, workload(spec, 4096, version="0.19.0"))
    assert hybrid.mamba_page_bytes(spec, tp, conv, ssm) == expected


def test_falcon_h1_7b_kv_per_token_and_the_tp_rule() -> None:
    spec = parse_config(H1_7B)
    layer = spec.attention_layers[0]
    got = {tp: kvcache.kv_bytes_per_token_per_layer(spec, 2.0, tp, 2, layer) for tp in (1, 2, 4, 8)}
    assert got == {1: 1024, 2: 512, 4: 512, 8: 512}  # 2 x max(1, 2 / tp) x 128 x 2
    assert len(spec.attention_layers) == 44  # every layer keeps KV, and a state
    assert tp_problem(spec, 4) is None
    assert tp_problem(spec, 8) is not None  # 12 attention heads


def test_transformers_and_ollama_keep_the_kv_of_every_falcon_h1_layer() -> None:
    # Before: the attention half of an attention_mamba layer was dropped (only "attention" kept KV).
    from gpusize.core.engines import hf_prefill, ollama_estimate
    from gpusize.core.kinds import mixer_kind

    spec = parse_config(H1_7B)
    layer = spec.layers[0]
    assert hf_prefill.layer_kv_bytes(spec, layer, 4096, 2.0) == 4096 * 2 * 2 * 128 * 2
    state = 4 * mixer_kind(spec, layer).state_elements(spec, layer)
    assert ollama_estimate.kv_per_layer(spec, 4096, 1, 2.0, 1)[0] == 4096 * 2 * 2 * 128 * 2 + state


# tiiuae/Falcon-H1-0.5B-Base (tests/data/reference/configs): 36 layers, each attention (8 heads / 2
# KV heads of 64) beside a Mamba-2 mixer (24 heads of 64, d_ssm 1536, state 128, 1 group).
H1_05B = REFERENCE / "configs" / "tiiuae__Falcon-H1-0.5B-Base.json"


def test_falcon_h1_05b_reproduces_its_hub_total() -> None:
    data = load_reference(H1_05B)
    assert parse_config(data["config"]).params.total == data["true_params"] == 521_411_104


@pytest.mark.parametrize(
    ("tp", "expected"),
    [
        # vllm falcon_h1.py: MambaMixer2 of intermediate mamba_d_ssm; mamba2_state_shape, bf16: conv
        # (3, (1536 + 2 x g x 128) / tp) with the group replicated up to tp, ssm (24 / tp, 64, 128)
        (1, (3 * 1792 + 24 * 64 * 128) * 2),  # 403,968
        (2, (3 * 2048 // 2 + 12 * 64 * 128) * 2),  # 202,752
        (4, (3 * 2560 // 4 + 6 * 64 * 128) * 2),  # 102,144
        (8, (3 * 3584 // 8 + 3 * 64 * 128) * 2),  # 51,840
    ],
)
def test_falcon_h1_05b_mamba_state_per_gpu(tp: int, expected: int) -> None:
    spec = parse_config(load_reference(H1_05B)["config"])
    conv, ssm = hybrid.state_dtypes(spec, workload(spec, 4096, version="0.19.0"))
    assert hybrid.mamba_page_bytes(spec, tp, conv, ssm) == expected


def test_falcon_h1_05b_kv_per_token_at_each_tp() -> None:
    spec = parse_config(load_reference(H1_05B)["config"])
    layer = spec.attention_layers[0]
    got = {tp: kvcache.kv_bytes_per_token_per_layer(spec, 2.0, tp, 2, layer) for tp in (1, 2, 4, 8)}
    assert got == {1: 512, 2: 256, 4: 256, 8: 256}  # 2 x max(1, 2 / tp) x 64 x 2, in all 36 layers
    assert len(spec.attention_layers) == 36
    assert all(tp_problem(spec, tp) is None for tp in (1, 2, 4, 8))  # 8 heads, 24 Mamba heads
