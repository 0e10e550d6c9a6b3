"""The ranges printed with speed answers (gpusize/serving/speed_ranges.py, serving/load.speed_range):
out of sample by source, per group (engine, dense/MoE, concurrency band, metric), generated from the
recorded leave-one-source-out run (bench/results/loso.json; the run itself is
`python bench/calibrate_throughput.py --loso --write-ranges`)."""

from __future__ import annotations

import json
import math
import statistics
from typing import Any

import pytest

from bench import calibrate_throughput as cal
from gpusize.serving import load, speed_ranges
from tests.helpers import run_in_process


def _document() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(cal.LOSO_RESULTS.read_text())
    return data


def test_the_table_is_what_the_recorded_loso_run_yields() -> None:
    """speed_ranges.py is exactly the module the recorded LOSO result gives: regenerate it with
    `python bench/calibrate_throughput.py --loso --write-ranges` (or `--from-results`)."""
    document = _document()
    assert cal.RANGES_MODULE.read_text() == cal.ranges_module(document)
    assert document["generated"] == speed_ranges.GENERATED


def test_the_recorded_run_covers_every_record_of_today() -> None:
    """Every figure of every record with a prediction is in the recorded run, with today's grouping
    (a record added or regrouped since needs a rerun)."""
    recorded = {(d["record"], d["figure"]): d for d in _document()["rows"]}
    for rec in cal.load_records():
        for figure in rec.figures:
            row = recorded[(rec.id, figure)]
            assert (row["engine"], row["band"], row["metric"]) == (
                rec.group,
                load.band(rec.concurrency),
                rec.figure_class(figure),
            )


def test_a_group_range_holds_8_in_10_of_its_out_of_sample_ratios() -> None:
    """Recomputed by hand for one group (vLLM MoE with MXFP4 experts at 2-7 in flight, aggregate): the
    10th / 90th percentiles of measured / predicted, a latency figure inverted to a rate."""
    rows = [
        d
        for d in _document()["rows"]
        if (d["engine"], d["arch"], d["band"], d["metric"]) == ("vllm", "MoE-MXFP4", "2-7", "aggregate")
    ]
    ratios = []
    for d in rows:
        r = d["measured"] / d["predicted"]
        ratios.append(1 / r if d["figure"] in ("ttft_ms", "end_to_end_latency_s") else r)
    deciles = statistics.quantiles(ratios, n=10, method="inclusive")
    figures, error, low, high = speed_ranges.RANGES[("vllm", "MoE-MXFP4", "2-7", "aggregate")]
    assert figures == len(rows) >= load.MIN_RANGE_FIGURES
    assert low <= deciles[0] < low + 0.01 and high - 0.01 < deciles[-1] <= high
    inside = sum(low <= x <= high for x in ratios)
    # the inclusive deciles of n ratios leave at most ceil(0.1 (n - 1)) below the 10th and as many
    # above the 90th percentile: 1 of 10 each side
    assert inside >= len(ratios) - 2 * math.ceil(0.1 * (len(ratios) - 1))
    assert error == pytest.approx(
        statistics.fmean(abs(d["predicted"] / d["measured"] - 1) for d in rows), abs=1e-3
    )


def test_a_time_under_a_rate_metric_is_inverted() -> None:
    row = {"figure": "end_to_end_latency_s", "metric": "aggregate", "measured": 2.0, "predicted": 1.0}
    assert cal.range_multiplier(row) == 0.5  # twice as slow as predicted: half the rate
    assert cal.range_multiplier({**row, "figure": "ttft_ms", "metric": "ttft"}) == 2.0
    assert cal.range_multiplier({**row, "figure": "prefill_tokens_per_s", "metric": "ttft"}) == 0.5


