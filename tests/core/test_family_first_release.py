"""The first SGLang and vLLM release that serves each model family added in 2026 (or later than the
first release gpusize models), read in the releases' wheels on PyPI (bench/engine_families.py: the
SGLang module of sglang/srt/models/ whose EntryClass registers the architecture, vLLM's
model_executor/models/registry.py). A release before it is refused (exit 2) with one line naming the
first release that runs the family; that release itself is accepted."""

from __future__ import annotations

from typing import Any

import pytest

from gpusize.core.engines import prepare
from gpusize.core.parse import parse_config
from gpusize.core.settings import EngineSettings
from gpusize.core.spec import ModelSpec
from gpusize.core.workload import Request
from gpusize.errors import InputError
from tests.core.test_family_falcon_h1 import TINY as FALCON_H1
from tests.core.test_family_granite import TINY as GRANITE_H
from tests.helpers import catalog_spec, cli

CATALOG = {
    "qwen3_5_text": "Qwen3.5-27B",
    "qwen3_5_moe_text": "Qwen3.5-35B-A3B",
    "nemotron_h": "Nemotron-H-56B-Base-8K",
    "nemotron_h:moe": "NVIDIA-Nemotron-3-Nano-30B-A3B-BF16",
    "kimi_linear": "Kimi-Linear-48B-A3B-Instruct",
    "deepseek_v32": "DeepSeek-V3.2",
    "glm_moe_dsa": "GLM-5",
    "deepseek_v4": "DeepSeek-V4-Flash",
    "gemma4_text": "gemma-4-31B-it",
    "mimo_v2_flash": "MiMo-V2-Flash",
    "step3p7": "Step-3.7-Flash",
    "minimax_m3": "MiniMax-M3",
    "gemma3_text": "gemma-3-4b-it",
    "glm4_moe": "GLM-4.5-Air",
    "gpt_oss": "gpt-oss-20b",
    "llama4_text": "Llama-4-Scout-17B-16E-Instruct",
    "mimo": "MiMo-7B-Base",
    "minimax_m2": "MiniMax-M2",
    "qwen2_5_vl": "Qwen2.5-VL-3B-Instruct",
    "qwen3": "Qwen3-8B",
    "qwen3_moe": "Qwen3-30B-A3B",
    "qwen3_next": "Qwen3-Next-80B-A3B-Instruct",
    "qwen3_vl_text": "Qwen3-VL-8B-Instruct",
    "qwen3_vl_moe_text": "Qwen3-VL-30B-A3B-Instruct",
    "mistral4": "Mistral-Small-4-119B-2603",
    "nemotron-nas": "Llama-3_3-Nemotron-Super-49B-v1",
    "starcoder2": "starcoder2-7b",
    # gated by architecture (a family served under several)
    "Mistral3ForConditionalGeneration": "Mistral-Small-3.1-24B-Instruct-2503",
    "KimiK25ForConditionalGeneration": "Kimi-K2.5",
    "KimiVLForConditionalGeneration": "Kimi-VL-A3B-Instruct",
    "DeepseekV3ForCausalLM": "DeepSeek-V3",
}
SYNTHETIC: dict[str, dict[str, Any]] = {"granitemoehybrid": GRANITE_H, "falcon_h1": FALCON_H1}

