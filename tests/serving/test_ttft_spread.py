"""The spread of the time to first token over a load's requests (`load.FirstTokenSpread`): the
quantiles answers give beside the mean (`Layout.ttft_p50_s`, `ttft_p90_s`) and how they compare with
the median and P99 TTFT that published benchmark runs print (tests/data/throughput_records.yaml
`ttft_median_ms`, `ttft_p99_ms`; left out by source in bench/VALIDATION.md).

The rule has no constant of its own: a burst's requests are served in order, each waiting for the
prefills before it in its wave and for the waves before it; at steady load each request arrives at a
random point of the running decode step. Quantiles are read as `vllm bench serve` reads its requests
(numpy's `percentile`, linear between ranks)."""

from __future__ import annotations

import json
import math

from hypothesis import given
from hypothesis import strategies as st

from bench import calibrate_throughput as cal
from gpusize.serving import load
from gpusize.serving.load import STEADY_P99_OVER_MEDIAN, FirstTokenSpread
from gpusize.sources.catalog import find_gpu
from tests.conftest import ROOT
from tests.helpers import catalog_spec, run_in_process, workload


def _linear_percentile(values: list[float], q: float) -> float:
    """numpy.percentile's default (linear) method, written out."""
    ordered = sorted(values)
    rank = q * (len(ordered) - 1)
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (rank - low) * (ordered[high] - ordered[low])


@given(
    first=st.floats(0.01, 5.0),
    prefill=st.floats(0.001, 2.0),
    batch=st.integers(1, 64),
    requests=st.integers(1, 500),
    decode=st.floats(0.0, 100.0),
    q=st.floats(0.0, 1.0),
)
def test_a_bursts_quantile_is_its_schedules_percentile(
    first: float, prefill: float, batch: int, requests: int, decode: float, q: float
) -> None:
    batch = min(batch, requests)
    wave = batch * prefill + decode  # a wave prefills its batch, then decodes
    spread = FirstTokenSpread(first, prefill, batch, requests, wave)
    served = [first + (i % batch) * prefill + (i // batch) * wave for i in range(requests)]
    assert math.isclose(spread.quantile(q), _linear_percentile(served, q), rel_tol=1e-9, abs_tol=1e-12)


@given(q=st.floats(0.0, 1.0), r=st.floats(0.0, 1.0))
def test_quantiles_rise_with_the_share_of_requests(q: float, r: float) -> None:
    low, high = sorted((q, r))
    for spread in (FirstTokenSpread(0.5, wave_s=0.02), FirstTokenSpread(0.1, 0.05, 8, 100, 3.0)):
        assert spread.quantile(low) <= spread.quantile(high) + 1e-12


def test_a_bursts_schedule_has_the_mean_the_burst_model_gives() -> None:
    """Whole waves: the mean of the schedule is `load.burst`'s mean TTFT."""
    spec = catalog_spec("Qwen2.5-7B")
    work = workload(spec, 4096)
    point = load.burst(spec, work, find_gpu("A100-80GB"), 1, 64, 1024, 1024, 16)
    assert point is not None and point.spread is not None and point.ttft_s is not None
    s = point.spread
    # whole waves of 16, each prompt waiting for the steps of the budget before its own
    waited = [load.packed_prompts(i % s.batch, s.batch, s.per_step) - 1 for i in range(64)]
    served = [s.first_s + w * s.prefill_s + (i // s.batch) * s.wave_s for i, w in enumerate(waited)]
    assert math.isclose(sum(served) / len(served), point.ttft_s, rel_tol=1e-9)


def test_at_steady_load_the_median_is_the_mean_give_or_take_half_a_step() -> None:
    spec = catalog_spec("Llama-3.1-8B")
    point = load.steady(spec, workload(spec, 8192), find_gpu("H100-SXM"), 1, 16, 1024, 256, 64)
    assert point is not None and point.ttft_s is not None
    step = point.step.step_s
    assert point.ttft_quantile(0.5) == point.ttft_s
    assert math.isclose(point.ttft_quantile(0.9) or 0.0, point.ttft_s + 0.4 * step)
    assert math.isclose(point.ttft_quantile(1.0) or 0.0, point.ttft_s + step / 2)


def test_the_stated_steady_tail_holds_every_published_steady_run() -> None:
    """STEADY_P99_OVER_MEDIAN, which the text answer states, spans the records it cites."""
    ratios = [
        r.figures["ttft_p99_ms"] / r.figures["ttft_median_ms"]
        for r in cal.load_records()
        if r.id.startswith("gs-")
        and r.use["scenario"] == "steady"
        and {"ttft_p99_ms", "ttft_median_ms"} <= set(r.figures)
    ]
    assert len(ratios) >= 10
    low, high = STEADY_P99_OVER_MEDIAN
    assert low <= min(ratios) < low + 0.05 and high - 0.1 < max(ratios) <= high


def test_the_recorded_validation_pins_the_spread_figures() -> None:
    """Left out by source, without known misses (bench/results/loso.json, bench/VALIDATION.md): P99
    within 30% on average; the median within 50% (bursts beyond the KV pool's capacity admit a larger
    first wave than the model's even waves, so their medians come out 2-5x long)."""
    rows = json.loads((ROOT / "bench" / "results" / "loso.json").read_text())["rows"]

    def mean_error(metric: str) -> float:
        errors = [
            abs(r["predicted"] / r["measured"] - 1)
            for r in rows
            if r["metric"] == metric and not r["known_miss"]
        ]
        assert len(errors) >= 25
        return sum(errors) / len(errors)

    assert mean_error("ttft_p99") <= 0.30
    assert mean_error("ttft_p50") <= 0.50


def test_serve_gives_the_quantiles_beside_the_mean() -> None:
    proc = run_in_process("serve", "Llama-3.1-8B", "--gpu", "H100", "--users", "64", "--json")
    layouts = json.loads(proc.stdout)["layouts"]
    for layout in layouts:
        if layout["ttft_s"] is not None:
            assert layout["ttft_p50_s"] == layout["ttft_s"] <= layout["ttft_p90_s"]
    text = run_in_process("serve", "Llama-3.1-8B", "--gpu", "H100", "--users", "64").stdout
    assert "nine in ten within" in " ".join(text.split())
