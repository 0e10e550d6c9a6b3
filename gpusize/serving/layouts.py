"""Serving plans (pure): replicas versus one multi-GPU engine on one server, with throughput, time to
first token, resilience and cost per layout (each an estimate with its range), and a recommendation
whose rule is stated and whose reason cites the measurements behind it.

A layout splits N GPUs of one type into `replicas` independent engines of `gpus_per_replica` GPUs
each: tensor parallel for vLLM and SGLang, llama.cpp's layer or row split. Each replica is sized by
the same engine model as `fit`; its KV pool and scheduler bound the sequences it holds at the
requested context (llama.cpp: the parallel slots that fit); load is spread evenly over replicas.
"""

from __future__ import annotations

import math
from dataclasses import field
from typing import TypedDict

from gpusize.core.engines import engine
from gpusize.core.gpu import GpuSpec
from gpusize.core.plan import TP_SIZES, Candidate, PerGpu, thin_margin
from gpusize.core.spec import ModelSpec
from gpusize.core.workload import Workload
from gpusize.dataclass import dataclass, replace
from gpusize.serving import calibrated, economics, load
from gpusize.serving.targets import Targets
from gpusize.serving.throughput import LlamaCppPlacement, build_of

__all__ = [
    "EVIDENCE",
    "MAX_LLAMACPP_SLOTS",
    "THIN_MARGIN_NOTE",
    "TIE_FRACTION",
    "Demand",
    "Layout",
    "LayoutPrices",
    "compare",
    "concurrency_for",
    "evaluate_layout",
    "layout_name",
    "parallel_name",
    "layout_prices",
    "layouts_for",
    "mean_context",
    "prefix_note",
    "recommend",
    "repriced",
]

#: Layouts whose aggregate throughput is within this fraction of the best count as a tie; ties go
#: to more replicas (a GPU failure then takes out a smaller share of capacity).
TIE_FRACTION = 0.05
#: What a thin margin means, in serve's and quote's text (fit's warning says it with the GiB).
THIN_MARGIN_NOTE = (
    "the KV cache holds the load by less than gpusize's error on public start-up logs; the next size "
    "up is the safe choice"
)
#: Most parallel slots (-np) a llama.cpp replica is sized for.
MAX_LLAMACPP_SLOTS = 64

#: Published replicas-versus-tensor-parallel measurements the recommendation cites (records in
#: tests/data/throughput_records.yaml; research notes in the README's "Throughput model").
EVIDENCE = {
    "replicas": (
        "measured, replicas beat one tensor-parallel server once a replica holds the model and a useful "
        "KV pool: 8x H100 SXM (NVSwitch), Llama-3.1-8B-FP8, 320 requests: TP=2/4/8 reached 0.54/0.26/0.14 of "
        "N x TP=1 (3,400 tok/s per GPU; LambdaLabsML/vllm-benchmark); 4x RTX 3090 (PCIe): 4 replicas "
        "3,425 vs TP=4 1,007 tok/s (noonghunna/club-3090)"
    ),
    "kv_starved": (
        "measured, tensor parallel wins when one GPU leaves too little KV cache: gpt-oss-120b on H100, "
        "1,000 requests: TP=2 7,649 tok/s vs TP=1 2,943 per GPU (gpustack performance lab)"
    ),
    "latency": (
        "measured, tensor parallel speeds up one stream of a dense model 1.3-1.7x on 2-4 GPUs (A100 "
        "TPOT 11.75 -> 8.82 ms at TP=2, dennislee22/vLLM-benchmarking) but not a small-active MoE "
        "(gpt-oss-120b on A100: 90 -> 77 tok/s, vllm-project/vllm#22331)"
    ),
    "row": (
        "measured, llama.cpp's row split keeps one stream flat as GPUs are added (Llama-2-70B fp16 on A100 "
        "PCIe: 10.46 / 11.07 / 9.37 tok/s on 2 / 4 / 8 GPUs; mlc-ai/llm-perf-bench)"
    ),
    "pipeline": (
        "measured, llama.cpp's layer split runs the GPUs one after another: one stream gets no faster "
        "with more GPUs (Llama-3-8B Q4_K_M on RTX 4090: 130.6 tok/s on 1, 118.1 on 8; "
        "XiongjieDai/GPU-Benchmarks-on-LLM-Inference)"
    ),
}


