"""Parameter counts against the published figures of the reference configs (tests/data/reference/configs,
a copy of the project's shared reference data), exactly."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpusize.core.params import count_params
from gpusize.core.parse import parse_config
from tests.conftest import REFERENCE, load_reference, reference_configs

#: Where the published total includes tensors the config does not describe, the config-derived
#: count the file's `notes` state (exact integers quoted from those notes).
CONFIG_DERIVED = {
    "Qwen__Qwen3-0.6B.json": 596_049_920,  # stored duplicate lm_head excluded
    "Qwen__Qwen3-1.7B.json": 1_720_574_976,
    "Qwen__Qwen3-Next-80B-A3B-Instruct.json": 79_674_391_296,  # MTP excluded
    "deepseek-ai__DeepSeek-V3.json": 671_026_419_200,  # MTP + FP8 scales excluded
    "deepseek-ai__DeepSeek-R1.json": 671_026_419_200,
    # DeepSeek-V3 + 61 layers x 13,959,424 indexer parameters; MTP + FP8 scales excluded
    "deepseek-ai__DeepSeek-V3.2.json": 671_877_944_064,
    "zai-org__GLM-5.json": 743_911_218_432,  # MTP layer excluded (the Hub total minus 9,952,920,576)
    "moonshotai__Kimi-K2-Instruct.json": 1_026_408_232_448,  # FP8 scales excluded
    "zai-org__GLM-4.5-Air.json": 106_852_251_264,  # MTP layer and its copies excluded
    # Kimi-K3: the checkpoint stores A_log as 128 entries for 96 heads (69 KDA layers x 32 more)
    "moonshotai__Kimi-K3.json": 2_779_931_834_976,
    "Qwen__Qwen3.5-27B.json": 27_356_728_560,  # MTP layer excluded
    "Qwen__Qwen3.5-35B-A3B.json": 35_107_181_936,  # MTP layer excluded
    # the Hub total leaves out the routers' e_score_correction_bias (23 MoE layers x 128)
    "nvidia__NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.json": 31_577_940_288,
    # the text tower alone: Pixtral tower, Mistral3 projector and 19,008 FP8 scale elements excluded
    "mistralai__Mistral-Small-4-119B-2603.json": 118_972_826_624,
}

#: Published active-parameter figures that are exact: OpenAI's gpt-oss model card (3.61B, 5.13B,
#: rounded to 10M) - active excludes the input embedding lookup table.
ACTIVE_PUBLISHED = {"openai__gpt-oss-20b.json": 3.61e9, "openai__gpt-oss-120b.json": 5.13e9}


def _expected(path: Path) -> int | None:
    data = load_reference(path)
    return CONFIG_DERIVED.get(path.name, data["true_params"])


@pytest.mark.parametrize("path", reference_configs(), ids=lambda p: p.stem)
def test_params_total_matches_published_count(path: Path) -> None:
    expected = _expected(path)
    counts = count_params(parse_config(load_reference(path)["config"]))
    if expected is None:
        pytest.skip("no exact published count in the reference file")
    assert counts.total == expected


@pytest.mark.parametrize("name", sorted(ACTIVE_PUBLISHED))
def test_gpt_oss_active_matches_model_card(name: str) -> None:
    counts = count_params(parse_config(load_reference(REFERENCE / "configs" / name)["config"]))
    assert abs(counts.active - ACTIVE_PUBLISHED[name]) < 0.005e9


def test_mtp_layer_of_glm_matches_notes() -> None:
    """GLM-4.5-Air notes: the stored MTP layer is 2,375,059,584 parameters."""
    path = REFERENCE / "configs" / "zai-org__GLM-4.5-Air.json"
    assert count_params(parse_config(load_reference(path)["config"])).mtp == 2_375_059_584


def test_moe_active_counts() -> None:
    """Qwen3-30B-A3B: 48 layers x 8 of 128 experts; active = total - 120 idle experts per layer
    - the input embedding table."""
    path = REFERENCE / "configs" / "Qwen__Qwen3-30B-A3B.json"
    spec = parse_config(load_reference(path)["config"])
    counts = count_params(spec)
    per_expert = 3 * 2048 * 768
    assert counts.active == counts.total - 48 * 120 * per_expert - 151936 * 2048
    assert counts.active < counts.total
