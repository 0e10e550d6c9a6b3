"""Quotes (pure): ranked server options for one model and the concurrency-vs-context curve. The numbers
come from the same engine models and serving functions as `fit` and `serve`, so one plan shows the same
figures in all three commands.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpusize.core.engines import engine
from gpusize.core.gpu import GpuSpec
from gpusize.core.plan import TP_SIZES, smallest_fit
from gpusize.core.spec import ModelSpec
from gpusize.core.workload import Workload
from gpusize.serving import economics
from gpusize.serving.layouts import Demand, compare, recommend

__all__ = [
    "DEFAULT_QUOTE_GPUS",
    "CurvePoint",
    "Option",
    "concurrency_curve",
    "memory_parts",
    "option_for",
    "rank",
]

#: GPUs a quote compares when none are named: the datacenter and workstation staples buyers ask
#: about, one per class.
DEFAULT_QUOTE_GPUS = ("H200", "H100", "B200", "A100-80GB", "L40S", "RTX-PRO-6000", "RTX4090", "RTX5090")


@dataclass(frozen=True, kw_only=True)
class Option:
    """One server option of a quote: memory per GPU, capacity, speed, price and power per server."""

    gpu: str
    gpu_full_name: str
    num_gpus: int
    replicas: int
    tensor_parallel: int
    fits: bool
    reason: str | None
    weights_bytes: int | None  # per GPU
    kv_cache_bytes: int | None
    activations_bytes: int | None
    overhead_bytes: int | None
    usable_bytes: int | None
    headroom_bytes: int | None
    kv_cache_capacity_tokens: int | None  # per replica
    max_concurrency: float | None  # per replica
    capacity_sequences: int
    serves_all: bool
    per_request_tokens_per_s: float | None  # estimates, with their ranges
    per_request_tokens_per_s_low: float | None
    per_request_tokens_per_s_high: float | None
    aggregate_tokens_per_s: float | None
    aggregate_tokens_per_s_low: float | None
    aggregate_tokens_per_s_high: float | None
    usd_per_hour: float | None  # the whole server
    usd_per_month: float | None
    usd_per_million_tokens: float | None
    usd_per_million_tokens_low: float | None
    usd_per_million_tokens_high: float | None
    power_w: float | None
    psu: str | None
    interconnect: str
    caveats: tuple[str, ...]


def _caveats(gpu: GpuSpec, tp: int, option_visible_measured: bool) -> tuple[str, ...]:
    notes = []
    if tp > 1 and gpu.interconnect == "pcie":
        notes.append("tensor parallel over PCIe (no NVLink): expect poor scaling")
    if tp > 2 and gpu.interconnect == "bridge-pairs":
        notes.append("NVLink bridges pair GPUs only; TP>2 crosses PCIe")
    if not option_visible_measured:
        notes.append(f"{gpu.runtime}-visible memory estimated from the reported total")
    if gpu.price_usd_per_hour is None:
        notes.append("no indicative price in the catalog")
    if gpu.segment == "consumer":
        notes.append("consumer card: no ECC; GeForce EULA restricts datacenter use")
    return tuple(notes)


def option_for(
    spec: ModelSpec, gpu: GpuSpec, work: Workload, demand: Demand, count: int | None = None
) -> Option:
    """The smallest server of this GPU type that holds the whole demand (or, when none of 1/2/4/8
    does, the largest that runs the model), laid out as `serve` recommends."""
    sizes = (count,) if count else TP_SIZES
    model = engine(work.engine.name)
    tried = smallest_fit(spec, gpu, work, model.evaluate, sizes)
    best = tried[-1]
    n = best.num_gpus
    layouts = compare(spec, gpu, n, work, demand)
    pick, _ = recommend(layouts)
    for bigger in (s for s in sizes if s > n and best.fits and not (pick and pick.serves_all)):
        more = compare(spec, gpu, bigger, work, demand)
        more_pick, _ = recommend(more)
        if more_pick is None:
            continue
        best = model.evaluate(spec, gpu, more_pick.gpus_per_replica, work)
        n, layouts, pick = bigger, more, more_pick
    layout = pick or next((x for x in layouts if x.gpus_per_replica == n), layouts[-1])
    g = best.per_gpu if best.fits else None
    power = economics.power_plan(gpu.tdp_w, n) if gpu.tdp_w else None
    return Option(
        gpu=gpu.name,
        gpu_full_name=gpu.full_name,
        num_gpus=n,
        replicas=layout.replicas,
        tensor_parallel=layout.tensor_parallel,
        fits=best.fits and pick is not None,
        reason=best.reason or (None if pick else "no layout fits"),
        weights_bytes=g.weights_bytes if g else None,
        kv_cache_bytes=g.kv_cache_bytes if g else None,
        activations_bytes=g.activations_bytes if g else None,
        overhead_bytes=g.overhead_bytes if g else None,
        usable_bytes=g.usable_bytes if g else None,
        headroom_bytes=layout.headroom_bytes,
        kv_cache_capacity_tokens=layout.kv_cache_capacity_tokens,
        max_concurrency=layout.max_concurrency,
        capacity_sequences=layout.capacity_sequences,
        serves_all=layout.serves_all,
        per_request_tokens_per_s=layout.per_request_tokens_per_s,
        per_request_tokens_per_s_low=layout.per_request_tokens_per_s_low,
        per_request_tokens_per_s_high=layout.per_request_tokens_per_s_high,
        aggregate_tokens_per_s=layout.aggregate_tokens_per_s,
        aggregate_tokens_per_s_low=layout.aggregate_tokens_per_s_low,
        aggregate_tokens_per_s_high=layout.aggregate_tokens_per_s_high,
        usd_per_hour=layout.usd_per_hour,
        usd_per_month=layout.usd_per_month,
        usd_per_million_tokens=layout.usd_per_million_tokens,
        usd_per_million_tokens_low=layout.usd_per_million_tokens_low,
        usd_per_million_tokens_high=layout.usd_per_million_tokens_high,
        power_w=power.total_w_high if power else None,
        psu=power.layout if power else None,
        interconnect=gpu.interconnect,
        caveats=_caveats(gpu, layout.tensor_parallel, gpu.visible_is_measured),
    )


def rank(options: list[Option]) -> list[Option]:
    """Options that hold the whole load first, then those that fit but queue, then misfits; within
    each, the cheapest per hour (unpriced last), then the fewest GPUs."""

    def key(o: Option) -> tuple[int, float, int, str]:
        tier = 0 if o.fits and o.serves_all else 1 if o.fits else 2
        return (tier, o.usd_per_hour if o.usd_per_hour else float("inf"), o.num_gpus, o.gpu)

    return sorted(options, key=key)


# --------------------------------------------------------------------------- curve


@dataclass(frozen=True)
class CurvePoint:
    context_tokens: int
    max_concurrency: float
    fits: bool


def concurrency_curve(
    spec: ModelSpec, gpu: GpuSpec, tp: int, work: Workload, points: int = 10
) -> list[CurvePoint]:
    """Maximum concurrent sequences against context, doubling from 1k up to the model's maximum; the
    workload is the one sized (same weights, KV dtype and engine settings), one sequence at a time."""
    limit = spec.max_context or 131072
    evaluate = engine(work.engine.name).evaluate
    out: list[CurvePoint] = []
    ctx = 1024
    while ctx <= limit and len(out) < points:
        c = evaluate(spec, gpu, tp, work.with_context(ctx, batch=1))
        out.append(CurvePoint(ctx, c.max_concurrency or 0.0, c.fits))
        ctx *= 2
    return out


def memory_parts(option: Option) -> list[tuple[str, int]]:
    """Per-GPU memory breakdown for charts: weights, KV, activations, overhead, free."""
    if option.usable_bytes is None:
        return []
    parts = [
        ("weights", option.weights_bytes or 0),
        ("KV cache", option.kv_cache_bytes or 0),
        ("activations", option.activations_bytes or 0),
        ("overhead", option.overhead_bytes or 0),
    ]
    used = sum(v for _, v in parts)
    return parts + [("free", max(option.usable_bytes - used, 0))]