def test_the_lookup_falls_back_to_the_engine_and_never_ranges_from_nothing() -> None:
    own = load.speed_range("vllm", "NVIDIA", "MoE-MXFP4", 4, "aggregate")
    assert (own.basis, own.figures, own.low, own.high) == ("group", 10, 1.15, 1.29)
    # 4 figures of SGLang dense at 2-7 (1.22-1.30x): the engine's pooled range, which holds them
    few = load.speed_range("sglang", "NVIDIA", "dense", 3, "aggregate")
    pooled = speed_ranges.RANGES[("sglang", "*", "*", "aggregate")]
    own = speed_ranges.RANGES[("sglang", "dense", "2-7", "aggregate")]
    assert few.basis == "engine" and few.figures == 4 and pooled[2] <= own[2] <= own[3] <= pooled[3]
    assert (few.low, few.high) == (pooled[2], pooled[3])
    # 1 figure of SGLang MoE (MXFP4 experts) at 2-7 TTFT (78.5x, a known miss): the pooled range
    # widened to hold it
    one = load.speed_range("sglang", "NVIDIA", "MoE-MXFP4", 3, "ttft")
    pooled, own = (
        speed_ranges.RANGES[("sglang", "*", "*", "ttft")],
        speed_ranges.RANGES[("sglang", "MoE-MXFP4", "2-7", "ttft")],
    )
    assert one.basis == "engine" and one.figures == 1 and own[3] > pooled[3]
    assert (one.low, one.high) == (min(pooled[2], own[2]), own[3])
    for engine, vendor in (
        ("sglang", "AMD"),
        ("trtllm", "NVIDIA"),
        ("vllm", "Intel"),
        ("transformers", "NVIDIA"),
    ):
        bare = load.speed_range(engine, vendor, "dense", 1, "decode")
        assert bare.basis == "none" and bare.low is None and bare.high is None, (engine, vendor)
        assert load.ranged(100.0, bare) == (None, None)


def test_an_answer_in_a_group_above_30_percent_prints_its_range() -> None:
    """vLLM dense at 32 or more in flight: above 30% mean error out of sample, so the answer shows the
    group's range on the figure and says so in plain words; the JSON carries it under speed_ranges[]."""
    figures, error, low, high = speed_ranges.RANGES[("vllm", "dense", "32+", "aggregate")]
    assert error > load.WIDE_GROUP_ERROR
    args = ("serve", "Llama-3.1-8B", "--users", "64", "--gpu", "H100", "--gpus", "1", "--ctx", "2k")
    text = run_in_process(*args, env={"NO_COLOR": "1", "COLUMNS": "200"})
    assert text.code == 0, text.stderr
    got = json.loads(run_in_process(*args, "--json").stdout)
    pick = got["recommendation"]
    agg = pick["aggregate_tokens_per_s"]
    assert pick["aggregate_tokens_per_s_low"] == pytest.approx(agg * low)
    assert pick["aggregate_tokens_per_s_high"] == pytest.approx(agg * high)
    ranges = {r["metric"]: r for r in pick["speed_ranges"]}
    assert ranges["aggregate"] == {
        "metric": "aggregate",
        "engine": "vllm",
        "arch": "dense",
        "band": "32+",
        "figures": figures,
        "mean_error": error,
        "low": low,
        "high": high,
        "basis": "group",
        "engine_figures": speed_ranges.RANGES[("vllm", "*", "*", "aggregate")][0],
        "generated": speed_ranges.GENERATED,
        "outside_fit": None,  # an H100: vLLM's constants were fitted on Hopper
        "fitted_on": [],
        "outside_figures": 0,
    }
    flat = " ".join(text.stdout.split())
    assert f"{agg * low:,.0f}-{agg * high:,.0f}" in flat
    assert (
        f"speed range, vLLM dense, 32+ in flight, tok/s under load: {low:g}-{high:g}x the estimate (8 in 10 "
        f"of {figures} figures out of sample by source, mean error {error:.0%}, above 30%: read the range, "
        "not the estimate)"
    ) in flat