@dataclass(frozen=True, kw_only=True)
class Demand:
    """Load to serve: `users` concurrent sequences, or `rps` requests/s of prompt + output tokens.
    The context per sequence is the workload's. `prefix_hit_rate`: the fraction of each prompt's
    tokens the engine's prefix cache serves (a property of the traffic: shared system prompts,
    multi-turn chats), which prefill does not compute; memory-neutral (cached blocks live in the KV
    pool the plan already sizes)."""

    users: int | None = None
    rps: float | None = None
    prompt_tokens: int = 1024
    output_tokens: int = 256
    prefix_hit_rate: float = 0.0

    def cached_tokens(self, prompt: int) -> int:
        """Prompt tokens of a `prompt`-token request served from the prefix cache: never the last one,
        whose logits the first output token needs (vLLM's KVCacheManager.get_computed_blocks caps a
        hit at num_tokens - 1; SGLang's Req.init_next_round_input matches at most len - 1 tokens)."""
        return max(min(int(prompt * self.prefix_hit_rate), prompt - 1), 0)


@dataclass(frozen=True, kw_only=True)
class Layout:
    """One serving layout: replicas of a model split over GPUs, whether it fits, and its speed and cost."""

    replicas: int
    tensor_parallel: int
    #: GPUs one replica spans and how it splits the model over them: tensor (vLLM, SGLang), or
    #: llama.cpp's layer (pipeline) or row split.
    gpus_per_replica: int
    split_mode: str
    fits: bool
    reason: str | None = None
    kv_cache_capacity_tokens: int | None = None  # per replica
    max_concurrency: float | None = None  # per replica, sequences of the requested context
    capacity_sequences: int = 0  # whole server
    concurrent_sequences: int = 0  # what the demand puts in flight (capped by capacity)
    serves_all: bool = False
    #: The replica holds its share of the load by less than the engine's error on public start-up logs
    #: (core/plan.thin_margin, the rule `fit --batch` warns by): a yes, with the next size up the safe one.
    thin_margin: bool = False
    #: Each user in flight gets the targets (the decode speed floor, the TTFT limit): serving/targets.py.
    meets_targets: bool = False
    # Estimates, each with its range: where 8 in 10 of its group's published figures fell, each
    # predicted by a fit that never saw its source (`speed_ranges`, below; serving/load.speed_range).
    per_request_tokens_per_s: float | None = None
    per_request_tokens_per_s_low: float | None = None
    per_request_tokens_per_s_high: float | None = None
    aggregate_tokens_per_s: float | None = None
    aggregate_tokens_per_s_low: float | None = None
    aggregate_tokens_per_s_high: float | None = None
    ttft_s: float | None = None
    ttft_s_low: float | None = None
    ttft_s_high: float | None = None
    #: The time to first token half and nine in ten of the requests get at most, by the load model's
    #: own schedule (`load.FirstTokenSpread`); None where there is no estimate.
    ttft_p50_s: float | None = None
    ttft_p90_s: float | None = None
    #: The mean time to first token of a benchmark whose prompts and replies are all of one length
    #: (`vllm bench serve --dataset-name random` at its default range ratio): its users stay in step
    #: and the requests of a wave share the engine's prefill steps (`load.Arrivals`), so it measures
    #: more than `ttft_s`, which is for users who drift apart. None where there is no estimate.
    ttft_in_step_s: float | None = None
    #: The ranges above, one per group they come from (engine, dense/MoE, band, metric): the JSON's
    #: `speed_ranges[]`; a range with `basis` "none" is a speed not calibrated there (no low / high).
    speed_ranges: tuple[load.SpeedRange, ...] = field(default=(), metadata={"sheet": False})
    bound: str | None = None
    #: Per GPU at the load (each replica holding its share of the sequences in flight): the KV cache
    #: they take and the memory left beyond it.
    kv_cache_bytes: int | None = None
    headroom_bytes: int | None = None
    one_gpu_failure: str = ""
    usd_per_hour: float | None = None
    usd_per_month: float | None = None
    usd_per_million_tokens: float | None = None
    usd_per_million_tokens_low: float | None = None
    usd_per_million_tokens_high: float | None = None
    #: Multi-node plans (serve --nodes, serving/nodes.py): the servers the layout's GPUs span, the
    #: engine's pipeline and expert-parallel sizes, what crosses the link between servers and the
    #: seconds it adds to each decode step (an estimate); 1 / 1 / 1 / None / None on one server.
    nodes: int = 1
    pipeline_parallel: int = 1
    expert_parallel: int = 1
    network: str | None = None
    network_s_per_step: float | None = None
    #: The engine's data-parallel ranks inside one replica (vLLM's --data-parallel-size): each rank
    #: tensor_parallel / data_parallel GPUs wide; 1 where the engine has none.
    data_parallel: int = 1


