"""Leave-one-source-out validation of the throughput fit (bench/calibrate_throughput.py --loso): a
fold never sees its source, starts from START (not from the published constants, which saw it), and
leaves the published constants as they were. The fit itself is replaced by a cheap stand-in here; the
real run is `python bench/calibrate_throughput.py --loso > bench/VALIDATION.md`."""

from __future__ import annotations

from typing import Any

import pytest

from bench import calibrate_throughput as cal
from gpusize.serving import calibrated


def test_sources_partition_the_records() -> None:
    groups = cal.sources()
    ids = [r.id for recs in groups.values() for r in recs]
    assert sorted(ids) == sorted(r.id for r in cal.load_records())
    for source, recs in groups.items():
        assert all(r.source == source for r in recs)
    # the llama.cpp README split by GPU between the sets is still ONE source, held out whole
    xd = next(recs for s, recs in groups.items() if "XiongjieDai" in s)
    assert {r.set for r in xd} == {"calibration", "holdout"}


def test_fold_engines() -> None:
    groups = cal.sources()
    holdout_only = next(recs for recs in groups.values() if all(r.set == "holdout" for r in recs))
    assert cal.fold_engines(holdout_only) is None
    vllm = next(
        recs for recs in groups.values() if {r.engine for r in recs if r.set == "calibration"} == {"vllm"}
    )
    assert cal.fold_engines(vllm) == {"vllm", "sglang", "transformers"}


def test_a_fold_never_sees_its_source(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every objective a fold evaluates is over records of other sources, starting at START."""
    published = cal.published_constants()
    seen: list[tuple[frozenset[str], dict[str, float]]] = []
    fold: dict[str, Any] = {}

    def fake_objective(records: list[cal.Record], classes: tuple[str, ...]) -> float:
        seen.append((frozenset(r.source for r in records), dict(cal.published_constants())))
        return 0.0

    real_fit = cal.fit

    def watched_fit(*args: Any, **kwargs: Any) -> dict[str, float]:
        fold["exclude"] = kwargs["exclude"]
        fold["engines"] = kwargs["engines"]
        start = len(seen)
        out = real_fit(*args, **kwargs)
        held = {r.source for r in cal.load_records() if r.id in kwargs["exclude"]}
        assert len(held) == 1
        for sources, _ in seen[start:]:
            assert not sources & held
        # the first evaluation of the fold's first stage is at START, whatever was published
        _, constants = seen[start]
        first = next(st for st in cal.STAGES if st[0][0] in kwargs["engines"])
        for name in first[2]:
            assert constants[name] == pytest.approx(cal.start_value(name)), name
        return out

    monkeypatch.setattr(cal, "objective", fake_objective)
    monkeypatch.setattr(cal, "fit", watched_fit)
    monkeypatch.setattr(cal, "RESTARTS", 1)
    monkeypatch.setattr(cal, "predict", lambda rec, figure: 1.0)
    engines = dict(calibrated.ENGINE_SPEED)
    table = cal.leave_one_source_out_rows(steps=1, rounds=1)
    assert fold  # at least one source was refitted
    assert len(table) == sum(len(r.figures) for r in cal.load_records())
    assert cal.published_constants() == published
    # every engine's constants, the ones a fold's `inherit` copies from vLLM included (SGLang's
    # bandwidth efficiencies, per-layer and per-expert costs): a later source is predicted by them
    assert dict(calibrated.ENGINE_SPEED) == engines


def test_each_fold_predicts_with_the_published_constants_restored(monkeypatch: pytest.MonkeyPatch) -> None:
    """A source after a refitted one is predicted with every constant as published: a fold's
    `inherit` must not leak vLLM's fold constants into SGLang's for the next source."""
    monkeypatch.setattr(cal, "objective", lambda records, classes: 0.0)
    monkeypatch.setattr(cal, "RESTARTS", 1)
    engines = dict(calibrated.ENGINE_SPEED)
    leaked: list[str] = []

    def watched(rec: cal.Record, figure: str) -> float:
        if cal.fold_engines(cal.sources()[rec.source]) is None and dict(calibrated.ENGINE_SPEED) != engines:
            leaked.append(rec.id)
        return 1.0

    monkeypatch.setattr(cal, "predict", watched)
    cal.leave_one_source_out_rows(steps=1, rounds=1)
    assert leaked == []


def test_validation_groups_and_bands() -> None:
    assert [cal.band(c) for c in (1, 2, 7, 8, 31, 32, 1000)] == [
        "1",
        "2-7",
        "2-7",
        "8-31",
        "8-31",
        "32+",
        "32+",
    ]
    rows = [row for row in cal.rows() if row.record.id.startswith("sglang10404")]
    groups = cal.validation_groups(rows, ("engine", "arch", "band", "metric"))
    assert list(groups) == [("sglang", "MoE", "8-31", "aggregate")]
    assert len(groups[("sglang", "MoE", "8-31", "aggregate")]) == 3


def test_tp_scaling_pairs_one_source_one_load() -> None:
    """The Qwen3-Next-80B-A3B set (SGLang PR #10404): TP2 -> TP8 measured 1239.43 / 937.94 = 1.32x."""
    scaling = {(s[0], s[1], s[4]): s for s in cal.tp_scaling(cal.rows())}
    row = scaling[("https://github.com/sgl-project/sglang/pull/10404", "output_tokens_per_s c=8", (2, 8))]
    assert row[5] == pytest.approx(1239.43 / 937.94)
    assert (
        1.0 < row[6] < row[5]
    )  # estimated to scale, less than measured (18 points under, bench/VALIDATION.md)
    assert all(s[1].split()[0] != "ttft_ms" for s in scaling.values())


def test_report_prints_every_section(capsys: pytest.CaptureFixture[str]) -> None:
    """The --loso report over a stand-in table (the published fit's rows): every section is there."""
    table = cal.rows()
    cal.print_validation(table, table)
    out = capsys.readouterr().out
    for heading in (
        "| metric | figures | LOSO mean",
        "| engine | arch | metric |",
        "| engine | band | metric |",
        "Calibration-set figures only",
        "The issue's targets",
        "Tensor-parallel scaling",
        "| source | records | refitted |",
    ):
        assert heading in out, heading
