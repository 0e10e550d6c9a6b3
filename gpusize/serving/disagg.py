"""Disaggregated prefill/decode (pure), for `serve --disaggregate`: the server's GPUs split into a
prefill pool and a decode pool, each of its own TP and instance count, sized by the same engine model
as `fit`; every request's KV cache moves from a prefill instance to a decode instance over the link
between them (vLLM's KV connectors, NIXL; SGLang's PD with Mooncake/NIXL; Dynamo; llm-d).

The rule compared (an ESTIMATE, like the throughput model it builds on):
- prefill instance: one prompt at a time, `prefill_seconds` each (compute-bound); the pool sustains
  instances / t_prefill requests/s; a request waits in an M/D/1 queue, rho / (2 (1 - rho)) x t_prefill
  (Pollaczek-Khinchine for deterministic service); users (a closed loop) who would send more than
  that are served at the pool's rate and wait N / rate - their own cycle (Little's law), where an
  open loop (--rps) past it waits without bound;
- KV transfer: the prompt's KV cache, per GPU of the decode instance, over NVLink inside a server or
  the inter-node link between servers (core/network.py), plus one message latency;
- decode instance: continuous batching of its share of the requests in flight (Little's law:
  rps x output x time per output token), each step `decode_step` with NO prefill chunks in it (what
  disaggregation buys: serving/load.py `steady` adds (batch - 1) / output x prefill to every token);
- aggregated: `serve`'s own layouts of the same GPUs at the same load.

It pays when, on the same GPUs at the same load, it meets the per-user targets the aggregated layout
misses, or holds the load at a lower $/1M tokens; vLLM's documentation says it "does not improve
throughput" (docs/features/disagg_prefill.md: it tunes TTFT and inter-token latency apart), and it
does not when prompts are short next to the outputs (little prefill to move out of the decode steps),
when the KV transfer outweighs the interference saved, or when one pool idles.
"""

from __future__ import annotations

import math
from dataclasses import replace

from gpusize.core import kvcache
from gpusize.core.engines import engine
from gpusize.core.gpu import GpuSpec
from gpusize.core.network import NodeLink
from gpusize.core.plan import TP_SIZES
from gpusize.core.spec import ModelSpec
from gpusize.core.workload import Workload
from gpusize.dataclass import dataclass
from gpusize.serving import calibrated, economics
from gpusize.serving.layouts import Demand, Layout, layout_name
from gpusize.serving.targets import Targets
from gpusize.serving.throughput import decode_step, link, prefill_seconds

__all__ = [
    "CHECKED_WORDS",
    "MAX_PREFILL_UTILIZATION",
    "NVLINK_KV_EFFICIENCY",
    "Disaggregated",
    "Pool",
    "disaggregate",
    "given_split",
]

#: Highest prefill-pool utilization a plan is sized to: above it the M/D/1 wait grows without bound
#: (at 0.8 a request waits 2 x its prefill). A planning figure.
MAX_PREFILL_UTILIZATION = 0.8
#: Fraction of the NVLink / PCIe per-direction bandwidth a KV transfer inside one server reaches (NIXL
#: over CUDA IPC); the same planning figure as training's NVLink collectives.
NVLINK_KV_EFFICIENCY = 0.8
#: Latency of one KV transfer inside a server (a CUDA IPC copy and its notification), seconds.
LOCAL_TRANSFER_LATENCY_S = 50e-6
#: What the published prefill/decode runs (tests/data/pd_records.yaml) say of the split's speed: the
#: counts are recomputed from the records by tests/serving/test_disagg_records.py.
CHECKED_WORDS = (
    "of the 12 published prefill/decode runs it is checked against, 2 are reproduced on all of TTFT, "
    "per-user decode speed and throughput: too few for an out-of-sample range"
)


@dataclass(frozen=True, kw_only=True)
class Pool:
    """One side of the split: `instances` engines of `tensor_parallel` GPUs each."""

    role: str  # prefill | decode
    instances: int
    tensor_parallel: int
    #: Per GPU: weights and what is left beyond them and the KV cache at the load.
    weights_bytes: int
    headroom_bytes: int
    kv_cache_capacity_tokens: int  # per instance
    capacity_sequences: int  # the pool (decode: sequences held; prefill: prompts in flight)
    requests_per_s: float  # the most the pool sustains
    utilization: float  # at the load


