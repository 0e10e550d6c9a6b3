"""Prefill's matmuls at a fraction of the dense peak per GPU architecture family, and the routed experts'
grouped GEMMs at their own share of it (`calibrated.EngineSpeed.prefill_mfu_by_family`,
`EngineSpeed.expert_mfu_ratio`, `throughput.matmul_seconds`; fitted on the gpustack performance lab's
fixed-length bursts, bench/VALIDATION.md 2026-12-04)."""

from __future__ import annotations

import pytest

from gpusize.core.workload import Workload
from gpusize.dataclass import replace
from gpusize.serving import calibrated, throughput
from gpusize.sources.catalog import find_gpu
from tests.helpers import catalog_spec, workload

H100, A100, B200 = find_gpu("H100-SXM"), find_gpu("A100-80GB"), find_gpu("B200")
VLLM = calibrated.engine_speed("vllm")


def _at(work: Workload, version: str) -> Workload:
    return replace(work, engine=replace(work.engine, version=version))


#: A release the Hopper MFU was fitted on (vLLM 0.10-0.11), and the default (0.33.0), past it.
OLD = _at(workload(catalog_spec("Qwen3-8B"), 4096), "0.11.0")
NEW = workload(catalog_spec("Qwen3-8B"), 4096)


def test_a_family_without_its_own_mfu_takes_the_engines() -> None:
    assert throughput.architecture_family(H100) == "Hopper"
    assert throughput.prefill_mfu(VLLM, H100, OLD) == VLLM.prefill_mfu_by_family["Hopper"] < VLLM.prefill_mfu
    assert throughput.prefill_mfu(VLLM, A100, OLD) == VLLM.prefill_mfu
    assert throughput.prefill_mfu(VLLM, B200, OLD) == VLLM.prefill_mfu  # no Blackwell record: the general one
    # SGLang runs its own prefill kernels: neither vLLM's Hopper share nor its experts' (calibration OWN)
    sglang = calibrated.engine_speed("sglang")
    assert throughput.prefill_mfu(sglang, H100, OLD) == sglang.prefill_mfu and sglang.expert_mfu_ratio == 1.0


def test_a_dense_model_runs_its_active_weights_at_the_familys_mfu() -> None:
    spec = catalog_spec("Qwen3-32B")
    assert throughput.routed_active_params(spec) == 0
    peak = 989e12
    got = throughput.matmul_seconds(spec, VLLM, H100, OLD, 8192, peak)
    assert got == pytest.approx(2 * spec.params.active * 8192 / (peak * VLLM.prefill_mfu_by_family["Hopper"]))


def test_the_routed_experts_run_at_their_share_of_it() -> None:
    spec = catalog_spec("Qwen3-30B-A3B")
    moe = spec.moe
    assert moe is not None
    routed = throughput.routed_active_params(spec)
    # top-8 of 128 experts of 3 x 2048 x 768 weights in each of the 48 MoE layers
    assert routed == 8 * 3 * 2048 * 768 * 48 == moe.num_experts_per_tok * 3 * 2048 * 768 * 48
    assert 0 < routed < spec.params.active
    peak, mfu, ratio = 312e12, VLLM.prefill_mfu, VLLM.expert_mfu_ratio
    expected = 2 * 1000 * (spec.params.active - routed + routed / ratio) / (peak * mfu)
    assert throughput.matmul_seconds(spec, VLLM, A100, OLD, 1000, peak) == pytest.approx(expected)
    # at a ratio of 1 the experts are priced as dense weights
    as_dense = replace(VLLM, expert_mfu_ratio=1.0)
    assert throughput.matmul_seconds(spec, as_dense, A100, OLD, 1000, peak) == pytest.approx(
        2 * 1000 * spec.params.active / (peak * mfu)
    )


def test_prefill_and_the_compute_bound_decode_step_share_the_rule() -> None:
    """The prompt's matmuls (prefill_seconds) are `matmul_seconds` over its tokens on the TP GPUs."""
    spec = catalog_spec("Qwen3-30B-A3B")
    work = _at(workload(spec, 4096), "0.11.0")
    t = throughput.prefill_seconds(spec, work, H100, 1, 4096)
    assert t is not None
    matmuls = throughput.matmul_seconds(spec, VLLM, H100, work, 4096, H100.bf16_tflops * 1e12)
    assert matmuls < t < 1.5 * matmuls  # plus attention, all-reduces (none at TP=1) and nothing else


def test_a_release_after_the_familys_records_takes_the_engines_mfu() -> None:
    """vLLM's Hopper MFU was fitted on 0.10-0.11 records (`family_mfu_through`): the default release,
    0.33.0, and 0.12.0 take the general one, which the vLLM blog's 0.19.1 20k-token prompts on an H100
    agree with; 0.11.2 is still 0.11's."""
    assert VLLM.family_mfu_through == "0.11"
    assert throughput.prefill_mfu(VLLM, H100, NEW) == VLLM.prefill_mfu
    assert throughput.prefill_mfu(VLLM, H100, _at(NEW, "0.12.0")) == VLLM.prefill_mfu
    hopper = VLLM.prefill_mfu_by_family["Hopper"]
    assert throughput.prefill_mfu(VLLM, H100, _at(NEW, "0.11.2")) == hopper
    assert throughput.prefill_mfu(VLLM, H100, _at(NEW, "0.9.2")) == hopper


def test_the_release_scope_is_the_newest_release_of_the_familys_records() -> None:
    """`family_mfu_through` is not chosen: it is the newest vLLM release (major.minor) among the
    calibration records on Hopper whose first-token figures fit the family's MFU."""
    from bench import calibrate_throughput as cal

    releases = {
        cal.vllm_release(r)
        for r in cal.calibration_records(("vllm",))
        if any(cal.fit_class(r, f) == "ttft" and f not in r.known_miss for f in r.figures)
        and throughput.architecture_family(cal.scenario(r.id).gpu) == "Hopper"
    }
    newest = max(releases, key=lambda v: tuple(int(p) for p in v.split(".")[:2]))
    assert ".".join(newest.split(".")[:2]) == VLLM.family_mfu_through
