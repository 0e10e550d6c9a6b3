"""The tried per-block expert cost (`--expert-blocks`, not adopted: bench/VALIDATION.md): beside the
fixed `expert_s`, `expert_block_s` per thread block of a touched expert's fused-MoE gate_up GEMM on one
GPU (throughput.expert_column_blocks: ceil(2 x intermediate / tp / BLOCK_N), the part of vLLM's
fused_moe grid that shrinks with tensor parallelism down to one block)."""

from __future__ import annotations

import pytest

from gpusize.serving import calibrated, throughput
from tests.helpers import catalog_spec, qwen3_next_step_gains, workload


@pytest.mark.parametrize(
    ("model", "dtype", "tp", "tokens", "blocks"),
    [
        # Qwen3-Next (expert width 512, BF16, 16 x 32 x 64 tiles at 8 tokens): N = 1024 / tp over 32
        ("Qwen3-Next-80B-A3B-Instruct", "auto", 2, 8, 16),
        ("Qwen3-Next-80B-A3B-Instruct", "auto", 4, 8, 8),
        ("Qwen3-Next-80B-A3B-Instruct", "auto", 8, 8, 4),
        # gpt-oss-120b (2880, MXFP4: matmul_ogs' 128-wide tile): ceil(5760 / tp / 128)
        ("gpt-oss-120b", "auto", 1, 4, 45),
        ("gpt-oss-120b", "auto", 2, 4, 23),
        ("gpt-oss-120b", "auto", 8, 1, 6),
        # GLM-4.6 at TP=8 (1536 wide, BF16): 384 / 32; DeepSeek-R1 FP8 (2048, 128-wide blocks): 512 / 128
        ("GLM-4.6", "auto", 8, 4, 12),
        ("DeepSeek-R1", "auto", 8, 4, 4),
        # the slice reaches one block and stays there
        ("Qwen3-Next-80B-A3B-Instruct", "auto", 64, 8, 1),
    ],
)
def test_gate_up_blocks_shrink_with_tp_down_to_one(
    model: str, dtype: str, tp: int, tokens: int, blocks: int
) -> None:
    spec = catalog_spec(model)
    assert throughput.expert_column_blocks(spec, workload(spec, 4096, dtype=dtype), tp, tokens) == blocks


def test_dense_model_has_no_expert_blocks() -> None:
    spec = catalog_spec("Qwen3-8B")
    assert throughput.expert_column_blocks(spec, workload(spec, 4096), 1, 8) == 0


def test_off_in_the_published_constants_and_adds_blocks_times_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Zero in every published engine; set, a step of Qwen3-Next at TP=2 and 8 sequences pays
    expert_block_s x 16 blocks x 74.74 touched experts x 48 MoE layers more, and at TP=8 a quarter
    of the blocks: the TP=2 step gains four times what the TP=8 step does."""
    assert all(speed.expert_block_s == 0.0 for speed in calibrated.ENGINE_SPEED.values())
    spec = catalog_spec("Qwen3-Next-80B-A3B-Instruct")
    runs = 512 * throughput.experts_touched(spec, 8) * 48
    gains = qwen3_next_step_gains(monkeypatch, expert_block_s=5e-8)
    gained = {tp: step for tp, (step, _) in gains.items()}
    for step, fixed in gains.values():
        assert fixed == pytest.approx(step)
    assert gained[2] == pytest.approx(5e-8 * 16 * runs)
    assert gained[2] == pytest.approx(4 * gained[8])


def test_tried_stage_fits_both_costs_or_pins_the_block_cost(monkeypatch: pytest.MonkeyPatch) -> None:
    """`--expert-blocks` fits expert_s and expert_block_s in the vLLM decode stage; the pinned form
    (`--expert-blocks-pinned`) holds expert_block_s at EXPERT_BLOCK_PINNED_S and fits expert_s."""
    from bench import calibrate_throughput as cal

    monkeypatch.setattr(cal, "fit", dict)  # the stages only: the fit itself is the bench's
    published = cal.STAGES
    for pinned, expected in ((False, cal.EXPERT_BLOCKS_NAMES), (True, ("vllm.expert_s",))):
        monkeypatch.setattr(cal, "STAGES", published)
        monkeypatch.setattr(calibrated, "ENGINE_SPEED", dict(calibrated.ENGINE_SPEED))
        cal.use_expert_blocks(pinned=pinned)
        names = [st for st in cal.STAGES if st[0] == ("vllm",) and st[1] == ("decode",)][-1][
            2
        ]  # its MoE stage
        assert tuple(n for n in names if n.startswith("vllm.expert")) == expected
        block_s = calibrated.engine_speed("vllm").expert_block_s
        assert block_s == (cal.EXPERT_BLOCK_PINNED_S if pinned else 0.0)