@dataclass(frozen=True, kw_only=True)
class Disaggregated:
    """The best prefill/decode split of the GPUs for the load and its comparison with `serve`'s
    aggregated recommendation on the same GPUs."""

    num_gpus: int
    prefill: Pool
    decode: Pool
    #: "2 prefill GPUs : 6 decode GPUs".
    ratio: str
    arrival_rps: float
    kv_transfer_bytes_per_request: int
    kv_transfer_s: float
    link: str
    holds_load: bool
    meets_targets: bool
    #: None when the prefill pool cannot keep up (the queue grows without bound).
    ttft_s: float | None
    per_request_tokens_per_s: float
    aggregate_tokens_per_s: float
    max_requests_per_s: float
    usd_per_million_tokens: float | None
    aggregated_layout: str | None
    aggregated_ttft_s: float | None
    aggregated_per_request_tokens_per_s: float | None
    aggregated_tokens_per_s: float | None
    aggregated_usd_per_million_tokens: float | None
    pays: bool
    verdict: str


def _kv_link(gpu: GpuSpec, between: NodeLink | None) -> tuple[str, float, float]:
    """(words, bytes/s, latency) of the path a KV cache takes from prefill to decode."""
    if between is not None:
        return between.words(), between.effective_bytes_per_s, between.latency_s
    kind, gbps = link(gpu)
    name = {"nvlink": gpu.tp_link, "pcie": "PCIe", "pcie-host": "PCIe through host memory"}[kind]
    return (
        f"{name} {gbps:g} GB/s inside the server",
        gbps * 1e9 * NVLINK_KV_EFFICIENCY,
        LOCAL_TRANSFER_LATENCY_S,
    )


def _arrival(demand: Demand, seconds_per_request: float) -> float:
    """Requests per second: the rate given, or users / seconds per request (each user sends the next
    request when the last ends)."""
    if demand.rps is not None:
        return demand.rps
    return (demand.users or 1) / max(seconds_per_request, 1e-9)


def _served(demand: Demand, seconds_per_request: float, prefill_rps: float) -> float:
    """Requests per second the pools see: the rate given (--rps: an open loop, which may exceed what
    the prefill pool serves), or with --users a closed loop, which cannot: each user waits for its
    reply before sending again, so past the prefill pool's rate the users queue there instead."""
    rps = _arrival(demand, seconds_per_request)
    return rps if demand.rps is not None else min(rps, prefill_rps)


def _ttft(demand: Demand, rho: float, t_pf: float, first: float, rps: float, decode_s: float) -> float | None:
    """Time to first token: `first` (no wait) plus the prefill queue's wait. Below saturation the
    M/D/1 wait, rho / (2 (1 - rho)) x t_prefill; an open loop at or above it waits without bound
    (None); a closed loop of N users at it waits N / rps - its own cycle (Little's law: the N users
    are each either queued for prefill or being served, and `rps` is the prefill pool's rate)."""
    if rho < 1 - 1e-9:
        return first + rho / (2 * (1 - rho)) * t_pf
    if demand.rps is not None:
        return None
    return max(first, (demand.users or 1) / rps - decode_s)


