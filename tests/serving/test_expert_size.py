"""The tried per-weight expert cost (`--expert-size`, not adopted: bench/VALIDATION.md): beside the
fixed `expert_s`, `expert_weight_s` per weight of the whole routed expert (core.params.routed_expert_params:
gate, up and down over every TP rank), a cost that grows with the expert's size and is the same at
every tensor-parallel size."""

from __future__ import annotations

import pytest

from gpusize.core import params
from gpusize.serving import calibrated, throughput
from tests.helpers import catalog_spec, qwen3_next_step_gains


@pytest.mark.parametrize(
    ("model", "weights"),
    [
        ("Qwen3-Next-80B-A3B-Instruct", 3 * 2048 * 512),  # 512 experts of 2048 x 512
        ("Qwen3-30B-A3B", 3 * 2048 * 768),
        ("gpt-oss-120b", 3 * 2880 * 2880),
        ("DeepSeek-R1", 3 * 7168 * 2048),
        ("Qwen3-8B", 0),  # dense
    ],
)
def test_expert_weights_are_the_whole_expert(model: str, weights: int) -> None:
    assert params.routed_expert_params(catalog_spec(model)) == weights


def test_off_in_the_published_constants_and_the_same_at_every_tp(monkeypatch: pytest.MonkeyPatch) -> None:
    """Zero in every published engine; set, a step of Qwen3-Next at 8 sequences pays expert_weight_s x
    3 x 2048 x 512 weights x 74.74 touched experts x 48 MoE layers more, at TP=2 as at TP=8."""
    assert all(speed.expert_weight_s == 0.0 for speed in calibrated.ENGINE_SPEED.values())
    spec = catalog_spec("Qwen3-Next-80B-A3B-Instruct")
    runs = 512 * throughput.experts_touched(spec, 8) * 48
    for step, fixed in qwen3_next_step_gains(monkeypatch, expert_weight_s=1e-13).values():
        assert step == pytest.approx(1e-13 * 3 * 2048 * 512 * runs)
        assert fixed == pytest.approx(step)


def test_tried_stage_fits_both_costs(monkeypatch: pytest.MonkeyPatch) -> None:
    """`--expert-size` fits expert_s and expert_weight_s in the vLLM decode stage."""
    from bench import calibrate_throughput as cal

    monkeypatch.setattr(cal, "fit", dict)  # the stages only: the fit itself is the bench's
    monkeypatch.setattr(cal, "STAGES", cal.STAGES)
    monkeypatch.setattr(calibrated, "ENGINE_SPEED", dict(calibrated.ENGINE_SPEED))
    cal.use_expert_size()
    names = [st for st in cal.STAGES if st[0] == ("vllm",) and st[1] == ("decode",)][-1][2]  # its MoE stage
    assert tuple(n for n in names if n.startswith("vllm.expert")) == cal.EXPERT_SIZE_NAMES