def prefix_note(work: Workload, rate: float) -> str:
    """The prefix-cache assumption, for the throughput line ("" when no hit rate is given)."""
    cache = engine(work.engine.name).prefix_cache
    if not rate or cache is None:
        return ""
    return (
        f"; {rate:.0%} of each prompt's tokens served by {cache}: the hit rate is the workload's, as "
        "given, not measured; prefill computes the rest, attending to the cached prefix; memory "
        "unchanged (cached blocks share the KV pool)"
    )


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


def _capacity(spec: ModelSpec, gpu: GpuSpec, group: int, work: Workload) -> tuple[Candidate, int]:
    """The replica's plan and the sequences it admits at the requested context: vLLM / SGLang, its
    KV pool capped by max_num_seqs; llama.cpp, the most parallel slots (-np) whose KV still fits."""
    model = engine(work.engine.name)
    if not model.splits_layers:
        cand = model.evaluate(spec, gpu, group, work)
        pool = int(cand.max_concurrency or 0)
        seqs = model.max_sequences(gpu, work) if model.max_sequences else pool
        return cand, max(min(pool, seqs), 1)
    cand = model.evaluate(spec, gpu, group, work.with_context(work.context_tokens, batch=1))
    if not cand.fits:
        return cand, 0
    lo, hi = 1, MAX_LLAMACPP_SLOTS
    while lo < hi:
        mid = (lo + hi + 1) // 2
        fits = model.evaluate(spec, gpu, group, work.with_context(work.context_tokens, batch=mid)).fits
        lo, hi = (mid, hi) if fits else (lo, mid - 1)
    return model.evaluate(spec, gpu, group, work.with_context(work.context_tokens, batch=lo)), lo


def speed_ranges_for(
    spec: ModelSpec, gpu: GpuSpec, work: Workload, per_instance: int, per_kind: str
) -> tuple[load.SpeedRange, load.SpeedRange, load.SpeedRange]:
    """The ranges of a layout's per-request speed (`per_kind`: decode for one sequence, else
    aggregate), aggregate and TTFT, by the group of `per_instance` sequences in flight per engine."""

    def of(metric: str) -> load.SpeedRange:
        return load.speed_range(work.engine.name, gpu.vendor, arch, per_instance, metric, build, family)

    build, arch = build_of(work.engine, gpu), load.speed_arch(spec, work, gpu)
    family = load.architecture_family(gpu)

    return of(per_kind), of("aggregate"), of("ttft")