def test_a_group_without_records_says_not_calibrated() -> None:
    args = ("serve", "Qwen3-8B", "--users", "1", "--gpu", "MI300X", "--engine", "sglang")
    text = run_in_process(*args, env={"NO_COLOR": "1", "COLUMNS": "200"})
    assert text.code == 0, text.stderr
    flat = " ".join(text.stdout.split())
    assert "speed not calibrated for SGLang on AMD dense, 1 in flight" in flat and "no range shown" in flat
    pick = json.loads(run_in_process(*args, "--json").stdout)["recommendation"]
    assert pick["per_request_tokens_per_s"] > 0
    assert pick["per_request_tokens_per_s_low"] is None and pick["per_request_tokens_per_s_high"] is None
    assert {r["basis"] for r in pick["speed_ranges"]} == {"none"}


def test_quote_carries_the_ranges_of_each_option() -> None:
    got = json.loads(
        run_in_process("quote", "Qwen3-30B-A3B", "--gpu", "H100", "--users", "4", "--json").stdout
    )
    (option,) = [o for o in got["options"] if o["fits"]][:1]
    assert {r["metric"] for r in option["speed_ranges"]} >= {"aggregate", "ttft"}
    assert any("speed range, vLLM MoE" in n for n in got["assumptions"]["notes"])


def test_which_ranges_each_speed_by_its_group() -> None:
    got = json.loads(run_in_process("which", "--gpu", "L4", "--json").stdout)
    fitting = [m for m in got["models"] if m["fits"] and m["tokens_per_s"]]
    assert fitting
    for m in fitting:
        rng = m["speed_range"]
        assert (rng["metric"], rng["band"]) == ("decode", "1")
        assert m["tokens_per_s_low"] == pytest.approx(m["tokens_per_s"] * rng["low"])
        assert m["tokens_per_s_high"] == pytest.approx(m["tokens_per_s"] * rng["high"])
    assert {m["speed_range"]["arch"] for m in fitting} == {"dense", "MoE", "MoE-MXFP4"}
    assert any("speed range, vLLM MoE (MXFP4 experts), 1 in flight" in n for n in got["assumptions"]["notes"])


def test_the_recorded_run_is_of_todays_model() -> None:
    """A source no fit ever saw is predicted by the published constants as they are: its recorded
    out-of-sample predictions must be today's. A change to the speed model or its constants fails
    here until `python bench/calibrate_throughput.py --loso --write-ranges` re-ranges the answers."""
    recorded = {(d["record"], d["figure"]): d["predicted"] for d in _document()["rows"]}
    checked = 0
    for held in cal.sources().values():
        if cal.fold_engines(held) is not None:
            continue
        for rec in held:
            for figure in rec.figures:
                now = cal.predict(rec, figure)
                if now is None:
                    continue
                assert recorded[(rec.id, figure)] == pytest.approx(now, rel=1e-9), (rec.id, figure)
                checked += 1
    assert checked > 30


def test_the_disaggregated_split_says_not_calibrated() -> None:
    args = ("serve", "Llama-3.1-70B", "--users", "32", "--gpu", "H100", "--gpus", "8", "--disaggregate")
    out = run_in_process(*args, env={"NO_COLOR": "1", "COLUMNS": "200"})
    assert out.code in (0, 1), out.stderr
    said = " ".join(out.stdout.split())
    assert "speed not calibrated for the disaggregated split: no range shown" in said
    # more than one published P/D run is recorded (tests/data/pd_records.yaml), each missing a figure
    assert "one published" not in said
    assert "2 are reproduced on all of TTFT, per-user decode speed and throughput" in said


