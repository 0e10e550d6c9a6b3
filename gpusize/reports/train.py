"""The training report (pure): one result object for the table and --json of `gpusize train`.

`build_train_report` sizes one training job on every GPU type asked for: the smallest data-parallel
count in one server (1, 2, 4, 8) whose per-GPU peak fits the CUDA-visible memory, with the reason when
none does, and, given a token budget, time and cost on 1 versus N GPUs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from gpusize import __version__
from gpusize.core.gpu import GpuSpec
from gpusize.core.model import ResolvedModel
from gpusize.core.network import MAX_NODES, NodePlan
from gpusize.core.plan import TP_SIZES
from gpusize.core.spec import ModelSpec
from gpusize.dataclass import dataclass, replace
from gpusize.reports.common import ModelFacts, model_facts
from gpusize.reports.train_assumptions import TrainAssumptions, train_assumptions
from gpusize.training import speed, speed_fit, time_cost
from gpusize.training.anatomy import trainable_params
from gpusize.training.device import train_memory
from gpusize.training.peak import TrainMemory
from gpusize.training.plan import Suggestion, TrainCandidate, candidate_counts, evaluate, pick, suggest
from gpusize.training.setup import TrainSetup

if TYPE_CHECKING:
    from gpusize.training.nodes import NodeStep
    from gpusize.training.suggest import TrainSuggestion

__all__ = [
    "Suggestion",
    "TimeInfo",
    "TimeRow",
    "TrainAssumptions",
    "TrainCandidate",
    "TrainParams",
    "TrainReport",
    "build_train_report",
    "candidate_counts",
    "evaluate",
    "suggest",
]


@dataclass(frozen=True, kw_only=True)
class TrainParams:
    """The parameters a training job holds and the share of them it trains."""

    total: int
    trainable: int
    trainable_fraction: float


@dataclass(frozen=True, kw_only=True)
class TimeRow:
    """The job's time and cost on one GPU count, with the modelled scaling and its range."""

    num_gpus: int
    fits: bool
    #: Modelled per-GPU throughput relative to one GPU (training/speed.py: collectives not hidden).
    scaling_efficiency: float
    speedup: float
    hours: float | None
    cost_usd: float | None
    #: The hours' out-of-sample interval (speed_fit.RANGE: 8 in 10 held-out published records).
    hours_low: float | None = None
    hours_high: float | None = None


@dataclass(frozen=True, kw_only=True)
class TimeInfo:
    """How long a training job takes: its token budget and FLOPs, the fitted efficiency, and one row per
    GPU count."""

    token_budget: int
    flops_per_token: float
    total_flops: float
    #: The fitted compute efficiency for this GPU and method on one GPU (speed_fit; derived, not
    #: assumed); a row with data-parallel peers computes at (1 - speed_fit.CONTENTION) of it.
    mfu: float
    gpu: str
    bf16_tflops: float | None
    interconnect: str
    rows: tuple[TimeRow, ...]
    note: str | None
    #: What the hours are: an estimate, and its out-of-sample error.
    estimate: str = ""


@dataclass(frozen=True, kw_only=True)
class TrainReport:
    """The answer of `train`: memory per GPU for each GPU type and count, suggestions and time (its
    `--json`)."""

    gpusize_version: str
    command: str
    fits: bool
    model: ModelFacts
    setup: TrainSetup
    token_budget: int | None
    params: TrainParams
    memory: TrainMemory
    plan: TrainCandidate | None
    candidates: tuple[TrainCandidate, ...]
    #: When nothing fits: the nearest jobs that do, each evaluated by the same model, cheapest first.
    suggestions: tuple[TrainSuggestion, ...]
    time: TimeInfo | None
    assumptions: TrainAssumptions
    #: train --nodes: the step over the servers (collectives over the link), time and cost; None on one.
    nodes: NodeStep | None = None