def evaluate_layout(
    spec: ModelSpec,
    gpu: GpuSpec,
    replicas: int,
    tp: int,
    work: Workload,
    demand: Demand,
    host_gbps: float | None = None,
) -> Layout:
    """One layout: `replicas` engines of `tp` GPUs each (tensor parallel, or llama.cpp's split)."""
    llamacpp = engine(work.engine.name).splits_layers
    split = (work.engine.split_mode or "layer") if llamacpp else "tensor"
    candidate, per_replica_cap = _capacity(spec, gpu, tp, work)
    failure = _failure_impact(replicas, tp)
    price = gpu.price_for(replicas * tp)
    engine_tp = 1 if llamacpp else tp
    ranks = 1 if llamacpp else tp // engine(work.engine.name).launch_tp(work, tp)
    if not candidate.fits or candidate.per_gpu is None or per_replica_cap < 1:
        return Layout(
            replicas=replicas,
            tensor_parallel=engine_tp,
            gpus_per_replica=tp,
            split_mode=split,
            data_parallel=ranks,
            fits=False,
            reason=candidate.reason or "no sequence of this context fits",
            one_gpu_failure=failure,
            **layout_prices(price, False, None, None, None),
        )
    placement = LlamaCppPlacement(tp, split, host_gbps or calibrated.DEFAULT_HOST_GBPS) if llamacpp else None
    capacity = replicas * per_replica_cap
    prompt = min(demand.prompt_tokens, work.context_tokens)
    output = max(min(demand.output_tokens, work.context_tokens - prompt), 1)
    context = mean_context(demand, work.context_tokens)
    in_flight, point = 1, None
    for _ in range(12):  # fixed point for a request rate; one pass for a user count
        users = math.ceil(in_flight / replicas)
        point = load.steady(
            spec,
            work,
            gpu,
            engine_tp,
            users,
            prompt,
            output,
            per_replica_cap,
            placement,
            context,
            demand.cached_tokens(prompt),
        )
        speed = point.per_request_tokens_per_s if point else 1.0
        want = concurrency_for(demand, speed, (point.ttft_s or 0.0) if point else 0.0)
        if want == in_flight:
            break
        in_flight = want
    active = min(in_flight, capacity)
    share = min(math.ceil(active / replicas), per_replica_cap)
    at_load = _at_load(spec, gpu, tp, work, share) or candidate.per_gpu
    thin = in_flight <= capacity and thin_margin(
        candidate.max_concurrency, share, engine(work.engine.name).levers.thin_margin
    )
    per_request = point.per_request_tokens_per_s if point else None
    # every replica runs the same load; with fewer sequences than replicas some stand idle
    aggregate = point.aggregate_tokens_per_s * min(replicas, in_flight) if point else None
    ttft = point.ttft_s if point else None
    per_kind = load.per_request_metric(point.sequences) if point else "aggregate"
    ranges = speed_ranges_for(spec, gpu, work, math.ceil(in_flight / replicas), per_kind)
    per_low, per_high = load.ranged(per_request, ranges[0])
    agg_low, agg_high = load.ranged(aggregate, ranges[1])
    ttft_low, ttft_high = load.ranged(ttft, ranges[2])
    return Layout(
        replicas=replicas,
        tensor_parallel=engine_tp,
        gpus_per_replica=tp,
        split_mode=split,
        data_parallel=ranks,
        fits=True,
        kv_cache_capacity_tokens=candidate.kv_cache_capacity_tokens,
        max_concurrency=float(per_replica_cap) if llamacpp else candidate.max_concurrency,
        capacity_sequences=capacity,
        concurrent_sequences=active,
        serves_all=in_flight <= capacity,
        thin_margin=thin,
        per_request_tokens_per_s=per_request,
        per_request_tokens_per_s_low=per_low,
        per_request_tokens_per_s_high=per_high,
        aggregate_tokens_per_s=aggregate,
        aggregate_tokens_per_s_low=agg_low,
        aggregate_tokens_per_s_high=agg_high,
        ttft_s=ttft,
        ttft_s_low=ttft_low,
        ttft_s_high=ttft_high,
        ttft_p50_s=point.ttft_quantile(load.TTFT_QUANTILES[0]) if point and ttft is not None else None,
        ttft_p90_s=point.ttft_quantile(load.TTFT_QUANTILES[1]) if point and ttft is not None else None,
        ttft_in_step_s=point.ttft_in_step_s if point and ttft is not None else None,
        speed_ranges=load.shown_ranges(ranges, (per_request, aggregate, ttft)),
        bound=point.step.bound if point else None,
        kv_cache_bytes=at_load.kv_cache_bytes,
        headroom_bytes=at_load.headroom_bytes,
        one_gpu_failure=failure,
        **layout_prices(price, True, aggregate, agg_low, agg_high),
    )


