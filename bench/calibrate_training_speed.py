"""Fit and validate gpusize's training step model (gpusize/training/speed.py) on published throughputs.

Reads tests/data/training_speed_records.yaml (tokens/s per GPU with the model, GPUs, sharding,
precision, batch, sequence and checkpointing each source states), predicts each record with the
product code (gpusize.training.speed.step_time) and fits its constants: EFFICIENCY per method,
ARCH_FACTOR per GPU architecture, one OVERLAP and one CONTENTION, each source weighted equally (a
source's records share a framework and a machine, so they are not independent). Validation leaves
one source out: every record is predicted by a fit that never saw its source.

    python bench/calibrate_training_speed.py            # LOSO table and group errors (Markdown)
    python bench/calibrate_training_speed.py --write    # ... and write gpusize/training/speed_fit.py
                                                        #     and bench/results/train_speed_loso.json

tests/training/test_training_speed.py imports this module: it refits and checks every held-out
record against the range the LOSO run reports.
"""

from __future__ import annotations

import json
import math
import statistics
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from gpusize.core import network
from gpusize.core.gpu import GpuSpec
from gpusize.core.parse import parse_config
from gpusize.core.spec import ModelSpec
from gpusize.sources.catalog import find_gpu, find_model
from gpusize.training import speed
from gpusize.training.setup import TrainSetup

ROOT = Path(__file__).resolve().parents[1]
RECORDS = ROOT / "tests" / "data" / "training_speed_records.yaml"
CONFIGS = ROOT / "tests" / "data" / "torch"
FIT_FILE = ROOT / "gpusize" / "training" / "speed_fit.py"
RESULTS = ROOT / "bench" / "results" / "train_speed_loso.json"
#: Overlap fractions tried (the fit is a grid search over OVERLAP and CONTENTION, closed-form in the
#: efficiencies).
OVERLAP_GRID = tuple(i / 20 for i in range(21))
#: Compute-rate losses with data-parallel peers tried (speed_fit.CONTENTION), 0 to 20%.
CONTENTION_GRID = tuple(i / 50 for i in range(11))


@dataclass(frozen=True)
class Case:
    id: str
    source: str
    method: str
    num_gpus: int
    gpu: GpuSpec
    spec: ModelSpec
    setup: TrainSetup
    link: network.NodeLink | None
    measured: float
    raw: dict[str, Any]

    @property
    def per_node(self) -> int:
        return int(self.raw["gpus_per_node"])

    def predict(self, fit: speed.Fit) -> float:
        step = speed.step_time(self.spec, self.setup, self.gpu, self.num_gpus, self.link, fit, self.per_node)
        assert step is not None, self.id
        return step.tokens_per_s


def _spec(name: str, configs: dict[str, Any]) -> ModelSpec:
    if name in configs:
        return parse_config(configs[name]["config"])
    if name.startswith("config:"):
        return parse_config(json.loads((CONFIGS / f"{name[7:]}.json").read_text())["config"])
    return parse_config(find_model(name).config)


def _link(rec: dict[str, Any], gpu: GpuSpec) -> network.NodeLink | None:
    """The link between servers: the record's own, else the GPU's reference fabric; None on one."""
    if rec["num_gpus"] <= rec["gpus_per_node"]:
        return None
    if "link" in rec:
        stated = rec["link"]
        return network.NodeLink(
            kind=stated["kind"], gbytes_per_s=stated["gbit_per_gpu"] / 8, source=rec["id"]
        )
    return network.default_link(gpu)


def load_cases(path: Path = RECORDS) -> list[Case]:
    """Every record as a case gpusize can predict."""
    cases = []
    doc = yaml.safe_load(path.read_text())
    for rec in doc["records"]:
        if rec.get("excluded"):
            continue
        gpu = find_gpu(rec["gpu"])
        setup = TrainSetup(
            rec["method"],
            rec["seq"],
            batch=rec["batch"],
            grad_accum=rec.get("grad_accum", 1),
            precision=rec["precision"],
            grad_ckpt=rec["grad_ckpt"],
            lora_rank=rec.get("lora_rank", 16),
            lora_modules=tuple(rec.get("lora_modules", "q,k,v,o,gate,up,down").split(",")),
            sharding=rec["sharding"],
        )
        cases.append(
            Case(
                id=rec["id"],
                source=rec["source"],
                method=rec["method"],
                num_gpus=rec["num_gpus"],
                gpu=gpu,
                spec=_spec(rec["model"], doc.get("configs", {})),
                setup=setup,
                link=_link(rec, gpu),
                measured=float(rec["tokens_per_s_per_gpu"]),
                raw=rec,
            )
        )
    return cases