#: (engine, family, the release before the first, the first): read in the wheels.
GATES = [
    ("sglang", "qwen3_5_text", "0.5.8.post1", "0.5.9"),
    ("sglang", "qwen3_5_moe_text", "0.5.8.post1", "0.5.9"),
    ("sglang", "nemotron_h", "0.5.3", "0.5.3.post1"),
    ("sglang", "nemotron_h:moe", "0.5.5.post3", "0.5.6"),
    ("sglang", "kimi_linear", "0.5.4.post1", "0.5.4.post2"),
    ("sglang", "deepseek_v32", "0.5.2", "0.5.3"),
    ("sglang", "glm_moe_dsa", "0.5.8.post1", "0.5.9"),
    ("sglang", "deepseek_v4", "0.5.11", "0.5.12"),
    ("sglang", "gemma4_text", "0.5.10.post1", "0.5.11"),
    ("sglang", "mimo_v2_flash", "0.5.6.post2", "0.5.7"),
    ("sglang", "step3p7", "0.5.12.post1", "0.5.13"),
    ("sglang", "minimax_m3", "0.5.15.post1", "0.5.16"),
    ("sglang", "granitemoehybrid", "0.5.8.post1", "0.5.9"),
    ("sglang", "falcon_h1", "0.5.2", "0.5.3"),
    ("vllm", "qwen3_5_text", "0.16.0", "0.17.0"),
    ("vllm", "qwen3_5_moe_text", "0.16.0", "0.17.0"),
    ("vllm", "nemotron_h", "0.9.0.1", "0.9.1"),
    ("vllm", "nemotron_h:moe", "0.11.0", "0.11.1"),
    ("vllm", "kimi_linear", "0.11.0", "0.11.1"),
    ("vllm", "deepseek_v32", "0.10.2", "0.11.0"),
    ("vllm", "glm_moe_dsa", "0.15.1", "0.16.0"),
    ("vllm", "deepseek_v4", "0.19.1", "0.20.0"),
    ("vllm", "gemma4_text", "0.18.1", "0.19.0"),
    ("vllm", "mimo_v2_flash", "0.13.0", "0.14.0"),
    ("vllm", "step3p7", "0.22.1", "0.23.0"),
    ("vllm", "minimax_m3", "0.23.0", "0.24.0"),
    ("vllm", "granitemoehybrid", "0.8.5.post1", "0.9.0"),
    ("vllm", "falcon_h1", "0.8.5.post1", "0.9.0"),
    # families older than 2026 that came after the oldest modelled release (bench/engine_families.py)
    ("vllm", "gemma3_text", "0.7.3", "0.8.0"),
    ("vllm", "glm4_moe", "0.9.2", "0.10.0"),
    ("vllm", "gpt_oss", "0.10.0", "0.10.1"),
    ("vllm", "llama4_text", "0.8.2", "0.8.3"),
    ("vllm", "mimo", "0.8.5.post1", "0.9.0"),
    ("vllm", "minimax_m2", "0.11.0", "0.11.1"),
    ("vllm", "qwen2_5_vl", "0.7.1", "0.7.2"),
    ("vllm", "qwen3", "0.8.3", "0.8.4"),
    ("vllm", "qwen3_moe", "0.8.3", "0.8.4"),
    ("vllm", "qwen3_next", "0.10.1.1", "0.10.2"),
    ("vllm", "qwen3_vl_text", "0.10.2", "0.11.0"),
    ("vllm", "qwen3_vl_moe_text", "0.10.2", "0.11.0"),
    ("vllm", "Mistral3ForConditionalGeneration", "0.8.2", "0.8.3"),
    ("vllm", "mistral4", "0.11.2", "0.12.0"),
    ("vllm", "KimiK25ForConditionalGeneration", "0.14.1", "0.15.0"),
    ("vllm", "KimiVLForConditionalGeneration", "0.8.4", "0.8.5"),
    ("sglang", "DeepseekV3ForCausalLM", "0.4.0.post1", "0.4.1"),
    ("sglang", "gemma3_text", "0.4.4.post1", "0.4.4.post2"),
    ("sglang", "glm4_moe", "0.4.9.post4", "0.4.9.post5"),
    ("sglang", "gpt_oss", "0.4.10.post2", "0.5.1"),
    ("sglang", "llama4_text", "0.4.4.post4", "0.4.5"),
    ("sglang", "mimo", "0.4.6.post2", "0.4.6.post3"),
    ("sglang", "minimax_m2", "0.5.4", "0.5.4.post1"),
    ("sglang", "nemotron-nas", "0.4.10.post2", "0.5.1"),
    ("sglang", "qwen2_5_vl", "0.4.3", "0.4.3.post1"),
    ("sglang", "qwen3", "0.4.5.post1", "0.4.5.post2"),
    ("sglang", "qwen3_moe", "0.4.5.post1", "0.4.5.post2"),
    ("sglang", "qwen3_next", "0.5.1.post3", "0.5.2"),
    ("sglang", "qwen3_vl_text", "0.5.2", "0.5.3"),
    ("sglang", "qwen3_vl_moe_text", "0.5.2", "0.5.3"),
    ("sglang", "starcoder2", "0.5.2", "0.5.3"),
    ("sglang", "KimiK25ForConditionalGeneration", "0.5.8.post1", "0.5.9"),
    ("sglang", "KimiVLForConditionalGeneration", "0.4.6.post1", "0.4.6.post2"),
]


def _spec(family: str) -> ModelSpec:
    spec = parse_config(SYNTHETIC[family]) if family in SYNTHETIC else catalog_spec(CATALOG[family])
    assert family.split(":")[0] in (spec.family, spec.architecture)
    return spec


def _prepare(spec: ModelSpec, engine: str, version: str) -> None:
    settings = EngineSettings(name=engine, version=version)  # type: ignore[arg-type]
    prepare(spec, Request(context_tokens=64, engine=settings))


@pytest.mark.parametrize(("engine", "family", "before", "first"), GATES)
def test_a_release_before_the_first_is_refused(engine: str, family: str, before: str, first: str) -> None:
    spec = _spec(family)
    with pytest.raises(InputError) as refused:
        _prepare(spec, engine, before)
    line = str(refused.value)
    assert "\n" not in line and f"--engine-version {first} or later" in line and before in line
    _prepare(spec, engine, first)


def test_nemotron_h_without_moe_blocks_runs_before_the_moe_release() -> None:
    _prepare(_spec("nemotron_h"), "sglang", "0.5.5.post3")


@pytest.mark.parametrize("engine, release", [("sglang", "0.5.8"), ("vllm", "0.16.0")])
def test_the_cli_refuses_with_one_line(engine: str, release: str) -> None:
    result = cli("fit", "Qwen3.5-27B", "--ctx", "8k", "--engine", engine, "--engine-version", release)
    assert result.code == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and "Qwen3.5" in result.stderr