class LayoutPrices(TypedDict, total=False):
    """The price fields of a Layout (`layout_prices`), given to it as keywords."""

    usd_per_hour: float | None
    usd_per_month: float | None
    usd_per_million_tokens: float | None
    usd_per_million_tokens_low: float | None
    usd_per_million_tokens_high: float | None


def layout_prices(
    price: float | None, fits: bool, aggregate: float | None, low: float | None, high: float | None
) -> LayoutPrices:
    """A layout's prices from its GPUs' indicative USD per hour (`price`): that hour, and for a layout
    that fits, the month and the USD per 1M tokens at its aggregate speed, the range from the speed's
    (`low`, `high`: the fastest speed is the cheapest token)."""
    if not fits:
        return {"usd_per_hour": price}
    return {
        "usd_per_hour": price,
        "usd_per_month": price * economics.HOURS_PER_MONTH if price else None,
        "usd_per_million_tokens": economics.cost_per_million_tokens(price, aggregate)
        if price and aggregate
        else None,
        "usd_per_million_tokens_low": economics.cost_per_million_tokens(price, high)
        if price and high
        else None,
        "usd_per_million_tokens_high": economics.cost_per_million_tokens(price, low)
        if price and low
        else None,
    }


def repriced(layout: Layout, gpu: GpuSpec) -> Layout:
    """`layout` with the prices of `gpu` (a GPU with the same plan: serving/plan_key.py), computed as
    evaluate_layout computes them."""
    price = gpu.price_for(layout.replicas * layout.gpus_per_replica)
    if price == layout.usd_per_hour:
        return layout
    speeds = (
        layout.aggregate_tokens_per_s,
        layout.aggregate_tokens_per_s_low,
        layout.aggregate_tokens_per_s_high,
    )
    return replace(layout, **layout_prices(price, layout.fits, *speeds))


def _at_load(spec: ModelSpec, gpu: GpuSpec, tp: int, work: Workload, sequences: int) -> PerGpu | None:
    """Memory per GPU of one replica holding `sequences` of the requested context (None: it does not)."""
    c = engine(work.engine.name).evaluate(
        spec, gpu, tp, work.with_context(work.context_tokens, batch=sequences)
    )
    return c.per_gpu if c.fits else None


def _failure_impact(replicas: int, tp: int) -> str:
    if replicas == 1:
        return "service down: the only replica spans every GPU" if tp > 1 else "service down"
    share = 100 / replicas
    return f"one replica of {replicas} down: {share:.0f}% of capacity lost, service stays up"


def compare(
    spec: ModelSpec,
    gpu: GpuSpec,
    num_gpus: int,
    work: Workload,
    demand: Demand,
    host_gbps: float | None = None,
    targets: Targets | None = None,
) -> list[Layout]:
    """Every layout of `num_gpus` GPUs for the demand, each marked by whether its users get the targets."""
    aim = targets or Targets()
    layouts = [evaluate_layout(spec, gpu, r, tp, work, demand, host_gbps) for r, tp in layouts_for(num_gpus)]
    # `replaced`: what replace makes, a tenth of quote over 1,000 GPU types faster
    return [
        replace(x, meets_targets=x.fits and aim.met_by(x.per_request_tokens_per_s, x.ttft_s)) for x in layouts
    ]


def parallel_name(replicas: int, tp: int, pp: int = 1, ep: int = 1, dp: int = 1) -> str:
    """'4 x TP=1', across servers '1 x TP=8 x PP=2' or '1 x DP=16 x EP=16', with vLLM's ranks
    '1 x DP=8 x TP=1' (`tp` the replica's GPUs): how every layout and quote option of a
    tensor-parallel engine is named."""
    if ep > 1:
        return f"{replicas} x DP={ep} x EP={ep}"
    if dp > 1:
        return f"{replicas} x DP={dp} x TP={tp // dp}"
    if pp > 1:
        return f"{replicas} x TP={tp} x PP={pp}"
    return f"{replicas} x TP={tp}"