def time_info(spec: ModelSpec, setup: TrainSetup, gpu: GpuSpec, tokens: int, max_count: int = 8) -> TimeInfo:
    """The same token budget on 1, 2, 4 and 8 GPUs of one type, in hours and in money, from the
    fitted step model (training/speed.py). Hours need the GPU's bf16 TFLOPS and money its indicative
    price; rows that do not fit in memory still show what they would take (with DDP where the job
    asked for no sharding)."""
    per_token = time_cost.flops_per_token(spec, setup)
    parallel = replace(setup, sharding="ddp") if setup.sharding == "none" else setup
    one = speed.step_time(spec, setup, gpu, 1)
    low, high = speed_fit.RANGE
    rows = []
    for n in (k for k in TP_SIZES if k <= max_count):
        job = setup if n == 1 else parallel
        step = speed.step_time(spec, job, gpu, n)
        eff = step.tokens_per_s / one.tokens_per_s if step and one else 1.0
        hours = tokens / (n * step.tokens_per_s) / 3600 if step else None
        cost = (
            time_cost.training_cost_usd(hours, gpu.price_usd_per_hour, n)
            if hours and gpu.price_usd_per_hour
            else None
        )
        rows.append(
            TimeRow(
                num_gpus=n,
                fits=train_memory(spec, job, n, gpu.interconnect, gpu.visible_bytes).device_bytes
                <= gpu.visible_bytes,
                scaling_efficiency=round(eff, 4),
                speedup=round(n * eff, 3),
                hours=hours,
                cost_usd=cost,
                hours_low=hours / high if hours else None,
                hours_high=hours / low if hours else None,
            )
        )
    note = None
    if not gpu.bf16_tflops:
        note = f"{gpu.name}: no sourced bf16 TFLOPS in the catalog, so no time estimate"
    elif not gpu.price_usd_per_hour:
        note = f"{gpu.name}: no indicative price in the catalog, so no cost estimate"
    return TimeInfo(
        token_budget=tokens,
        flops_per_token=per_token,
        total_flops=per_token * tokens,
        mfu=round(speed.efficiency(gpu, setup), 4),
        gpu=gpu.name,
        bf16_tflops=gpu.bf16_tflops,
        interconnect=gpu.interconnect,
        rows=tuple(rows),
        note=note,
        estimate=speed.estimate_words(gpu),
    )


def build_train_report(
    resolved: ResolvedModel,
    spec: ModelSpec,
    gpus: list[GpuSpec],
    setup: TrainSetup,
    fixed_count: int | None = None,
    tokens: int | None = None,
    max_count: int = 8,
    others: tuple[GpuSpec, ...] = (),
    nodes: NodePlan | None = None,
    hsdp: bool = False,
) -> TrainReport:
    """Plan the job over `gpus`: per type the smallest count that fits, up to `max_count` (or exactly
    `fixed_count`), and with a token budget the time and cost on 1 to 8 GPUs of the chosen type.
    `nodes`: every GPU of that many servers instead (training/nodes.py), FSDP sharded inside each
    server only with `hsdp`."""
    if nodes is not None:
        return _nodes_report(resolved, spec, gpus, setup, tokens, nodes, hsdp)
    rows: list[TrainCandidate] = []
    best: list[TrainCandidate] = []
    for gpu in gpus:
        # a MIG slice or unified-memory machine is one device: data parallel cannot span two
        counts = (fixed_count or 1,) if gpu.one_device else candidate_counts(setup, fixed_count, max_count)
        for n in counts:
            rows.append(evaluate(spec, setup, gpu, n))
            if rows[-1].fits:
                break
        best.append(rows[-1])
        if len(gpus) == 1 and not rows[-1].fits:  # what fits instead, on the deciding count
            last = rows[-1]
            advice = suggest(spec, setup, gpu, last.num_gpus, last.max_batch)
            rows[-1] = best[-1] = replace(last, suggestion=advice)
    chosen = pick(best)
    plan = chosen or (best[0] if len(gpus) == 1 else None)
    plan_gpu = next((g for g in gpus if plan and g.name == plan.gpu), None)
    return _report(
        resolved,
        spec,
        setup,
        tokens,
        gpus,
        chosen is not None,
        plan,
        rows,
        () if chosen else _fixes(spec, setup, tuple(gpus), others, fixed_count, max_count),
        time_info(spec, setup, plan_gpu, tokens, max_count) if plan_gpu and tokens else None,
    )