def _split(
    spec: ModelSpec,
    gpu: GpuSpec,
    work: Workload,
    demand: Demand,
    aim: Targets,
    total: int,
    p_tp: int,
    n_p: int,
    d_tp: int,
    n_d: int,
    between: NodeLink | None,
) -> Disaggregated | None:
    model = engine(work.engine.name)
    pre, dec = model.evaluate(spec, gpu, p_tp, work), model.evaluate(spec, gpu, d_tp, work)
    if not pre.fits or not dec.fits or pre.per_gpu is None or dec.per_gpu is None:
        return None
    prompt = min(demand.prompt_tokens, work.context_tokens)
    output = max(min(demand.output_tokens, work.context_tokens - prompt), 1)
    context = prompt + output // 2
    t_pf = prefill_seconds(spec, work, gpu, p_tp, prompt, cached=demand.cached_tokens(prompt))
    if t_pf is None:
        return None
    t_pf = max(t_pf, 1e-6)
    pool = int(dec.max_concurrency or 0)
    cap = max(min(pool, model.max_sequences(gpu, work) if model.max_sequences else pool), 0)
    if cap < 1:
        return None
    words, rate, latency = _kv_link(gpu, between)
    kv_bytes = kvcache.kv_cache_bytes_per_token(spec, work.kv_bytes, 1) * prompt
    per_gpu_kv = kvcache.kv_cache_bytes_per_token(spec, work.kv_bytes, d_tp) * prompt
    transfer = latency + per_gpu_kv / rate
    request_s = calibrated.engine_speed(work.engine.name).request_s
    # fixed point: in flight on the decode pool, its step, the rate the users send
    batch, step = 1, decode_step(spec, work, gpu, d_tp, 1, context)
    if step is None:
        return None
    prefill_rps = n_p / t_pf
    rps = _served(demand, request_s + t_pf + transfer + output * step.step_s, prefill_rps)
    for _ in range(12):
        in_flight = rps * output * step.step_s
        want = max(1, min(math.ceil(in_flight / n_d), cap))
        step = decode_step(spec, work, gpu, d_tp, want, context) or step
        rps = _served(demand, request_s + t_pf + transfer + output * step.step_s, prefill_rps)
        if want == batch:
            break
        batch = want
    full = decode_step(spec, work, gpu, d_tp, cap, context) or step
    decode_rps = n_d * cap / (output * full.step_s)
    rho = rps * t_pf / n_p
    holds = rho <= MAX_PREFILL_UTILIZATION and rps * output * step.step_s <= n_d * cap
    first = request_s + t_pf + transfer + step.step_s  # the first token with no wait
    ttft = _ttft(demand, rho, t_pf, first, rps, (output - 1) * step.step_s)
    speed = 1 / step.step_s
    tokens = rps * output if holds else min(prefill_rps, decode_rps) * output
    price = gpu.price_for(total)
    return Disaggregated(
        num_gpus=total,
        prefill=Pool(
            role="prefill",
            instances=n_p,
            tensor_parallel=p_tp,
            weights_bytes=pre.per_gpu.weights_bytes,
            headroom_bytes=pre.per_gpu.headroom_bytes,
            kv_cache_capacity_tokens=pre.kv_cache_capacity_tokens or 0,
            capacity_sequences=n_p,
            requests_per_s=prefill_rps,
            utilization=min(rho, 1.0),
        ),
        decode=Pool(
            role="decode",
            instances=n_d,
            tensor_parallel=d_tp,
            weights_bytes=dec.per_gpu.weights_bytes,
            headroom_bytes=dec.per_gpu.headroom_bytes,
            kv_cache_capacity_tokens=dec.kv_cache_capacity_tokens or 0,
            capacity_sequences=n_d * cap,
            requests_per_s=decode_rps,
            utilization=min(rps / decode_rps, 1.0) if decode_rps else 1.0,
        ),
        ratio=f"{n_p * p_tp} prefill GPU(s) : {n_d * d_tp} decode GPU(s)",
        arrival_rps=rps,
        kv_transfer_bytes_per_request=kv_bytes,
        kv_transfer_s=transfer,
        link=words,
        holds_load=holds,
        meets_targets=holds and aim.met_by(speed, ttft),
        ttft_s=ttft,
        per_request_tokens_per_s=speed,
        aggregate_tokens_per_s=tokens,
        max_requests_per_s=min(prefill_rps * MAX_PREFILL_UTILIZATION, decode_rps),
        usd_per_million_tokens=economics.cost_per_million_tokens(price, tokens) if price else None,
        aggregated_layout=None,
        aggregated_ttft_s=None,
        aggregated_per_request_tokens_per_s=None,
        aggregated_tokens_per_s=None,
        aggregated_usd_per_million_tokens=None,
        pays=False,
        verdict="",
    )


def given_split(
    spec: ModelSpec,
    gpu: GpuSpec,
    work: Workload,
    demand: Demand,
    prefill: tuple[int, int],
    decode: tuple[int, int],
    targets: Targets | None = None,
    between: NodeLink | None = None,
) -> Disaggregated | None:
    """One split, `prefill` and `decode` each (tensor parallel size, instances), rated as
    `disaggregate` rates every split it tries (without the aggregated comparison); None when the
    model does not run on one side. For checking the rule against a measured deployment."""
    (p_tp, n_p), (d_tp, n_d) = prefill, decode
    total = p_tp * n_p + d_tp * n_d
    return _split(spec, gpu, work, demand, targets or Targets(), total, p_tp, n_p, d_tp, n_d, between)


def _key(d: Disaggregated) -> tuple[int, float, float]:
    """Holds the load and meets the targets first, then the most requests/s it could take, then TTFT."""
    ttft = d.ttft_s if d.ttft_s is not None else float("inf")
    return (0 if d.meets_targets else 1 if d.holds_load else 2, -d.max_requests_per_s, ttft)