def _weights(cases: Sequence[Case]) -> list[float]:
    counts: dict[str, int] = {}
    for c in cases:
        counts[c.source] = counts.get(c.source, 0) + 1
    return [1 / counts[c.source] for c in cases]


def _implied_log_eff(case: Case, overlap: float, contention: float) -> float:
    """log of the efficiency that makes the step match the measurement at this overlap and contention."""
    unit = speed.Fit(efficiency={case.method: 1.0}, arch_factor={}, overlap=overlap, contention=contention)
    step = speed.step_time(case.spec, case.setup, case.gpu, case.num_gpus, case.link, unit, case.per_node)
    assert step is not None
    measured_s = step.tokens_per_step / case.measured
    # measured = C + fixed + max(comm - overlap C, 0), C the compute time: solve for C
    rest = measured_s - step.dequant_s - step.optimizer_s
    if step.comm_s <= overlap * rest or overlap >= 1:
        compute_s = rest
    else:
        compute_s = (rest - step.comm_s) / (1 - overlap)
    compute_s = max(compute_s, 0.05 * measured_s)
    # compute at efficiency 1 (precision factor included) over the time compute had
    return math.log(step.compute_s / compute_s)


def _fit_at(cases: Sequence[Case], weights: Sequence[float], overlap: float, contention: float) -> speed.Fit:
    """Weighted least squares of log efficiency = log EFFICIENCY[method] + log ARCH_FACTOR[arch]
    (alternating means), the arch factors normalized to a weighted geometric mean of 1."""
    y = [_implied_log_eff(c, overlap, contention) for c in cases]
    methods = sorted({c.method for c in cases})
    archs = sorted({c.gpu.architecture for c in cases})
    e = dict.fromkeys(methods, 0.0)
    a = dict.fromkeys(archs, 0.0)
    for _ in range(50):
        for key, table, other, attr in ((methods, e, a, "m"), (archs, a, e, "a")):
            for k in key:
                num = den = 0.0
                for c, w, yi in zip(cases, weights, y, strict=True):
                    mine, theirs = (
                        (c.method, c.gpu.architecture) if attr == "m" else (c.gpu.architecture, c.method)
                    )
                    if mine == k:
                        num += w * (yi - other[theirs])
                        den += w
                table[k] = num / den
    shift = sum(w * a[c.gpu.architecture] for c, w in zip(cases, weights, strict=True)) / sum(weights)
    return speed.Fit(
        efficiency={m: round(math.exp(v + shift), 4) for m, v in e.items()},
        arch_factor={k: round(math.exp(v - shift), 4) for k, v in a.items()},
        overlap=overlap,
        contention=contention,
    )


def fit(cases: Sequence[Case]) -> speed.Fit:
    """The constants minimizing the weighted squared log error of the predictions."""
    weights = _weights(cases)
    best: tuple[float, speed.Fit] | None = None
    for overlap, contention in ((o, c) for o in OVERLAP_GRID for c in CONTENTION_GRID):
        candidate = _fit_at(cases, weights, overlap, contention)
        loss = sum(
            w * math.log(c.predict(candidate) / c.measured) ** 2 for c, w in zip(cases, weights, strict=True)
        )
        if best is None or loss < best[0] - 1e-12:
            best = (loss, candidate)
    assert best is not None
    return best[1]


def loso(cases: Sequence[Case]) -> dict[str, float]:
    """Each record's prediction by the fit without its source: id -> predicted tokens/s per GPU."""
    out: dict[str, float] = {}
    for source in sorted({c.source for c in cases}):
        rest = [c for c in cases if c.source != source]
        held = fit(rest)
        for c in cases:
            if c.source == source:
                out[c.id] = c.predict(held)
    return out


