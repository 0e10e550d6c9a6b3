"""Serving plans (pure): replicas versus tensor parallel on one server, with throughput, resilience
and cost per layout, and a recommendation whose rule is stated.

A layout splits N GPUs of one type into `replicas` independent engines of `tp` GPUs each
(replicas x tp = N). Each replica is sized by the same engine model as `fit`; its KV pool bounds the
sequences it holds at the requested context; load is spread evenly over replicas.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gpusize.core.engines import engine
from gpusize.core.engines.vllm import scheduler_limits
from gpusize.core.gpu import GpuSpec
from gpusize.core.plan import TP_SIZES
from gpusize.core.spec import ModelSpec
from gpusize.core.workload import Workload
from gpusize.serving import economics, throughput

__all__ = [
    "TIE_FRACTION",
    "Demand",
    "Layout",
    "compare",
    "concurrency_for",
    "evaluate_layout",
    "layouts_for",
    "mean_context",
    "recommend",
]

#: Layouts whose aggregate throughput is within this fraction of the best count as a tie; ties go
#: to more replicas (a GPU failure then takes out a smaller share of capacity).
TIE_FRACTION = 0.05


@dataclass(frozen=True, kw_only=True)
class Demand:
    """Load to serve: `users` concurrent sequences, or `rps` requests/s of prompt + output tokens.
    The context per sequence is the workload's."""

    users: int | None = None
    rps: float | None = None
    prompt_tokens: int = 1024
    output_tokens: int = 256


@dataclass(frozen=True, kw_only=True)
class Layout:
    replicas: int
    tensor_parallel: int
    fits: bool
    reason: str | None = None
    kv_cache_capacity_tokens: int | None = None  # per replica
    max_concurrency: float | None = None  # per replica, sequences of the requested context
    capacity_sequences: int = 0  # whole server
    concurrent_sequences: int = 0  # what the demand puts in flight (capped by capacity)
    serves_all: bool = False
    per_request_tokens_per_s: float | None = None
    aggregate_tokens_per_s: float | None = None
    ttft_s: float | None = None
    bound: str | None = None
    headroom_bytes: int | None = None  # per GPU, beyond the requested KV
    one_gpu_failure: str = ""
    price_usd_per_hour: float | None = None
    price_usd_per_month: float | None = None
    usd_per_million_tokens: float | None = None