def disaggregate(
    spec: ModelSpec,
    gpu: GpuSpec,
    num_gpus: int,
    work: Workload,
    demand: Demand,
    aggregated: Layout | None,
    targets: Targets | None = None,
    between: NodeLink | None = None,
    per_server: int | None = None,
) -> Disaggregated | None:
    """The best split of `num_gpus` GPUs into a prefill and a decode pool (every TP of 1/2/4/8 on each
    side and every count that uses all the GPUs), compared with `aggregated` (serve's recommendation on
    the same GPUs at the same load); None when no split runs the model on both sides. `between`: the
    inter-node link when the pools sit on different servers (serve --nodes), else the server's own;
    `per_server`: the GPUs of each of those servers, the largest TP an instance may take (an instance
    never spans servers here)."""
    aim = targets or Targets()
    best: Disaggregated | None = None
    widest = min(num_gpus - 1, per_server or num_gpus)
    for p_tp in (t for t in TP_SIZES if t <= widest):
        for d_tp in (t for t in TP_SIZES if t <= widest):
            for n_p in range(1, num_gpus // p_tp):
                rest = num_gpus - n_p * p_tp
                if rest < d_tp or rest % d_tp:
                    continue
                n_d = rest // d_tp
                got = _split(spec, gpu, work, demand, aim, num_gpus, p_tp, n_p, d_tp, n_d, between)
                if got is not None and (best is None or _key(got) < _key(best)):
                    best = got
    if best is None:
        return None
    return _compared(best, aggregated, aim)


def _compared(d: Disaggregated, agg: Layout | None, aim: Targets) -> Disaggregated:
    if agg is None or not agg.fits:
        verdict = "pays: the aggregated layouts do not run the model on these GPUs" if d.holds_load else ""
        return replace(d, pays=d.holds_load, verdict=verdict or "does not pay: neither holds the load")
    agg_meets = agg.serves_all and aim.met_by(agg.per_request_tokens_per_s, agg.ttft_s)
    cost, agg_cost = d.usd_per_million_tokens, agg.usd_per_million_tokens
    agg_tokens = agg.aggregate_tokens_per_s
    if d.holds_load and agg.serves_all and agg_tokens is not None and agg.usd_per_hour:
        # both serve the same load: the same tokens per second, whatever either could take beyond it
        agg_tokens = min(agg_tokens, d.aggregate_tokens_per_s)
        agg_cost = economics.cost_per_million_tokens(agg.usd_per_hour, agg_tokens)
    cheaper = cost is not None and agg_cost is not None and cost < agg_cost * 0.95
    if d.meets_targets and not agg_meets:
        pays, why = True, f"pays: it meets the per-user targets ({aim.words()}) the aggregated layout misses"
    elif d.holds_load and not agg.serves_all:
        pays, why = True, "pays: it holds the load the aggregated layout queues"
    elif d.meets_targets and cheaper:
        pays, why = True, "pays: the same targets at a lower $/1M tokens"
    elif not d.holds_load:
        pays, why = False, "does not pay: the split cannot hold the load (a pool saturates)"
    else:
        speedup = d.per_request_tokens_per_s / max(agg.per_request_tokens_per_s or 1e-9, 1e-9)
        reasons = []
        if speedup < 1.1:
            reasons.append(
                f"decode is no faster per request ({speedup:.2f}x the aggregated layout's): at this "
                "prompt:output ratio little prefill interference leaves the decode steps"
            )
        if d.ttft_s is not None and d.ttft_s > (agg.ttft_s or 0) * 1.2:
            reasons.append(
                f"the KV transfer ({d.kv_transfer_s * 1e3:.1f} ms) and the prefill queue lengthen TTFT"
            )
        if d.prefill.utilization < 0.3 or d.decode.utilization < 0.3:
            reasons.append("one pool idles at this load")
        reasons.append(
            "disaggregation tunes TTFT and inter-token latency apart; it does not raise throughput"
        )
        pays, why = False, "does not pay: " + "; ".join(reasons)
    return replace(
        d,
        aggregated_layout=layout_name(agg),
        aggregated_ttft_s=agg.ttft_s,
        aggregated_per_request_tokens_per_s=agg.per_request_tokens_per_s,
        aggregated_tokens_per_s=agg_tokens,
        aggregated_usd_per_million_tokens=agg_cost,
        pays=pays,
        verdict=why,
    )
