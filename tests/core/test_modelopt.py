"""NVIDIA ModelOpt checkpoints (NVFP4, FP8, MIXED_PRECISION), from their real files: the quantization
read from an hf_quant_config.json beside config.json (vLLM's fallback) or inline, and the exact
weight bytes each format stores (tests/data/modelopt/README.md says where the files come from)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpusize.core.modelopt import algo_bytes, modelopt_roles
from gpusize.core.parse import parse_config
from gpusize.core.spec import ModelSpec
from gpusize.core.weights import rope_cache_bytes, weight_format, weights_bytes
from gpusize.errors import ConfigError
from gpusize.sources.config_json import load_config
from tests.conftest import ROOT

DATA = ROOT / "tests" / "data" / "modelopt"
MC = Path("/tmp/mc")
NVFP4 = 0.5 + 1 / 16  # e2m1 values + one e4m3 scale per 16


def spec_of(name: str) -> ModelSpec:
    return parse_config(load_config(DATA / name))


def bf16_rest(spec: ModelSpec) -> float:
    """What stays bf16 in every ModelOpt checkpoint here: embeddings, norms, routers, vision."""
    c = spec.params
    return 2.0 * (c.embedding + c.small + c.router + c.vision)


def test_fp8_sidecar_is_read_and_stores_one_byte_per_linear_weight() -> None:
    # nvidia/Llama-3.1-70B-Instruct-FP8: config.json has no quantization_config; the sidecar says
    # FP8 per-tensor with lm_head excluded. Before: sized as bf16 (131.4 GiB instead of 67.7).
    spec = spec_of("nvidia--Llama-3.1-70B-Instruct-FP8")
    assert spec.quantization is not None and spec.quantization.per_tensor
    fmt = weight_format(spec, "auto")
    c = spec.params
    expected = c.linear * 1.0 + 2.0 * c.lm_head + bf16_rest(spec) + rope_cache_bytes(spec, fmt)
    assert weights_bytes(spec, fmt, 1) == int(expected)
    assert fmt.name == "fp8" and "FP8 per-tensor (ModelOpt, KV scales FP8)" in fmt.note


def test_nvfp4_sidecar_keeps_the_excluded_mla_projections_in_bf16() -> None:
    # nvidia/DeepSeek-V3.2-NVFP4: experts, shared experts and dense MLPs NVFP4 g16; q_a, q_b, kv_a,
    # kv_b and the indexer excluded one by one (bf16), so o_proj is NVFP4; the MTP layer
    # (model.layers.61*) is not a decoder layer.
    spec = spec_of("nvidia--DeepSeek-V3.2-NVFP4")
    q = spec.quantization
    assert q is not None and q.method == "nvfp4" and q.group_size == 16
    fmt = weight_format(spec, "auto")
    assert fmt.unquantized == ("attention", "lm_head")
    c = spec.params
    o_proj = 61 * 128 * 128 * 7168  # heads x v_head_dim x hidden in each of the 61 MLA layers
    attention = o_proj * NVFP4 + (c.attention - o_proj) * 2.0
    linear = (c.experts + c.shared_experts + c.mlp) * NVFP4 + attention + 2.0 * c.lm_head
    assert abs(weights_bytes(spec, fmt, 1) - int(linear + bf16_rest(spec) + rope_cache_bytes(spec, fmt))) <= 1
    # 361.4 GiB, not the 1251.5 GiB of a bf16 reading (nor 371.0 with o_proj in bf16)
    assert 361 < weights_bytes(spec, fmt, 1) / 2**30 < 362


def test_an_excluded_o_proj_keeps_all_attention_bf16() -> None:
    # as nvidia/GLM-5-NVFP4 does: o_proj named among the excluded MLA projections
    config = json.loads((DATA / "nvidia--DeepSeek-V3.2-NVFP4" / "config.json").read_text())
    sidecar = json.loads((DATA / "nvidia--DeepSeek-V3.2-NVFP4" / "hf_quant_config.json").read_text())
    sidecar["quantization"]["exclude_modules"].append("model.layers.3.self_attn.o_proj")
    glm_like = parse_config({**config, "quantization_config": sidecar})
    assert weight_format(glm_like, "auto").role_bytes("attention") == 2.0


def test_mixed_precision_sidecar_gives_each_role_its_own_format() -> None:
    # nvidia/Qwen3.6-35B-A3B-NVFP4: attention and DeltaNet projections FP8 per-tensor, experts, shared
    # experts and lm_head W4A16_NVFP4 g16.
    spec = spec_of("nvidia--Qwen3.6-35B-A3B-NVFP4")
    q = spec.quantization
    assert q is not None and q.method == "modelopt-mixed"
    assert dict((role, algo) for role, algo, _ in q.mixed) == {
        "attention": "FP8",
        "experts": "W4A16_NVFP4",
        "lm_head": "W4A16_NVFP4",
        "shared_experts": "W4A16_NVFP4",
    }
    fmt = weight_format(spec, "auto")
    for role, per in (("attention", 1.0), ("experts", NVFP4), ("shared_experts", NVFP4), ("mlp", 2.0)):
        assert fmt.role_bytes(role) == per
    c = spec.params
    linear = c.attention * 1.0 + (c.experts + c.shared_experts + c.lm_head) * NVFP4 + 2.0 * c.mlp
    assert weights_bytes(spec, fmt, 1) == int(linear + bf16_rest(spec) + rope_cache_bytes(spec, fmt))


def test_the_inline_config_and_the_sidecar_agree() -> None:
    # the same checkpoint states its quantization twice (ModelOpt 0.31+ inline, and the sidecar)
    inline = parse_config(json.loads((DATA / "nvidia--Qwen3.6-35B-A3B-NVFP4" / "config.json").read_text()))
    assert inline.quantization is not None
    assert inline.quantization.mixed == spec_of("nvidia--Qwen3.6-35B-A3B-NVFP4").quantization.mixed  # type: ignore[union-attr]


def test_modelopt_inline_without_quant_method_is_named_by_its_producer() -> None:
    # Qwen/Qwen3-32B-FP8-Static-PerTensor: quantization_config with producer modelopt and no
    # quant_method (vLLM names it from the producer). Before: "unsupported quant_method ''".
    spec = spec_of("Qwen--Qwen3-32B-FP8-Static-PerTensor")
    assert spec.quantization is not None and spec.quantization.per_tensor


def test_nvfp4_moe_keeps_its_dense_mlp_and_attention_bf16_when_excluded() -> None:
    # nvidia/Gemma-4-26B-A4B-NVFP4 excludes `layers.N.mlp*` and `self_attn*`: only the experts are NVFP4
    # (Gemma 4's `mlp` is the dense MLP beside the experts, which gpusize counts as a shared expert)
    spec = spec_of("nvidia--Gemma-4-26B-A4B-NVFP4")
    fmt = weight_format(spec, "auto")
    assert fmt.role_bytes("experts") == NVFP4
    assert spec.params.shared_experts > 0 and fmt.role_bytes("shared_experts") == 2.0
    assert fmt.role_bytes("attention") == 2.0


@pytest.mark.parametrize(
    ("name", "roles"),
    [
        ("model.layers.61*", ()),  # DeepSeek's MTP layer, past its 61 decoder layers
        ("model.layers.0*", ("attention", "mlp")),  # a whole dense layer (GLM-5.1, Kimi)
        ("mtp.layers.0*", ()),
        ("model.language_model.layers.3.mlp.shared_expert_gate", ("shared_experts",)),
        ("model.layers.3.mlp.gate", ()),  # the router
        ("backbone.layers.4.mixer.in_proj", ("attention",)),  # Nemotron-H Mamba-2 projection
        ("backbone.layers.4.mixer.experts.3.up_proj", ("experts",)),
        ("language_model.lm_head", ("lm_head",)),
        ("model.visual*", ()),
    ],
)
def test_module_names_map_onto_roles(name: str, roles: tuple[str, ...]) -> None:
    assert modelopt_roles(name, 61) == roles


def test_format_bytes_are_exact() -> None:
    assert algo_bytes("NVFP4", 16) == 0.5625
    assert algo_bytes("FP8", 16) == 1.0
    assert algo_bytes("MXFP8", 32) == 1 + 1 / 32
    assert algo_bytes("FP8_PB_WO", 0) == 1 + 4 / (128 * 128)


def test_unknown_modelopt_format_is_refused_naming_the_field() -> None:
    config = load_config(DATA / "nvidia--Llama-3.1-70B-Instruct-FP8")
    config["quantization_config"]["quantization"]["quant_algo"] = "INT4_AWQ"
    with pytest.raises(ConfigError, match=r"hf_quant_config.json quantization: 'quant_algo'.*INT4_AWQ"):
        parse_config(config)


@pytest.mark.skipif(not MC.is_dir(), reason="the aiconfigurator model_configs copy is not on this machine")
def test_every_modelopt_config_parses_with_its_quantization(tmp_path: Path) -> None:
    sidecars = sorted(MC.glob("*_hf_quant_config.json"))
    assert sidecars
    for sidecar in sidecars:
        name = sidecar.name.removesuffix("_hf_quant_config.json")
        folder = tmp_path / name
        folder.mkdir()
        (folder / "config.json").write_bytes((MC / f"{name}_config.json").read_bytes())
        (folder / "hf_quant_config.json").write_bytes(sidecar.read_bytes())
        spec = parse_config(load_config(folder))
        assert spec.quantization is not None, name


def test_the_roles_an_exclude_list_keeps_are_matched_when_parsed() -> None:
    """`QuantSpec.modelopt_skipped` is the exclude list matched name by name for the parsed model
    (its layer count and family), for every ModelOpt checkpoint of the catalog, stored or parsed; any
    other checkpoint has none (its `not_converted` is read by role, in core/weights/checkpoint.py)."""
    from gpusize.core.modelopt import modelopt_skipped
    from gpusize.core.parse import parse_config
    from gpusize.sources.catalog import Catalogs

    quantized = [m for m in Catalogs().parsed_models() if m.spec and m.spec.quantization]
    assert sum(1 for m in quantized if m.spec and m.spec.quantization and m.spec.quantization.modelopt) >= 20
    for m in quantized:
        spec = parse_config(m.config)
        q = spec.quantization
        assert q is not None and m.spec == spec
        want = modelopt_skipped(q.not_converted, len(spec.layers), spec.family) if q.modelopt else ()
        assert q.modelopt_skipped == want, m.name
    assert modelopt_skipped(("model.layers.61*", "model.layers.0.mlp"), 61, "gemma4_text") == (
        "mlp",
        "shared_experts",
    )  # the MTP layer numbered after the decoder keeps nothing; Gemma 4's mlp is its shared expert
