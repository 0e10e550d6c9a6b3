"""The quote report (pure): ranked options, the top option's curve and topology, assumptions."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from pydantic import BaseModel, ConfigDict

from gpusize import __version__, engines, plan, quote, serving, throughput
from gpusize.catalog import GpuSpec
from gpusize.model import ModelSpec
from gpusize.params import ParamCounts
from gpusize.report import ModelInfo, Origin, model_info


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CurveInfo(_Out):
    context_tokens: int
    max_concurrency: float
    fits: bool


class QuoteReport(_Out):
    gpusize_version: str
    fits: bool
    model: ModelInfo
    context_tokens: int
    users: int | None
    engine: str
    options: list[quote.Option]
    recommendation: quote.Option | None
    curve: list[CurveInfo]
    topology_text: str | None
    topology_mermaid: str | None
    assumptions: dict[str, Any]


def build_quote(
    origin: Origin,
    spec: ModelSpec,
    counts: ParamCounts,
    gpus: list[GpuSpec],
    work: plan.Workload,
    users: int | None,
) -> QuoteReport:
    demand = serving.Demand(work.context, users=users or 1)
    options = quote.rank([quote.option_for(spec, counts, g, work, demand) for g in gpus])
    top = next((o for o in options if o.fits), None)
    curve: list[quote.CurvePoint] = []
    if top:
        gpu = next(g for g in gpus if g.name == top.gpu)
        curve = quote.concurrency_curve(spec, counts, gpu, top.tensor_parallel, work)
    return QuoteReport(
        gpusize_version=__version__,
        fits=top is not None,
        model=model_info(origin, spec, counts),
        context_tokens=work.context,
        users=users,
        engine=engines.ENGINE_VERSIONS[work.engine],
        options=options,
        recommendation=top,
        curve=[CurveInfo(**asdict(p)) for p in curve],
        topology_text=quote.topology_text(top) if top else None,
        topology_mermaid=quote.topology_mermaid(top) if top else None,
        assumptions={
            "ranking": "options holding every user at once first, then those that fit but queue; "
            "within each, lowest indicative price per hour, then fewest GPUs",
            "layout": "each option uses the smallest GPU count of its type that runs the model, laid out "
            "as `serve` recommends for the given users",
            "throughput": f"estimates: bandwidth roofline at {throughput.BANDWIDTH_EFFICIENCY:.0%} of peak",
            "prices": "indicative cloud USD per GPU-hour, snapshot dated 2026-04-10; not a quote of a "
            "provider; month = 730 h",
            "power": "GPU TDP sum + CPUs + platform, PSU with 20% margin (seed 004)",
        },
    )
