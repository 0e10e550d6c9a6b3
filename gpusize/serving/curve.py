"""The concurrency curve (pure): the most sequences a plan holds at each context length, doubling from
1k (`curve`, and the curve under a `quote`). Its own module so that `curve` does not import the
quote's layouts, speeds and prices (start-up)."""

from __future__ import annotations

from gpusize.core.engines import engine
from gpusize.core.gpu import GpuSpec
from gpusize.core.plan import Candidate
from gpusize.core.spec import ModelSpec
from gpusize.core.workload import Workload
from gpusize.dataclass import dataclass

__all__ = ["CurvePoint", "concurrency_curve"]


@dataclass(frozen=True)
class CurvePoint:
    """One context length of a curve: the concurrency the plan holds there and whether it fits."""

    context_tokens: int
    max_concurrency: float
    #: The plan holds `users` sequences of this context, and whether by a thin margin
    #: (core/plan.thin_margin, the rule of every command).
    fits: bool
    thin_margin: bool = False


def concurrency_curve(
    spec: ModelSpec,
    gpu: GpuSpec,
    tp: int,
    work: Workload,
    points: int = 10,
    users: int = 1,
    nodes: int = 1,
    per_node: int = 8,
) -> list[CurvePoint]:
    """Maximum concurrent sequences against context, doubling from 1k up to the model's maximum; the
    workload is the one sized (same weights, KV dtype and engine settings), with `users` sequences.
    `nodes` > 1: the engine's plan over that many servers of `per_node` GPUs (TP=per_node x PP=nodes,
    as `fit --nodes`)."""
    limit = spec.max_context or 131072
    model = engine(work.engine.name)
    evaluate = model.evaluate
    across = model.nodes
    if nodes > 1 and across is not None:

        def evaluate(spec: ModelSpec, gpu: GpuSpec, tp: int, work: Workload) -> Candidate:
            assert across is not None
            return across(spec, gpu, nodes, work, per_node)

    out: list[CurvePoint] = []
    ctx = 1024
    while ctx <= limit and len(out) < points:
        c = evaluate(spec, gpu, tp, work.with_context(ctx, batch=users))
        out.append(CurvePoint(ctx, c.max_concurrency or 0.0, c.fits, c.thin_margin))
        ctx *= 2
    return out
