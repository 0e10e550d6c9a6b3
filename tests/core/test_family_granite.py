"""Granite-4.0-H (`granitemoehybrid`): Mamba-2 and attention mixers from `layer_types`, every layer
with a gated shared MLP and routed experts; parameters as transformers' modeling_granitemoehybrid
builds them, the Mamba-2 state and the KV per GPU as vLLM's mamba_utils.mamba2_state_shape and its
attention spec allocate them (the kinds' own formulas, `core.kinds.mamba2`, `core.kinds.attention`).

The config is the complete GraniteMoeHybridConfig of the transformers documentation's tiny model
(hidden 512, 8 layers: 6 Mamba-2 + 2 attention, 8 experts top-2, shared MLP 512)."""

from __future__ import annotations

from typing import Any

import pytest

from gpusize.core import kvcache
from gpusize.core.engines.vllm import hybrid
from gpusize.core.parse import parse_config
from gpusize.errors import ConfigError
from gpusize.sources.catalog import find_gpu
from tests.conftest import REFERENCE, load_reference
from tests.helpers import workload

TINY: dict[str, Any] = {
    "architectures": ["GraniteMoeHybridForCausalLM"],
    "attention_bias": False,
    "attention_multiplier": 0.015625,
    "embedding_multiplier": 12,
    "hidden_act": "silu",
    "hidden_size": 512,
    "intermediate_size": 1024,
    "layer_types": ["mamba", "mamba", "mamba", "attention", "mamba", "mamba", "mamba", "attention"],
    "logits_scaling": 2,
    "mamba_chunk_size": 256,
    "mamba_conv_bias": True,
    "mamba_d_conv": 4,
    "mamba_d_head": 128,
    "mamba_d_state": 128,
    "mamba_expand": 2,
    "mamba_n_groups": 1,
    "mamba_n_heads": 8,
    "mamba_proj_bias": False,
    "max_position_embeddings": 4096,
    "model_type": "granitemoehybrid",
    "normalization_function": "rmsnorm",
    "num_attention_heads": 8,
    "num_experts_per_tok": 2,
    "num_hidden_layers": 8,
    "num_key_value_heads": 8,
    "num_local_experts": 8,
    "position_embedding_type": "nope",
    "residual_multiplier": 0.22,
    "rms_norm_eps": 1e-05,
    "rope_theta": 10000,
    "shared_intermediate_size": 512,
    "tie_word_embeddings": True,
    "torch_dtype": "bfloat16",
    "vocab_size": 49152,
}

# transformers GraniteMoeHybridMambaLayer (Bamba's Mamba-2 mixer): in_proj 512 x (1024 + 1280 + 8),
# out_proj 1024 x 512, conv1d 1280 x 4 + bias 1280, A_log / D / dt_bias 8 each, gated norm 1024.
MAMBA = 512 * (1024 + 1280 + 8) + 1024 * 512 + 1280 * 4 + 1280 + 3 * 8 + 1024
ATTENTION = 4 * 512 * 512  # q, k, v, o: 8 heads of 64, 8 KV heads, no bias, no rope (nope)
# GraniteMoeHybridMoE: router 512 x 8, experts 8 x (2 x 1024 x 512 + 1024 x 512); GraniteMoeSharedMLP
# 512 -> 2 x 512 -> 512; input and post-attention RMSNorms.
FFN = 512 * 8 + 8 * 3 * 512 * 1024 + 3 * 512 * 512 + 2 * 512
TOTAL = 49152 * 512 + 512 + 6 * MAMBA + 2 * ATTENTION + 8 * FFN  # tied embeddings, final norm


def test_layers_are_mamba2_and_attention_each_with_experts_and_a_shared_mlp() -> None:
    spec = parse_config(TINY)
    assert [layer.mixer for layer in spec.layers] == [t for t in TINY["layer_types"]]
    assert {layer.ffn for layer in spec.layers} == {"moe"}
    assert spec.moe is not None and spec.moe.shared_intermediate_size == 512
    assert spec.params.total == TOTAL == 144_552_080


def test_dense_granite_reads_its_shared_mlp_as_the_ffn() -> None:
    # granite-4.0-h-micro style: no experts, the shared_mlp is the layer's MLP
    dense = {**TINY, "num_local_experts": 0}
    spec = parse_config(dense)
    assert {layer.ffn for layer in spec.layers} == {"dense"}
    assert {layer.intermediate_size for layer in spec.layers} == {512}
    assert spec.params.total == TOTAL - 8 * (512 * 8 + 8 * 3 * 512 * 1024)


