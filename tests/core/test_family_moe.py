"""MoE: routed, shared and dense-first layers, routers; params_total and params_active exact."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from gpusize.core.params import count_params
from gpusize.core.parse import parse_config
from gpusize.sources.catalog import load_models
from tests.helpers import catalog_counts


def test_qwen3_moe_every_layer_sparse() -> None:
    spec, counts = catalog_counts("Qwen3-235B-A22B")
    assert spec.moe is not None and all(layer.ffn == "moe" for layer in spec.layers)
    assert counts.total == 235_093_634_560  # HF safetensors total
    assert round(counts.active / 1e9, 1) == 21.6  # "22B activated" incl. lm_head, minus lookup table


def test_deepseek_dense_first_layers_and_shared_expert() -> None:
    spec, counts = catalog_counts("DeepSeek-V3")
    assert [layer.ffn for layer in spec.layers[:4]] == ["dense", "dense", "dense", "moe"]
    assert spec.moe is not None and spec.moe.shared_intermediate_size == 2048
    assert spec.moe.score_correction_bias  # noaux_tc
    assert counts.total == 671_026_419_200 and 36e9 < counts.active < 38e9


def test_llama4_shared_expert_and_glm_dense_first_layer() -> None:
    scout, counts = catalog_counts("Llama-4-Scout-17B-16E-Instruct")
    assert scout.moe is not None and scout.moe.num_experts_per_tok == 1
    assert counts.total == 108_641_793_536
    glm, _ = catalog_counts("GLM-4.5-Air")
    assert glm.layers[0].ffn == "dense" and glm.layers[1].ffn == "moe"


def test_gpt_oss_router_and_expert_biases() -> None:
    spec, counts = catalog_counts("gpt-oss-20b")
    assert spec.moe is not None and spec.moe.router_bias and spec.moe.expert_bias
    assert counts.total == 20_914_757_184
    assert abs(counts.active - 3.61e9) < 5e6  # OpenAI model card


def test_qwen3_next_shared_expert_gate() -> None:
    spec, counts = catalog_counts("Qwen3-Next-80B-A3B-Instruct")
    assert spec.moe is not None and spec.moe.shared_expert_gate
    assert counts.total == 79_674_391_296


MODELS = [e for e in load_models()]


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(MODELS))
def test_active_never_exceeds_total(entry: object) -> None:
    counts = count_params(parse_config(entry.config))  # type: ignore[attr-defined]
    assert 0 < counts.active <= counts.total


def test_glm_4_5_reconstruction_matches_the_hub_total() -> None:
    """Main model + MTP layer + the MTP layer's stored embedding/head copies = 358,337,791,296
    (Hub safetensors total); model card: 355B total, 32B active."""
    spec, counts = catalog_counts("GLM-4.5")
    assert counts.total + counts.mtp + 2 * spec.vocab_size * spec.hidden_size == 358_337_791_296
    assert 32e9 < counts.active < 33e9