def test_the_fitted_architectures_are_the_calibration_records_gpus() -> None:
    """FITTED_ARCHITECTURES is read off the recorded run: each group's calibration records' GPU
    architectures, with vLLM's for SGLang and Transformers (they start from vLLM's fitted kernels);
    a group with no calibration record of its own (SGLang on AMD) has vLLM on AMD's."""
    rows = _document()["rows"]
    own: dict[str, set[str]] = {}
    for d in rows:
        if d["set"] == "calibration":
            own.setdefault(d["engine"], set()).add(d["gpu_architecture"])
    fitted = speed_ranges.FITTED_ARCHITECTURES
    assert set(fitted["vllm"]) == own["vllm"] == {"Ampere", "Hopper"}
    assert set(fitted["sglang"]) == own["sglang"] | own["vllm"]
    assert set(fitted["transformers"]) == own["transformers"] | own["vllm"]
    assert "sglang/AMD" not in own and fitted["sglang/AMD"] == fitted["vllm/AMD"]
    assert "Blackwell" not in {a for archs in fitted.values() for a in archs}


def test_an_architecture_outside_the_fit_widens_the_range_and_says_so() -> None:
    """A B200 (Blackwell, no calibration record of any engine) under vLLM: the group's range widened
    to hold the out-of-sample figures on architectures outside their engine's fit (OUTSIDE: vLLM's
    own with enough of them, else every engine's pooled), and words that say the estimate is
    extrapolated; an H100 (Hopper, in vLLM's fit) keeps the group's range."""
    inside = load.speed_range("vllm", "NVIDIA", "dense", 64, "aggregate", architecture="Hopper")
    out = load.speed_range("vllm", "NVIDIA", "dense", 64, "aggregate", architecture="Blackwell")
    beyond = speed_ranges.OUTSIDE[("vllm", "aggregate")]
    if beyond[0] < load.MIN_RANGE_FIGURES:
        beyond = speed_ranges.OUTSIDE[("*", "aggregate")]
    assert inside.outside_fit is None and inside.low is not None and inside.high is not None
    assert (out.low, out.high) == (min(inside.low, beyond[2]), max(inside.high, beyond[3]))
    assert (out.outside_fit, out.fitted_on, out.outside_figures) == (
        "Blackwell",
        ("Ampere", "Hopper"),
        beyond[0],
    )
    assert "Blackwell GPUs are outside vLLM's speed fit (calibrated on Ampere, Hopper)" in (
        out.outside_words() or ""
    )
    # an engine with no range there stays "not calibrated": nothing is widened from nothing
    none = load.speed_range("trtllm", "NVIDIA", "dense", 1, "decode", architecture="Blackwell")
    assert none.low is None and none.high is None


def test_the_outside_table_is_the_figures_on_architectures_outside_their_fit() -> None:
    """OUTSIDE recomputed by hand for every group pooled, one metric: the LOSO figures whose GPU
    architecture is not in their group's FITTED_ARCHITECTURES."""
    fitted = speed_ranges.FITTED_ARCHITECTURES
    rows = [
        d
        for d in _document()["rows"]
        if d["metric"] == "decode" and d["gpu_architecture"] not in fitted[d["engine"]]
    ]
    figures, error, _, _ = speed_ranges.OUTSIDE[("*", "decode")]
    assert figures == len(rows) >= load.MIN_RANGE_FIGURES
    assert error == pytest.approx(
        statistics.fmean(abs(d["predicted"] / d["measured"] - 1) for d in rows), abs=1e-3
    )


def test_outside_the_fit_with_too_few_figures_to_widen_it_is_said_not_widened(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Synthetic (no metric has fewer than 5 such figures today): an architecture outside the fit
    with too few out-of-sample figures there keeps its group's range and the note says so."""
    monkeypatch.setattr(speed_ranges, "OUTSIDE", {("*", "decode"): (2, 0.5, 0.1, 9.0)})
    inside = load.speed_range("vllm", "NVIDIA", "dense", 1, "decode", architecture="Hopper")
    out = load.speed_range("vllm", "NVIDIA", "dense", 1, "decode", architecture="Blackwell")
    assert (out.low, out.high) == (inside.low, inside.high)
    assert (out.outside_fit, out.outside_figures) == ("Blackwell", 0)
    assert "too few out-of-sample figures there to widen the ranges" in (out.outside_words() or "")
    assert "widened for these GPUs" not in out.words()