def gpu_band(n: int) -> str:
    return "1 GPU" if n == 1 else ("2-8 GPUs" if n <= 8 else ">8 GPUs (several servers)")


def _group(cases: Sequence[Case], pred: dict[str, float], key: Any) -> dict[str, tuple[int, float, float]]:
    groups: dict[str, list[float]] = {}
    for c in cases:
        groups.setdefault(key(c), []).append(pred[c.id] / c.measured - 1)
    return {
        k: (len(v), statistics.fmean(abs(x) for x in v), max(v, key=abs)) for k, v in sorted(groups.items())
    }


def scaling_pairs(
    cases: Sequence[Case], pred: dict[str, float], anomalous: bool = False
) -> list[tuple[str, str, float, float]]:
    """Records of one `series` (the same job on more GPUs): (from id, to id, measured per-GPU ratio,
    predicted ratio), from the fewest GPUs of the series. A record with an `anomaly` (a figure its
    own source's table contradicts, the reason in the record) is never a pair's end: `anomalous`
    gives the pairs it would have made instead, from the fewest GPUs of the series as before."""
    series: dict[str, list[Case]] = {}
    for c in cases:
        if c.raw.get("series"):
            series.setdefault(c.raw["series"], []).append(c)
    out = []
    for members in series.values():
        members.sort(key=lambda c: c.num_gpus)
        clean = [c for c in members if not c.raw.get("anomaly")]
        if anomalous:
            base, rest = (
                members[0],
                [c for c in members[1:] if c.raw.get("anomaly") or members[0].raw.get("anomaly")],
            )
        elif clean:
            base, rest = clean[0], clean[1:]
        else:
            continue
        for c in rest:
            out.append((base.id, c.id, c.measured / base.measured, pred[c.id] / pred[base.id]))
    return out


def _band(values: Sequence[float], share: float = 0.8) -> tuple[float, float]:
    """The interval holding at least `share` of the values: nearest ranks taken outwards (the 10th
    and 90th percentiles for 0.8), then rounded outwards to 0.01."""
    ordered = sorted(values)
    tail = (1 - share) / 2 * (len(ordered) - 1)
    low, high = ordered[math.floor(tail)], ordered[math.ceil(len(ordered) - 1 - tail)]
    return math.floor(low * 100) / 100, math.ceil(high * 100) / 100


def summary(cases: Sequence[Case]) -> dict[str, Any]:
    """The full fit, the LOSO predictions and their group errors."""
    full = fit(cases)
    pred = loso(cases)
    ratios = [c.measured / pred[c.id] for c in cases]
    errors = [abs(pred[c.id] / c.measured - 1) for c in cases]
    return {
        "fit": {
            "efficiency": full.efficiency,
            "arch_factor": full.arch_factor,
            "overlap": full.overlap,
            "contention": full.contention,
        },
        "records": len(cases),
        "sources": len({c.source for c in cases}),
        "loso_mean_error": statistics.fmean(errors),
        "loso_worst_error": max(errors),
        "range": _band(ratios),
        "by_method": _group(cases, pred, lambda c: c.method),
        "by_gpus": _group(cases, pred, lambda c: gpu_band(c.num_gpus)),
        "by_source": _group(cases, pred, lambda c: c.source),
        "predicted": pred,
        "scaling": scaling_pairs(cases, pred),
        "scaling_anomalous": scaling_pairs(cases, pred, anomalous=True),
    }


