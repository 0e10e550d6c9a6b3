"""Kimi-K2.5 (`kimi_k25`): the Kimi-K2 decoder with a MoonViT-3D vision tower named by `vt_*` fields.

Worked example from vLLM's vllm/model_executor/models/kimi_k25_vit.py (commit 055e47c2), Kimi-K2.5's
vision_config (vt_hidden_size h = 1152, vt_intermediate_size i = 4304, 27 layers, patch 14, a 64 x 64
position grid, merge 2 x 2, text width 7168):
- patch embedding 3 x 14 x 14 x h + h, positions 64 x 64 x h: 5,397,120;
- each block: two LayerNorms 4h, wqkv 3h^2 + 3h, wo h^2 + h, fc0 h x i + i, fc1 i x h + h: 15,239,504;
- final LayerNorm 2h: the tower 5,397,120 + 27 x 15,239,504 + 2,304 = 416,866,032 (model card: 400M);
- patchmerger projector: LayerNorm 2h, Linear(4h, 4h) and Linear(4h, 7168) with biases: 54,277,888.
"""

from __future__ import annotations

import json

from gpusize.core.parse import parse_config
from gpusize.core.vision import MOONVIT3D
from tests.conftest import REFERENCE, load_reference
from tests.helpers import catalog_spec, cli, workload

TOWER, PROJECTOR = 416_866_032, 54_277_888


def test_vision_tower_is_counted_exactly_from_its_vt_fields() -> None:
    """Before: 'vision_config: missing hidden_size' (exit 2)."""
    spec = parse_config(load_reference(REFERENCE / "configs" / "moonshotai__Kimi-K2.5.json")["config"])
    assert spec.vision is not None and spec.vision.model_type == MOONVIT3D and spec.vision.exact
    assert spec.vision.hidden_size == 1152 and spec.vision.num_hidden_layers == 27
    assert spec.params.vision == TOWER + PROJECTOR


def test_text_tower_is_kimi_k2() -> None:
    k25, k2 = catalog_spec("Kimi-K2.5"), catalog_spec("Kimi-K2-Instruct")
    assert k25.params.total - k25.params.vision == k2.params.total == 1_026_408_232_448


def test_non_square_merge_kernel_is_refused_naming_the_field() -> None:
    config = load_reference(REFERENCE / "configs" / "moonshotai__Kimi-K2.5.json")["config"]
    config = {**config, "vision_config": {**config["vision_config"], "merge_kernel_size": [2, 3]}}
    try:
        parse_config(config)
    except ValueError as exc:
        assert "merge_kernel_size" in str(exc)
    else:
        raise AssertionError("a [2, 3] merge kernel was accepted")


def test_fit_answers_at_32k() -> None:
    result = cli("fit", "Kimi-K2.5", "--ctx", "32k", "--json")
    assert result.code in (0, 1), result.stderr
    assert json.loads(result.stdout)["memory"]["kv_cache_bytes_per_token"] == 61 * 576 * 2


def test_modelopt_nvfp4_builds_parse_with_their_scales() -> None:
    """nvidia's Kimi-K2.5/2.6/2.7 NVFP4 configs (quant_method modelopt). Before: 'unsupported
    quant_method modelopt' (exit 2). NVFP4: 4-bit values + one fp8 scale per 16 = 0.5625 B per weight;
    the ignored self_attn and shared_experts modules stay bf16."""
    for name in ("Kimi-K2.5-NVFP4", "Kimi-K2.6-NVFP4", "Kimi-K2.7-Code-NVFP4"):
        spec = catalog_spec(name)
        assert spec.quantization is not None and spec.quantization.method == "nvfp4"
        work = workload(spec, 32768)
        assert work.weights.linear_bytes == 0.5 + 1 / 16
        assert "attention" in work.weights.unquantized
        assert cli("fit", name, "--ctx", "32k").code in (0, 1)


def test_modelopt_other_than_nvfp4_is_refused_naming_the_field() -> None:
    config = load_reference(REFERENCE / "configs" / "moonshotai__Kimi-K2.5.json")["config"]
    quant = {"quant_method": "modelopt", "quant_algo": "W4A8_AWQ"}
    try:
        parse_config({**config, "quantization_config": quant})
    except ValueError as exc:
        assert "quant_algo" in str(exc)
    else:
        raise AssertionError("W4A8_AWQ was accepted")
