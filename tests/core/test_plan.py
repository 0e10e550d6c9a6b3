"""Planner acceptance: the model-size to GPU-configuration table of the "Несколько GPU" article (the
product's founding document) at 8k context, batch 1, default settings."""

from __future__ import annotations

import pytest

from gpusize.core.parse import parse_config
from gpusize.core.plan import Candidate, split_problem
from gpusize.sources.catalog import find_model
from tests.helpers import smallest

TABLE = [
    ("Qwen3-8B", "auto", "RTX4090", 1),
    ("gpt-oss-20b", "auto", "RTX4090", 1),
    ("Qwen3-14B", "auto", "A100-40GB", 1),
    ("Qwen3-14B", "auto", "RTX4090", 2),
    ("phi-4", "auto", "L40S", 1),
    ("phi-4", "auto", "RTX4090", 2),
    ("Qwen3-32B", "auto", "H100", 1),
    ("Qwen3-32B", "auto", "L40S", 2),
    ("Qwen3-32B", "auto", "RTX4090", 4),
    ("gpt-oss-120b", "auto", "H100", 1),
    ("Llama-3.3-70B", "auto", "H100", 2),
    ("Llama-3.3-70B", "auto", "H200", 2),
    ("Llama-3.3-70B", "auto", "B200", 1),
    ("Qwen3-235B-A22B", "fp8", "H100", 4),
    ("GLM-4.5-Air", "auto", "H100", 4),
    ("GLM-4.5-Air", "auto", "B200", 2),
    ("Qwen3-Coder-480B-A35B", "fp8", "H100", 8),
    ("Qwen3-Coder-480B-A35B", "fp8", "B200", 4),
    ("DeepSeek-V3", "auto", "H200", 8),
]


def _smallest(model: str, dtype: str, gpu: str) -> Candidate:
    return smallest(model, gpu, 8192, dtype)


@pytest.mark.parametrize("model, dtype, gpu, count", TABLE)
def test_table_smallest_counts(model: str, dtype: str, gpu: str, count: int) -> None:
    best = _smallest(model, dtype, gpu)
    assert best.fits and best.num_gpus == count


def test_deepseek_v3_does_not_fit_eight_h100() -> None:
    best = _smallest("DeepSeek-V3", "auto", "H100")
    assert not best.fits and best.num_gpus == 8 and best.reason


def test_split_rules() -> None:
    spec = parse_config(find_model("Qwen3-235B-A22B-FP8").config)
    # 1536 expert columns / 8 = 192, not a multiple of the 128-wide FP8 blocks (vLLM refuses it)
    assert "FP8 blocks" in (split_problem(spec, 8, (128, 128)) or "")
    phi = parse_config(find_model("phi-4").config)  # 40 heads, 10 KV heads
    assert split_problem(phi, 2, None) is None
    assert "KV heads" in (split_problem(phi, 4, None) or "")  # 10 % 4 and 4 % 10
    assert "KV heads" in (split_problem(phi, 8, None) or "")
    nemo = parse_config(find_model("Mistral-Large-Instruct-2407").config)  # 96 heads
    assert split_problem(nemo, 8, None) is None
