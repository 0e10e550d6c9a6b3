"""SGLang's default mem_fraction_static for a vision-language model (core/engines/sglang_vlm.py):
adjust_mem_fraction_for_vlm as server_args.py computes it, with the tower's shape read the way SGLang
reads it from the Hugging Face vision config (a `depth`-named Qwen-VL tower counts as 24 layers)."""

from __future__ import annotations

import json

import pytest

from gpusize.core.engines import engine
from gpusize.core.engines.sglang_defaults import release_version, sglang_defaults
from gpusize.core.engines.sglang_vlm import vit_shape, vlm_fraction
from gpusize.core.parse import parse_config
from gpusize.sources.catalog import find_gpu
from tests.core.test_multimodal_budget import QWEN2_VL_7B
from tests.helpers import catalog_spec, run_in_process, workload


def _factor(layers: int, width: int) -> float:
    """The code's arithmetic: 0.95 x clamp(1 - 0.1 x (layers x width^2 / (24 x 1024^2) - 1), 0.8, 1.05)."""
    ratio = layers * width**2 / (24 * 1024**2)
    return 0.95 * max(0.8, min(1.05, 1.0 - 0.1 * (ratio - 1.0)))


@pytest.mark.parametrize(
    ("name", "shape"),
    [
        ("Qwen3-VL-30B-A3B-Instruct", (24, 1152)),  # depth 27: no num_hidden_layers attribute, 24 taken
        ("Qwen3.5-27B", (24, 1152)),  # Qwen3_5VisionConfig: depth as well
        ("gemma-3-27b-it", (27, 1152)),  # SiglipVisionConfig names num_hidden_layers
    ],
)
def test_the_tower_shape_is_read_as_sglang_reads_it(name: str, shape: tuple[int, int]) -> None:
    v = catalog_spec(name).vision
    assert v is not None
    assert vit_shape(v) == shape
    assert vlm_fraction(0.85, v) == pytest.approx(0.85 * _factor(*shape), abs=1e-12)


def test_qwen2_vl_width_is_its_merged_output() -> None:
    """Qwen2VLVisionConfig: hidden_size 3584 (the merged output), embed_dim 1280 (the tower): SGLang
    squares 3584, and the factor bottoms out at 0.8."""
    v = parse_config(QWEN2_VL_7B).vision
    assert v is not None and v.hidden_size == 1280
    assert vit_shape(v) == (24, 3584)
    assert vlm_fraction(0.85, v) == pytest.approx(0.85 * 0.95 * 0.8)


def test_qwen3_vl_default_fraction_worked_example() -> None:
    """Qwen3-VL-30B-A3B on an H100 at TP=2, SGLang 0.5.23: the text default (server_args' reserve
    formula) x 0.95 x (1 - 0.1 x (1152^2 / 1024^2 - 1)) = x 0.9248; gpusize took depth 27 for SGLang's
    24 (x 0.9097), 1.5 points of the fraction low, about 1.2 GB of KV cache per GPU."""
    spec = catalog_spec("Qwen3-VL-30B-A3B-Instruct")
    gpu = find_gpu("H100")
    v = release_version("0.5.23")
    text = sglang_defaults(gpu, 2, v).mem_fraction_static
    vlm = sglang_defaults(gpu, 2, v, spec).mem_fraction_static
    assert vlm == round(text * 0.95 * (1 - 0.1 * (1152**2 / 1024**2 - 1)), 4)
    before = sglang_defaults(gpu, 2, release_version("0.4.9"), spec).mem_fraction_static
    assert before == sglang_defaults(gpu, 2, release_version("0.4.9")).mem_fraction_static


@pytest.mark.parametrize("name", ["gemma-3-27b-it", "Llama-4-Scout-17B-16E-Instruct"])
def test_gemma3_and_llama4_are_text_only_unless_enable_multimodal(name: str) -> None:
    """configs/model_config.py mm_disabled_models: SGLang serves these text-only by default, so
    server_args leaves their mem_fraction_static as a text model's; --enable-multimodal lowers it."""
    spec = catalog_spec(name)
    gpu = find_gpu("H100")
    v = release_version("0.5.23")
    text = sglang_defaults(gpu, 1, v).mem_fraction_static
    assert sglang_defaults(gpu, 1, v, spec).mem_fraction_static == text
    assert spec.vision is not None
    enabled = sglang_defaults(gpu, 1, v, spec, enable_multimodal=True).mem_fraction_static
    assert enabled == round(vlm_fraction(text, spec.vision), 4) < text


def test_enable_multimodal_reaches_the_pool_and_the_launch_command() -> None:
    spec = catalog_spec("gemma-3-27b-it")
    gpu = find_gpu("H100")
    plain = engine("sglang").evaluate(spec, gpu, 1, workload(spec, 8192, engine_name="sglang"))
    work = workload(spec, 8192, engine_name="sglang", enable_multimodal=True)
    enabled = engine("sglang").evaluate(spec, gpu, 1, work)
    assert plain.kv_cache_capacity_tokens and enabled.kv_cache_capacity_tokens
    assert enabled.kv_cache_capacity_tokens < plain.kv_cache_capacity_tokens
    result = run_in_process(
        "serve",
        "gemma-3-27b-it",
        "--gpu",
        "H100",
        "--ctx",
        "8k",
        "--users",
        "4",
        "--engine",
        "sglang",
        "--enable-multimodal",
        "--json",
    )
    assert result.code in (0, 1), result.stderr
    data = json.loads(result.stdout)
    assert data["workload"]["engine"]["enable_multimodal"] is True
    assert "--enable-multimodal" in json.dumps(data["launch"])
    refused = run_in_process("fit", "gemma-3-27b-it", "--gpu", "H100", "--enable-multimodal")
    assert refused.code == 2 and refused.stdout == "" and refused.stderr.count("\n") == 1