def _fixes(
    spec: ModelSpec,
    setup: TrainSetup,
    gpus: tuple[GpuSpec, ...],
    others: tuple[GpuSpec, ...],
    fixed_count: int | None,
    max_count: int,
) -> tuple[TrainSuggestion, ...]:
    """training.suggest.train_fixes: what would make the job fit."""
    from gpusize.training.suggest import train_fixes  # start-up: only a job that fits nowhere

    return train_fixes(spec, setup, gpus, others, fixed_count, max_count)


def _nodes_report(
    resolved: ResolvedModel,
    spec: ModelSpec,
    gpus: list[GpuSpec],
    setup: TrainSetup,
    tokens: int | None,
    plan: NodePlan,
    hsdp: bool,
) -> TrainReport:
    """The job on every GPU of `plan`'s servers, per GPU type: memory per GPU at the layout's shard
    degree, the step over the link and, with a budget, the job's time and cost (first GPU that fits)."""
    from gpusize.training.nodes import node_step, shard_degree  # start-up: only a plan over servers

    n = plan.nodes * plan.gpus_per_node
    sharding = "hsdp" if hsdp else setup.sharding
    rows = []
    for gpu in gpus:
        shard = shard_degree(sharding, plan)
        c = evaluate(spec, setup, gpu, shard)
        # the row names the layout's sharding (hsdp: fsdp inside each server, replicated across)
        rows.append(replace(c, num_gpus=n, usd_per_hour=gpu.price_for(n), sharding=sharding))
    chosen = pick(rows)
    plan_row = chosen or rows[0]
    plan_gpu = next(g for g in gpus if g.name == plan_row.gpu)
    plan = plan.for_gpu(plan_gpu)  # the link of the GPU type chosen
    step = node_step(spec, setup, sharding, plan_gpu, plan, tokens)
    if chosen is None and step is not None and sharding != "ddp":  # the fewest servers that hold it
        more = plan.nodes * 2
        while more <= MAX_NODES:
            if evaluate(spec, setup, plan_gpu, shard_degree(sharding, replace(plan, nodes=more))).fits:
                step = replace(step, nodes_that_fit=more)
                break
            more *= 2
    return _report(resolved, spec, setup, tokens, gpus, chosen is not None, plan_row, rows, (), None, step)


def _report(
    resolved: ResolvedModel,
    spec: ModelSpec,
    setup: TrainSetup,
    tokens: int | None,
    gpus: Sequence[GpuSpec],
    fits: bool,
    plan: TrainCandidate | None,
    rows: Sequence[TrainCandidate],
    suggestions: tuple[TrainSuggestion, ...],
    time: TimeInfo | None,
    nodes: NodeStep | None = None,
) -> TrainReport:
    """The report of one train command, on one server or (`nodes`) over several."""
    trainable = trainable_params(spec, setup)
    return TrainReport(
        gpusize_version=__version__,
        command="train",
        fits=fits,
        model=model_facts(resolved, spec),
        setup=setup,
        token_budget=tokens,
        params=TrainParams(
            total=spec.params.total,
            trainable=trainable,
            trainable_fraction=round(trainable / spec.params.total, 6),
        ),
        memory=train_memory(spec, setup, 1),
        plan=plan,
        candidates=tuple(rows),
        suggestions=suggestions,
        time=time,
        assumptions=train_assumptions(spec, setup, list(gpus)),
        nodes=nodes,
    )