def layout_name(x: Layout) -> str:
    """`parallel_name`, or for llama.cpp '1 x 4 GPUs -sm layer'."""
    if x.split_mode == "tensor" or x.pipeline_parallel > 1 or x.expert_parallel > 1:
        return parallel_name(
            x.replicas, x.tensor_parallel, x.pipeline_parallel, x.expert_parallel, x.data_parallel
        )
    gpus = "1 GPU" if x.gpus_per_replica == 1 else f"{x.gpus_per_replica} GPUs -sm {x.split_mode}"
    return f"{x.replicas} x {gpus}"


def recommend(layouts: list[Layout], targets: Targets | None = None) -> tuple[Layout | None, str]:
    """Among layouts that hold the whole load, those whose users get the targets on a safe memory
    margin, then on a thin one, then those missing the targets (safe, then thin), as `quote` ranks its
    options; within the first such group the highest aggregate throughput (ties within 5% go to more
    replicas); if none holds the load, the same order over every layout that fits."""
    fitting = [x for x in layouts if x.fits]
    if not fitting:
        return None, "no layout fits: the model does not fit on these GPUs at this context"
    holding = [x for x in fitting if x.serves_all] or fitting
    tiers = (
        [x for x in holding if x.meets_targets and not x.thin_margin],
        [x for x in holding if x.meets_targets],
        [x for x in holding if not x.thin_margin],
        holding,
    )
    full = next(tier for tier in tiers if tier)
    best_rate = max(x.aggregate_tokens_per_s or 0 for x in full)
    near = [x for x in full if (x.aggregate_tokens_per_s or 0) >= best_rate * (1 - TIE_FRACTION)]
    pick = max(near, key=lambda x: (x.replicas, x.capacity_sequences))
    why = _why(pick, fitting, serves_all=any(x.serves_all for x in fitting))
    aim = targets or Targets()
    if not pick.meets_targets:
        why += f"; no layout that holds the load meets the per-user targets ({aim.words()})"
    return pick, why


def _evidence(pick: Layout, fitting: list[Layout]) -> str:
    """The published measurements behind this kind of choice."""
    if pick.network:  # an engine across servers: what its traffic crosses (serving/nodes.py)
        return f"{pick.network} (an estimate)"
    if pick.split_mode != "tensor":  # llama.cpp: one engine over several GPUs gains no stream speed
        return (
            EVIDENCE["row"]
            if pick.split_mode == "row" and pick.gpus_per_replica > 1
            else EVIDENCE["pipeline"]
        )
    if pick.gpus_per_replica == 1:
        return EVIDENCE["replicas"]
    single = next((x for x in fitting if x.gpus_per_replica == 1), None)
    if single is None or not single.serves_all or single.capacity_sequences < pick.capacity_sequences / 2:
        return EVIDENCE["kv_starved"]
    return (
        EVIDENCE["latency"] + "; at high load the measurements favour replicas (" + EVIDENCE["replicas"] + ")"
    )


def _why(pick: Layout, fitting: list[Layout], serves_all: bool) -> str:
    rate = f"{pick.aggregate_tokens_per_s:,.0f} tok/s" if pick.aggregate_tokens_per_s else "unknown tok/s"
    if pick.aggregate_tokens_per_s_low is not None and pick.aggregate_tokens_per_s_high is not None:
        rate += f" ({pick.aggregate_tokens_per_s_low:,.0f}-{pick.aggregate_tokens_per_s_high:,.0f})"
    head = (
        f"{layout_name(pick)}: holds {pick.capacity_sequences} sequences of this context, {rate} "
        "aggregate (estimate)"
    )
    others = [x for x in fitting if x is not pick and x.aggregate_tokens_per_s]
    if others:
        alt = max(others, key=lambda x: x.aggregate_tokens_per_s or 0)
        head += (
            f"; next best {layout_name(alt)}: {alt.capacity_sequences} sequences, "
            f"{alt.aggregate_tokens_per_s:,.0f} tok/s"
        )
    if not serves_all:
        head += "; no layout holds the whole load at once: requests will queue"
    # one GPU and nothing else compared (a MIG slice, a unified-memory machine): no replicas-versus-TP case
    alone = pick.replicas * pick.gpus_per_replica == 1 and len(fitting) <= 1
    evidence = "" if alone else f"; {_evidence(pick, fitting)}"
    return head + f"{evidence}; on a GPU failure: {pick.one_gpu_failure}"
