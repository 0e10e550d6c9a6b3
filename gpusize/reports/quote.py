"""The quote report (pure): ranked options, the top option's curve and topology, assumptions."""

from __future__ import annotations

from dataclasses import dataclass

from gpusize import __version__
from gpusize.core.engines import engine_label
from gpusize.core.gpu import GpuSpec
from gpusize.core.spec import ModelSpec
from gpusize.core.workload import Workload
from gpusize.reports.common import ModelFacts, model_facts, price_note
from gpusize.reports.fit import model_notes
from gpusize.serving import throughput
from gpusize.serving.layouts import Demand
from gpusize.serving.quote import CurvePoint, Option, concurrency_curve, option_for, rank
from gpusize.serving.topology import topology_mermaid, topology_text
from gpusize.sources.resolve import ResolvedModel

__all__ = ["QuoteAssumptions", "QuoteReport", "build_quote"]


@dataclass(frozen=True, kw_only=True)
class QuoteAssumptions:
    engine: str
    ranking: str
    layout: str
    throughput: str
    prices: str
    power: str
    notes: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class QuoteReport:
    gpusize_version: str
    command: str
    fits: bool
    model: ModelFacts
    workload: Workload
    users: int | None
    options: tuple[Option, ...]
    recommendation: Option | None
    curve: tuple[CurvePoint, ...]
    topology_text: str | None
    topology_mermaid: str | None
    assumptions: QuoteAssumptions


def build_quote(
    resolved: ResolvedModel,
    spec: ModelSpec,
    gpus: list[GpuSpec],
    work: Workload,
    users: int | None,
    max_gpus: dict[str, int] | None = None,
) -> QuoteReport:
    """`max_gpus`: the most GPUs an option of that GPU name may use (--gpu local: the machine's)."""
    demand = Demand(users=users or 1)
    limits = max_gpus or {}
    options = rank([option_for(spec, g, work, demand, max_count=limits.get(g.name, 8)) for g in gpus])
    top = next((o for o in options if o.fits), None)
    curve: list[CurvePoint] = []
    if top:
        gpu = next(g for g in gpus if g.name == top.gpu)
        curve = concurrency_curve(spec, gpu, top.tensor_parallel, work)
    return QuoteReport(
        gpusize_version=__version__,
        command="quote",
        fits=top is not None,
        model=model_facts(resolved, spec),
        workload=work,
        users=users,
        options=tuple(options),
        recommendation=top,
        curve=tuple(curve),
        topology_text=topology_text(top) if top else None,
        topology_mermaid=topology_mermaid(top) if top else None,
        assumptions=QuoteAssumptions(
            engine=engine_label(work.engine),
            ranking="options holding every user at once first, then those that fit but queue; within each, "
            "lowest indicative price per hour, then fewest GPUs",
            layout="each option uses the smallest GPU count of its type that runs the model, laid out as "
            "`serve` recommends for the given users",
            throughput=throughput.assumptions(gpus[0], work)
            + ("; other GPUs alike" if len(gpus) > 1 else ""),
            prices=price_note(gpus) + "; month = 730 h; prices and power are per server",
            power="GPU TDP sum + CPUs + platform, PSU with 20% margin",
            notes=tuple(model_notes(resolved, spec, work)),
        ),
    )