def markdown(cases: Sequence[Case], s: dict[str, Any]) -> str:
    lines = [
        f"Fit on all {s['records']} records ({s['sources']} sources, each weighted equally): EFFICIENCY "
        f"{s['fit']['efficiency']}, ARCH_FACTOR {s['fit']['arch_factor']}, OVERLAP {s['fit']['overlap']}, "
        f"CONTENTION {s['fit']['contention']}.",
        "",
        f"Leave one source out: mean |error| {s['loso_mean_error']:.1%} over the records, "
        f"{statistics.fmean(v[1] for v in s['by_source'].values()):.1%} over the sources' means; worst "
        f"{s['loso_worst_error']:+.1%}; measured / predicted holds 8 in 10 records within "
        f"{s['range'][0]:.2f}-{s['range'][1]:.2f} (RANGE).",
        "",
        "| group | records | mean abs error | worst |",
        "|---|---:|---:|---:|",
    ]
    for title in ("by_method", "by_gpus", "by_source"):
        for k, (n, mean, worst) in s[title].items():
            lines.append(f"| {title[3:]}: {k} | {n} | {mean:.1%} | {worst:+.1%} |")
    lines += [
        "",
        "| record | GPUs | measured tok/s/GPU | LOSO predicted | error |",
        "|---|---:|---:|---:|---:|",
    ]
    for c in cases:
        p = s["predicted"][c.id]
        lines.append(f"| {c.id} | {c.num_gpus} | {c.measured:,.0f} | {p:,.0f} | {p / c.measured - 1:+.1%} |")
    lines += [
        "",
        "Scaling (per-GPU throughput relative to the same job on the fewest GPUs of its series):",
        "",
        "| from | to | measured | predicted (LOSO) | difference (points) |",
        "|---|---|---:|---:|---:|",
    ]
    for a, b, m, p in s["scaling"]:
        lines.append(f"| {a} | {b} | {m:.1%} | {p:.1%} | {(p - m) * 100:+.1f} |")
    if s["scaling_anomalous"]:
        lines += [
            "",
            "Pairs left out above: one end is a record with an `anomaly` (its reason in the records):",
            "",
            "| from | to | measured | predicted (LOSO) | difference (points) |",
            "|---|---|---:|---:|---:|",
        ]
        for a, b, m, p in s["scaling_anomalous"]:
            lines.append(f"| {a} | {b} | {m:.1%} | {p:.1%} | {(p - m) * 100:+.1f} |")
    return "\n".join(lines)


def write_fit(s: dict[str, Any]) -> None:
    text = FIT_FILE.read_text()
    head, _, _ = text.partition("#: The date of the fit.")
    from datetime import date

    f = s["fit"]
    body = (
        "#: The date of the fit.\n"
        f'GENERATED = "{date.today().isoformat()}"\n'
        "#: Fraction of the bf16 peak the step's FLOPs reach, by method, on the records' mean architecture.\n"
        f"EFFICIENCY: dict[str, float] = {json.dumps(f['efficiency'])}\n"
        "#: Multiplier of EFFICIENCY by GPU architecture (catalog `architecture`); others take 1.\n"
        f"ARCH_FACTOR: dict[str, float] = {json.dumps(f['arch_factor'])}\n"
        "#: Fraction of the compute time the collectives can hide behind (DDP buckets, FSDP prefetch),\n"
        "#: one value for every sharding.\n"
        f"OVERLAP = {f['overlap']!r}\n"
        "#: Fraction of the compute rate a GPU loses once its job has data-parallel peers: the collective\n"
        "#: kernels (one NCCL thread block per channel, resident on its SM while it waits for the peers)\n"
        "#: share the SMs and memory bandwidth with compute, which a lone GPU never does; one value for\n"
        "#: every sharding.\n"
        f"CONTENTION = {f['contention']!r}\n"
        "#: Leave-one-source-out: mean |predicted / measured - 1| over every held-out record.\n"
        f"LOSO_MEAN_ERROR = {round(s['loso_mean_error'], 4)!r}\n"
        "#: (low, high): measured / predicted tokens per second holding 8 in 10 held-out records\n"
        "#: (nearest ranks, rounded outwards): an estimate's interval.\n"
        f"RANGE = {tuple(s['range'])!r}\n"
    )
    FIT_FILE.write_text(head + body)
    RESULTS.write_text(json.dumps(s, indent=1, default=list) + "\n")


def main(argv: Sequence[str]) -> int:
    cases = load_cases()
    s = summary(cases)
    print(markdown(cases, s))
    if "--write" in argv:
        write_fit(s)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