@pytest.mark.parametrize(
    ("tp", "expected"),
    [
        # vLLM mamba2_state_shape, bf16 conv and SSM state (no mamba_ssm_dtype): groups replicated up
        # to tp; conv (3, (1024 + 2 x g x 128) / tp), ssm (8 / tp, 128, 128).
        (1, (3 * 1280 + 8 * 128 * 128) * 2),  # 269,824
        (2, (3 * (1024 + 2 * 2 * 128) // 2 + 4 * 128 * 128) * 2),  # 135,680
        (4, (3 * (1024 + 2 * 4 * 128) // 4 + 2 * 128 * 128) * 2),  # 68,608
        (8, (3 * (1024 + 2 * 8 * 128) // 8 + 1 * 128 * 128) * 2),  # 35,072
    ],
)
def test_mamba_state_per_gpu(tp: int, expected: int) -> None:
    spec = parse_config(TINY)
    conv, ssm = hybrid.state_dtypes(spec, workload(spec, 4096, version="0.19.0"))
    assert hybrid.mamba_page_bytes(spec, tp, conv, ssm) == expected


def test_kv_per_token_is_the_two_attention_layers_only() -> None:
    spec = parse_config(TINY)
    layer = spec.attention_layers[0]
    assert len(spec.attention_layers) == 2
    got = {tp: kvcache.kv_bytes_per_token_per_layer(spec, 2.0, tp, 8, layer) for tp in (1, 2, 4, 8)}
    assert got == {1: 2048, 2: 1024, 4: 512, 8: 256}  # 2 x (8 / tp) x 64 x 2


def test_mamba_layers_without_their_dimensions_are_refused() -> None:
    broken = {k: v for k, v in TINY.items() if k != "mamba_n_heads"}
    with pytest.raises(ConfigError, match="mamba_num_heads"):
        parse_config(broken)


def test_llamacpp_holds_the_recurrent_state_in_f32_per_sequence() -> None:
    # llama_memory_hybrid: r (conv) and s (SSM) cells in f32, one per sequence (-np = batch); before,
    # llama.cpp's plan left the state out
    from gpusize.core.engines import llamacpp

    spec = parse_config(TINY)
    per_seq = 6 * (3 * 1280 + 8 * 128 * 128) * 4
    assert llamacpp.llamacpp_state_bytes(spec, 4) == 4 * per_seq
    got = llamacpp.evaluate(spec, find_gpu("H100"), 1, workload(spec, 4096, batch=4, engine_name="llamacpp"))
    assert got.per_gpu is not None
    full, swa = llamacpp.llamacpp_kv_bytes(spec, 4 * 4096)
    assert got.per_gpu.kv_cache_bytes == full + swa + 4 * per_seq


# ibm-granite/granite-4.0-h-tiny (tests/data/reference/configs): 36 Mamba-2 layers (48 heads of 64,
# d_inner 3072, state 128, 1 group) and 4 attention layers (12 heads / 4 KV heads of 128).
H_TINY = REFERENCE / "configs" / "ibm-granite__granite-4.0-h-tiny.json"


def test_granite_4_h_tiny_reproduces_its_hub_total() -> None:
    data = load_reference(H_TINY)
    spec = parse_config(data["config"])
    assert spec.params.total == data["true_params"] == 6_939_037_248
    assert [layer.mixer for layer in spec.layers].count("attention") == 4


@pytest.mark.parametrize(
    ("tp", "expected"),
    [
        # vllm mamba_utils.mamba2_state_shape, bf16 (no mamba_ssm_cache_dtype): the one group is
        # replicated up to tp (extra_groups_for_head_shards); conv (3, (3072 + 2 x g x 128) / tp),
        # ssm (48 / tp, 64, 128), per Mamba layer
        (1, (3 * 3328 + 48 * 64 * 128) * 2),  # 806,400
        (2, (3 * 3584 // 2 + 24 * 64 * 128) * 2),  # 403,968
        (4, (3 * 4096 // 4 + 12 * 64 * 128) * 2),  # 202,752
        (8, (3 * 5120 // 8 + 6 * 64 * 128) * 2),  # 102,144
    ],
)
def test_granite_4_h_tiny_mamba_state_per_gpu(tp: int, expected: int) -> None:
    spec = parse_config(load_reference(H_TINY)["config"])
    conv, ssm = hybrid.state_dtypes(spec, workload(spec, 4096, version="0.19.0"))
    assert hybrid.mamba_page_bytes(spec, tp, conv, ssm) == expected


def test_granite_4_h_tiny_kv_per_token_and_the_tp_rule() -> None:
    from gpusize.core.kinds import tp_problem

    spec = parse_config(load_reference(H_TINY)["config"])
    layer = spec.attention_layers[0]
    got = {tp: kvcache.kv_bytes_per_token_per_layer(spec, 2.0, tp, 4, layer) for tp in (1, 2, 4, 8)}
    # vLLM's attention spec: 2 x max(1, 4 / tp) KV heads x 128 x 2 bytes, 4 such layers
    assert got == {1: 2048, 2: 1024, 4: 512, 8: 512}
    assert tp_problem(spec, 4) is None
    assert tp_problem(spec, 8) is not None  # 12 attention heads do not split 8 ways
