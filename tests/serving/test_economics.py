"""Cost and scaling arithmetic (the single- vs multi-GPU servers article's worked example) and the
Huananzhi GPU-server guide's power examples (golden figures)."""

from __future__ import annotations

from gpusize.serving import economics


def test_cost_of_a_job() -> None:
    """$1/h single GPU x 100 h = $100; 4-GPU server at $4/h with a measured 3.2x speedup:
    100 / 3.2 = 31.25 h and $125, 25% more than one GPU; scaling efficiency 3.2 / 4 = 80%."""
    assert economics.job_cost(1.0, 100) == 100
    assert economics.multi_gpu_hours(100, 3.2) == 31.25
    assert economics.multi_gpu_job_cost(4.0, 100, 3.2) == 125
    assert economics.scaling_efficiency(3.2, 4) == 0.8


def test_guide_four_rtx_4090_power() -> None:
    """4x RTX 4090 = 1800 W of GPUs + CPU 200-350 W + platform -> 2300-2500 W; 2x 1600 W PSU."""
    plan = economics.power_plan(450, 4)
    assert plan.gpu_w == 1800
    assert plan.total_w_low >= 2300 and plan.total_w_high <= 2500
    assert (plan.psu_modules, plan.psu_module_w) == (2, 1600)


def test_guide_eight_h100_power() -> None:
    """8x H100 SXM = 5600 W; with two CPUs 6300 W; 4x 3000 W (N+1)."""
    plan = economics.power_plan(700, 8)
    assert plan.gpu_w == 5600 and plan.total_w_low == 6300
    assert plan.psu_modules + 1 == 4 and plan.psu_module_w == 3000


def test_cost_per_million_tokens() -> None:
    assert economics.cost_per_million_tokens(3.6, 1000) == 1.0
    assert economics.cost_per_million_tokens(3.6, 0) is None
