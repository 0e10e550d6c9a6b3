"""The training step model (gpusize/training/speed.py) against the published throughputs of
tests/data/training_speed_records.yaml, through the fit and leave-one-source-out harness of
bench/calibrate_training_speed.py: the generated constants are the fit of today's records, every
held-out record sits where the LOSO run says, and the model's structure (dequantization, collectives,
monotone scaling) holds."""

from __future__ import annotations

import importlib.util
import inspect
import json
import sys
from dataclasses import replace
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusize.core.parse import parse_config
from gpusize.reports.train import time_info
from gpusize.sources.catalog import find_gpu, find_model
from gpusize.training import speed, speed_fit, time_cost
from gpusize.training.setup import TrainSetup
from tests.helpers import cli

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "bench" / "results" / "train_speed_loso.json"


@cache
def harness() -> ModuleType:
    path = ROOT / "bench" / "calibrate_training_speed.py"
    spec = importlib.util.spec_from_file_location("calibrate_training_speed", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@cache
def summary() -> dict[str, Any]:
    h = harness()
    return dict(h.summary(h.load_cases()))


def test_records_are_many_and_sourced() -> None:
    h = harness()
    cases = h.load_cases()
    assert len(cases) >= 15 and len({c.source for c in cases}) >= 5
    for c in cases:
        assert c.raw["url"].startswith("https://github.com/") and "/blob/" in c.raw["url"], c.id
        assert c.measured > 0 and c.raw["figure"], c.id


def test_the_generated_constants_are_the_fit_of_the_records() -> None:
    s = summary()
    assert s["fit"]["efficiency"] == speed_fit.EFFICIENCY
    assert s["fit"]["arch_factor"] == speed_fit.ARCH_FACTOR
    assert s["fit"]["overlap"] == speed_fit.OVERLAP
    assert s["fit"]["contention"] == speed_fit.CONTENTION
    assert round(s["loso_mean_error"], 4) == speed_fit.LOSO_MEAN_ERROR
    assert tuple(s["range"]) == speed_fit.RANGE


def test_held_out_records_sit_in_the_reported_range() -> None:
    """Each record predicted by the fit without its source: 8 in 10 inside RANGE (the interval the
    output prints), none worse than the worst error bench/results/train_speed_loso.json reports."""
    h = harness()
    recorded = json.loads(RESULTS.read_text())
    s = summary()
    low, high = speed_fit.RANGE
    cases = h.load_cases()
    inside = sum(low <= c.measured / s["predicted"][c.id] <= high for c in cases)
    assert inside >= 0.8 * len(cases)
    for c in cases:
        assert abs(s["predicted"][c.id] / c.measured - 1) <= recorded["loso_worst_error"] + 1e-9, c.id
        assert s["predicted"][c.id] == pytest.approx(recorded["predicted"][c.id], rel=1e-9), c.id


def test_no_constant_of_the_time_model_is_an_assumed_utilization() -> None:
    """The issue: ASSUMED_MFU = 0.40 and SCALING_PER_DOUBLING came from a hypothetical example."""
    for name in ("ASSUMED_MFU", "SCALING_PER_DOUBLING", "scaling_efficiency", "training_hours"):
        assert not hasattr(time_cost, name)
    for module in (speed, time_cost):
        assert "0.97" not in inspect.getsource(module) and "0.8**0.5" not in inspect.getsource(module)


def test_held_out_scaling_is_within_ten_points() -> None:
    """The issue's bar: per-GPU throughput on more GPUs relative to the same job on fewer, predicted by
    the fit without the series' source, within 10 points of the measured ratio; series run from 1
    GPU to 4 (vectorlm) and from 1 GPU to 8 of one server (lambda). Not held to it: a measured
    per-GPU gain above 10% (the model's per-GPU rate never rises but by the optimizer's share; xtuner
    4 -> 8, stated conditions equal) and pairs with an `anomaly` record (the pairs are printed apart
    with its reason)."""
    s = summary()
    pairs = s["scaling"]
    assert pairs and any(a.endswith("-1gpu-bs8") and "-4gpu-" in b for a, b, _, _ in pairs)
    assert any(a.endswith("-1gpu") and b.endswith("-8gpu") for a, b, _, _ in pairs)
    for a, b, measured, predicted in pairs:
        if measured <= 1.10:
            assert abs(predicted - measured) <= 0.10, (a, b)
    h = harness()
    flagged = {c.id for c in h.load_cases() if c.raw.get("anomaly")}
    assert all(c.raw["anomaly"].strip() for c in h.load_cases() if c.raw.get("anomaly"))
    assert not flagged & {x for a, b, _, _ in pairs for x in (a, b)}
    assert {x for a, b, _, _ in s["scaling_anomalous"] for x in (a, b)} >= flagged


def test_contention_slows_compute_only_with_peers() -> None:
    """CONTENTION: a lone GPU runs no collective kernels beside its GEMMs; with peers, compute takes
    1 / (1 - CONTENTION) as long."""
    job = TrainSetup("full", 2048, batch=2, sharding="fsdp")
    fit = replace(speed.DEFAULT_FIT, contention=0.1)
    none = replace(speed.DEFAULT_FIT, contention=0.0)
    one, one0 = speed.step_time(SPEC8, job, H100, 1, fit=fit), speed.step_time(SPEC8, job, H100, 1, fit=none)
    two, two0 = speed.step_time(SPEC8, job, H100, 2, fit=fit), speed.step_time(SPEC8, job, H100, 2, fit=none)
    assert one and one0 and two and two0
    assert one.compute_s == pytest.approx(one0.compute_s)
    assert two.compute_s == pytest.approx(two0.compute_s / 0.9)


SPEC8 = parse_config(find_model("Llama-3.1-8B").config)
H100, A100, L40S = find_gpu("H100-SXM"), find_gpu("A100-80GB"), find_gpu("L40S")


def test_qlora_dequantization_is_its_own_term() -> None:
    qlora = TrainSetup("qlora", 2048, batch=2, grad_ckpt=True, sharding="none")
    per_pass = SPEC8.params.linear * speed.DEQUANT_BYTES_PER_PARAM / (A100.bandwidth_gbps or 0) / 1e9
    assert speed.dequant_seconds(SPEC8, qlora, A100) == pytest.approx(3 * per_pass)
    assert speed.dequant_seconds(SPEC8, replace(qlora, grad_accum=4), A100) == pytest.approx(12 * per_pass)
    assert speed.dequant_seconds(SPEC8, replace(qlora, method="lora"), A100) == 0.0


def test_fsdp_gathers_the_frozen_base_under_lora() -> None:
    lora = TrainSetup("lora", 2048, sharding="fsdp")
    assert speed.collective_bytes(SPEC8, lora, "fsdp", 8) > 7 / 8 * 2 * 2 * SPEC8.params.total
    assert speed.collective_bytes(SPEC8, lora, "ddp", 8) < 0.1 * speed.collective_bytes(
        SPEC8, lora, "fsdp", 8
    )
    assert speed.collective_bytes(SPEC8, lora, "fsdp", 1) == 0.0


@settings(max_examples=60, deadline=None)
@given(
    method=st.sampled_from(("full", "lora", "qlora")),
    sharding=st.sampled_from(("none", "ddp", "zero1", "zero2", "zero3", "fsdp")),
    gpu=st.sampled_from((H100, A100, L40S)),
    batch=st.integers(1, 8),
    seq=st.sampled_from((256, 1024, 4096, 16384)),
    accum=st.integers(1, 8),
)
def test_more_gpus_never_lower_the_jobs_throughput(
    method: str, sharding: str, gpu: Any, batch: int, seq: int, accum: int
) -> None:
    """From 2 GPUs on, doubling the data-parallel GPUs never lowers the job's total tokens/s, on any
    link and sharding: the exposed collectives grow as (n - 1) / n, bounded. (From 1 to 2 it can:
    the collectives appear.)"""
    job = TrainSetup(method, seq, batch=batch, grad_accum=accum, sharding=sharding)  # type: ignore[arg-type]
    totals = []
    for n in (2, 4, 8):
        step = speed.step_time(SPEC8, job, gpu, n)
        assert step is not None
        totals.append(n * step.tokens_per_s)
    assert totals == sorted(totals)


def test_the_report_hours_are_the_step_model_with_their_range() -> None:
    job = TrainSetup("lora", 4096, batch=2, sharding="none")
    info = time_info(SPEC8, job, H100, 10**9)
    one = speed.step_time(SPEC8, job, H100, 1)
    assert one is not None
    low, high = speed_fit.RANGE
    first = info.rows[0]
    assert first.hours == pytest.approx(10**9 / one.tokens_per_s / 3600)
    assert first.hours_low == pytest.approx(first.hours / high)
    assert first.hours_high == pytest.approx(first.hours / low)
    assert info.mfu == pytest.approx(speed.efficiency(H100, job), abs=1e-4)
    assert "estimate" in info.estimate and f"{low:.2f}-{high:.2f}" in info.estimate
    assert [r.num_gpus for r in info.rows] == [1, 2, 4, 8]
    assert all(r.scaling_efficiency <= 1.01 for r in info.rows)


def test_train_says_the_time_is_an_estimate_with_its_range() -> None:
    result = cli("train", "Llama-3.1-8B", "--method", "lora", "--gpu", "H100", "--tokens", "100m")
    assert result.code == 0, result.stderr
    low, high = speed_fit.RANGE
    text = " ".join(result.stdout.split())
    assert "estimate" in text and f"{low:.2f}-{high:.2f}x" in text


def test_an_architecture_without_records_says_so() -> None:
    job = TrainSetup("qlora", 2048, sharding="none")
    ada = find_gpu("RTX4090")
    assert ada.architecture not in speed_fit.ARCH_FACTOR
    assert f"no published record on {ada.architecture}" in time_info(SPEC8, job, ada, 10**8).estimate
    assert "no published record" not in time_info(SPEC8, job, H100, 10**8).estimate