def layouts_for(num_gpus: int) -> list[tuple[int, int]]:
    """(replicas, tp) pairs with replicas x tp = num_gpus, tp in 1/2/4/8."""
    return [(num_gpus // tp, tp) for tp in TP_SIZES if tp <= num_gpus and num_gpus % tp == 0]


def mean_context(demand: Demand, context: int) -> int:
    """Tokens a sequence holds on average while decoding: prompt + half the output for a request
    rate; half the context for concurrent users at random points of their conversations."""
    if demand.rps is not None:
        return min(context, demand.prompt_tokens + demand.output_tokens // 2)
    return max(1, context // 2)


def concurrency_for(demand: Demand, speed_at: float, ttft: float) -> int:
    """Sequences in flight: the users given, or Little's law for a request rate
    (in flight = arrival rate x time in the system = rps x (TTFT + output / per-sequence speed))."""
    if demand.users is not None:
        return demand.users
    assert demand.rps is not None
    seconds = ttft + demand.output_tokens / max(speed_at, 1e-9)
    return max(1, math.ceil(demand.rps * seconds))


def evaluate_layout(
    spec: ModelSpec, gpu: GpuSpec, replicas: int, tp: int, work: Workload, demand: Demand
) -> Layout:
    candidate = engine(work.engine.name).evaluate(spec, gpu, tp, work)
    failure = _failure_impact(replicas, tp)
    price = gpu.price_for(replicas * tp)
    if not candidate.fits or candidate.per_gpu is None or candidate.max_concurrency is None:
        return Layout(
            replicas=replicas,
            tensor_parallel=tp,
            fits=False,
            reason=candidate.reason,
            one_gpu_failure=failure,
            price_usd_per_hour=price,
        )
    per_replica_cap = max(int(candidate.max_concurrency), 1)
    capacity = replicas * per_replica_cap
    batched = scheduler_limits(gpu, work).max_num_batched_tokens
    ttft = throughput.prefill_seconds(spec, gpu, tp, min(demand.prompt_tokens, work.context_tokens))
    context = mean_context(demand, work.context_tokens)
    in_flight, speed = 1, None
    for _ in range(8):  # fixed point for a request rate; one pass for a user count
        per_replica = min(math.ceil(in_flight / replicas), per_replica_cap)
        speed = throughput.decode_speed(
            spec, work.weights, gpu, tp, per_replica, context, work.kv_bytes, batched
        )
        want = concurrency_for(demand, speed.per_sequence_tokens_per_s if speed else 1.0, ttft or 0.0)
        if want == in_flight:
            break
        in_flight = want
    active = min(in_flight, capacity)
    aggregate = speed.per_sequence_tokens_per_s * active if speed else None
    return Layout(
        replicas=replicas,
        tensor_parallel=tp,
        fits=True,
        kv_cache_capacity_tokens=candidate.kv_cache_capacity_tokens,
        max_concurrency=candidate.max_concurrency,
        capacity_sequences=capacity,
        concurrent_sequences=active,
        serves_all=in_flight <= capacity,
        per_request_tokens_per_s=speed.per_sequence_tokens_per_s if speed else None,
        aggregate_tokens_per_s=aggregate,
        ttft_s=ttft,
        bound=speed.bound if speed else None,
        headroom_bytes=candidate.per_gpu.headroom_bytes,
        one_gpu_failure=failure,
        price_usd_per_hour=price,
        price_usd_per_month=price * economics.HOURS_PER_MONTH if price else None,
        usd_per_million_tokens=economics.cost_per_million_tokens(price, aggregate)
        if price and aggregate
        else None,
    )


def _failure_impact(replicas: int, tp: int) -> str:
    if replicas == 1:
        return "service down: the only replica spans every GPU" if tp > 1 else "service down"
    share = 100 / replicas
    return f"one replica of {replicas} down: {share:.0f}% of capacity lost, service stays up"


def compare(spec: ModelSpec, gpu: GpuSpec, num_gpus: int, work: Workload, demand: Demand) -> list[Layout]:
    return [evaluate_layout(spec, gpu, r, tp, work, demand) for r, tp in layouts_for(num_gpus)]


def recommend(layouts: list[Layout]) -> tuple[Layout | None, str]:
    """Among layouts that hold the whole load, the highest aggregate throughput (ties within 5% go
    to more replicas); if none holds it, the one holding the most sequences."""
    fitting = [x for x in layouts if x.fits]
    if not fitting:
        return None, "no layout fits: the model does not fit on these GPUs at this context"
    full = [x for x in fitting if x.serves_all] or fitting
    best_rate = max(x.aggregate_tokens_per_s or 0 for x in full)
    near = [x for x in full if (x.aggregate_tokens_per_s or 0) >= best_rate * (1 - TIE_FRACTION)]
    pick = max(near, key=lambda x: (x.replicas, x.capacity_sequences))
    return pick, _why(pick, fitting, serves_all=any(x.serves_all for x in fitting))


def _why(pick: Layout, fitting: list[Layout], serves_all: bool) -> str:
    rate = f"{pick.aggregate_tokens_per_s:,.0f} tok/s" if pick.aggregate_tokens_per_s else "unknown tok/s"
    head = (
        f"{pick.replicas} replica(s) x TP={pick.tensor_parallel}: holds {pick.capacity_sequences} "
        f"sequences of this context, {rate} aggregate (estimate)"
    )
    others = [x for x in fitting if x is not pick and x.aggregate_tokens_per_s]
    if others:
        alt = max(others, key=lambda x: x.aggregate_tokens_per_s or 0)
        head += (
            f"; next best {alt.replicas} x TP={alt.tensor_parallel}: {alt.capacity_sequences} sequences, "
            f"{alt.aggregate_tokens_per_s:,.0f} tok/s"
        )
    if not serves_all:
        head += "; no layout holds the whole load at once: requests will queue"
    return head + f"; on a GPU failure: {pick.one_gpu_failure}"
