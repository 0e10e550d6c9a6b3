"""Quotes (pure): ranked server options for one model, the concurrency-vs-context curve and the
topology of a plan. The numbers come from the same planner and serving functions as `fit` and
`serve`, so one plan shows the same figures in all three commands.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict

from gpusize import economics, engines, plan, serving
from gpusize.catalog import GpuSpec
from gpusize.model import ModelSpec
from gpusize.params import ParamCounts

#: GPUs a quote compares when none are named: the datacenter and workstation staples buyers ask
#: about, one per class (seed 000's table).
DEFAULT_QUOTE_GPUS = ("H200", "H100", "B200", "A100-80GB", "L40S", "RTX-PRO-6000", "RTX4090", "RTX5090")


class Option(BaseModel):
    """One server option of a quote (also its JSON form: quote --format json)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

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
    per_request_tokens_per_s: float | None
    aggregate_tokens_per_s: float | None
    price_per_hour: float | None
    price_per_month: float | None
    cost_per_million_tokens: float | None
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
        notes.append("CUDA-visible memory estimated from the reported total")
    if gpu.price_usd_per_hour is None:
        notes.append("no indicative price in the catalog")
    if gpu.segment == "consumer":
        notes.append("consumer card: no ECC; GeForce EULA restricts datacenter use")
    return tuple(notes)


def option_for(
    spec: ModelSpec,
    counts: ParamCounts,
    gpu: GpuSpec,
    work: plan.Workload,
    demand: serving.Demand,
    count: int | None = None,
) -> Option:
    """The smallest server of this GPU type that holds the whole demand (or, when none of 1/2/4/8
    does, the largest that runs the model), laid out as `serve` recommends."""
    sizes = (count,) if count else plan.TP_SIZES
    tried = engines.smallest_fit(spec, counts, gpu, work, sizes)
    best = tried[-1]
    n = best.num_gpus
    layouts = serving.compare(spec, counts, gpu, n, work, demand)
    pick, _ = serving.recommend(layouts)
    for bigger in (s for s in sizes if s > n and best.fits and not (pick and pick.serves_all)):
        more = serving.compare(spec, counts, gpu, bigger, work, demand)
        more_pick, _ = serving.recommend(more)
        if more_pick is None:
            continue
        best = engines.evaluate(spec, counts, gpu, more_pick.tensor_parallel, work)
        n, layouts, pick = bigger, more, more_pick
    layout = pick or next((x for x in layouts if x.tensor_parallel == n), layouts[-1])
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
        aggregate_tokens_per_s=layout.aggregate_tokens_per_s,
        price_per_hour=layout.cost_per_hour,
        price_per_month=layout.cost_per_month,
        cost_per_million_tokens=layout.cost_per_million_tokens,
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
        return (tier, o.price_per_hour if o.price_per_hour else float("inf"), o.num_gpus, o.gpu)

    return sorted(options, key=key)


# --------------------------------------------------------------------------- curve


@dataclass(frozen=True)
class CurvePoint:
    context_tokens: int
    max_concurrency: float
    fits: bool


def concurrency_curve(
    spec: ModelSpec, counts: ParamCounts, gpu: GpuSpec, tp: int, work: plan.Workload, points: int = 10
) -> list[CurvePoint]:
    """Maximum concurrent sequences against context, doubling from 1k up to the model's maximum."""
    limit = spec.max_context or 131072
    out: list[CurvePoint] = []
    ctx = 1024
    while ctx <= limit and len(out) < points:
        c = engines.evaluate(
            spec,
            counts,
            gpu,
            tp,
            plan.Workload(
                ctx, 1, work.weight_dtype, work.kv_dtype, work.gpu_memory_utilization, engine=work.engine
            ),
        )
        out.append(CurvePoint(ctx, c.max_concurrency or 0.0, c.fits))
        ctx *= 2
    return out


# --------------------------------------------------------------------------- topology


def topology_text(option: Option) -> str:
    """Seed 001: where the weights load, where requests arrive, which GPUs each request needs."""
    link = "NVLink" if option.interconnect in ("nvswitch", "bridge-pairs") else "PCIe"
    lines = [
        f"requests -> {'load balancer -> ' if option.replicas > 1 else ''}"
        f"{option.replicas} replica(s) in one server ({option.num_gpus}x {option.gpu})"
    ]
    for r in range(option.replicas):
        gpus = [r * option.tensor_parallel + i for i in range(option.tensor_parallel)]
        share = f"1/{option.tensor_parallel} of every layer" if option.tensor_parallel > 1 else "all weights"
        joined = f" <-{link}-> ".join(f"GPU{g}" for g in gpus)
        lines.append(f"  replica {r + 1}: [{joined}] each holds {share} + its KV cache")
    lines.append(
        f"each request needs {option.tensor_parallel} GPU(s) of one replica, one node; "
        f"a GPU failure stops {'its replica' if option.replicas > 1 else 'the service'}"
    )
    return "\n".join(lines)


def topology_mermaid(option: Option) -> str:
    link = "NVLink" if option.interconnect in ("nvswitch", "bridge-pairs") else "PCIe"
    out = ["flowchart LR", "  U([Requests])"]
    entry = "U"
    if option.replicas > 1:
        out.append("  U --> LB[Load balancer]")
        entry = "LB"
    for r in range(option.replicas):
        out.append(f"  subgraph R{r}[Replica {r + 1}: TP={option.tensor_parallel}]")
        gpus = [r * option.tensor_parallel + i for i in range(option.tensor_parallel)]
        for g in gpus:
            out.append(f"    G{g}[GPU {g}: weights 1/{option.tensor_parallel} + KV]")
        for a, b in zip(gpus, gpus[1:], strict=False):
            out.append(f"    G{a} <-->|{link}| G{b}")
        out.append("  end")
        out.append(f"  {entry} --> G{gpus[0]}")
    return "\n".join(out)


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
