"""Multi-node serving layouts (pure), for `serve --nodes N` and `quote --nodes N`: N servers of G GPUs
(--gpus G, 8 by default) joined by an inter-node link (serving/network.py), laid out as

- data-parallel replicas that each fit one server (TP <= G; no traffic between servers);
- one engine over every server, tensor parallel inside each and pipeline parallel across (TP=G x PP=N,
  vLLM's layout for a model beyond one node; memory from the engine's own `nodes` plan, as `fit --nodes`);
- one engine tensor parallel over every GPU (TP=GN, SGLang's `--nnodes` recipe for DeepSeek-V3 on two
  H100 servers): two all-reduces per layer cross the link;
- MoE only: data-parallel attention with expert parallel over every GPU (vLLM `--data-parallel-size GN
  --enable-expert-parallel`, SGLang `--enable-dp-attention --dp GN --ep GN`): each GPU holds the
  dense weights whole and 1/(GN) of the routed experts; tokens reach their experts by all-to-all.

How each engine's launch command says it is the engine's own declaration (`EngineModel.across_servers`).

Each has its memory per GPU from the same engine model and the speed cost of its inter-node traffic
(pipeline hops, all-reduces, all-to-all), all ESTIMATES stated as such.
"""

from __future__ import annotations

import math
from dataclasses import replace

from gpusize.core import kvcache, network
from gpusize.core.engines import engine
from gpusize.core.gpu import GpuSpec
from gpusize.core.network import GPUS_PER_NODE, NodeLink, NodePlan
from gpusize.core.params import moe_layers
from gpusize.core.plan import Candidate
from gpusize.core.releases import parse_version
from gpusize.core.spec import ModelSpec
from gpusize.core.weights import data_parallel_weights_bytes
from gpusize.core.workload import Workload
from gpusize.serving import economics, load
from gpusize.serving.launch import LaunchCommand
from gpusize.serving.layouts import Demand, Layout, compare, concurrency_for, mean_context, recommend
from gpusize.serving.quote import Option, option_from
from gpusize.serving.targets import Targets
from gpusize.serving.throughput import (
    decode_step,
    decode_weight_bytes,
    experts_touched,
    kv_read_bytes,
    prefill_seconds,
    speed_on,
)
from gpusize.units import GIB

__all__ = [
    "DEEPEP_LOW_LATENCY_S",
    "all_to_all_floor_s",
    "MULTINODE_SINCE",
    "across_servers_words",
    "layout_memory",
    "node_launch",
    "node_option",
    "expert_parallel_weights_bytes",
    "node_layouts",
    "pipeline_hop_bytes",
]

#: First release of each engine that runs a layout across servers, by (engine, layout). vLLM: pipeline
#: and tensor parallel over nodes (Ray or multiprocessing backends) predate every release gpusize
#: models; data parallel with expert parallel across nodes from v0.9.0 (`--data-parallel-size-local`,
#: `--data-parallel-address`, docs/serving/data_parallel_deployment.md). SGLang: `--nnodes` tensor
#: parallel predates its modelled range; `--pp-size` from v0.4.8 (python/sglang/srt/server_args.py
#: `pp_size`); DP attention with expert parallel (`--enable-dp-attention --ep-size`) predates the range.
MULTINODE_SINCE: dict[tuple[str, str], str] = {
    ("vllm", "pipeline"): "0.0",
    ("vllm", "tensor"): "0.0",
    ("vllm", "expert"): "0.9.0",
    ("sglang", "pipeline"): "0.4.8",
    ("sglang", "tensor"): "0.0",
    ("sglang", "expert"): "0.0",
}

#: Seconds of one MoE layer's dispatch + combine with DeepEP's low-latency kernels, by EP size, at
#: 128 tokens per GPU, top-8 of 256 experts, hidden 7168, on H800 with ConnectX-7 400 Gb/s
#: InfiniBand (deepseek-ai/DeepEP README, "Low-latency kernels with pure RDMA": dispatch 77 / 118 /
#: 155 / 173 / 192 / 194 us and combine 114 / 195 / 273 / 314 / 369 / 360 us at EP 8-256). The
#: floor of the all-to-all time per MoE layer; the bytes over the link decide above it.
DEEPEP_LOW_LATENCY_S: dict[int, float] = {
    8: (77 + 114) * 1e-6,
    16: (118 + 195) * 1e-6,
    32: (155 + 273) * 1e-6,
    64: (173 + 314) * 1e-6,
    128: (192 + 369) * 1e-6,
    256: (194 + 360) * 1e-6,
}


def all_to_all_floor_s(ep: int) -> float:
    """DEEPEP_LOW_LATENCY_S at the largest measured EP size not above `ep` (EP 8 below it)."""
    sizes = [k for k in sorted(DEEPEP_LOW_LATENCY_S) if k <= ep] or [min(DEEPEP_LOW_LATENCY_S)]
    return DEEPEP_LOW_LATENCY_S[sizes[-1]]


#: Bytes per routed token and hidden element of one MoE layer's all-to-all: FP8 dispatch (1) + BF16
#: combine (2), DeepEP's formats (README: "dispatch FP8, combine BF16").
A2A_BYTES_PER_ELEMENT = 3


def across_servers_words(engine_name: str, pick: Layout) -> tuple[str, ...] | None:
    """The words an engine's launch command adds (beside its --tensor-parallel-size) to run `pick` as
    one engine across servers, as the engine declares them (`EngineModel.across_servers`), or None
    where gpusize does not write that launch. Tensor parallel over the servers adds nothing."""
    how = engine(engine_name).across_servers
    if how is None:
        return None
    if pick.expert_parallel > 1:
        flags = how.expert_flags
        return None if flags is None else tuple(w.format(ep=pick.expert_parallel) for w in flags)
    if pick.pipeline_parallel > 1:
        return (how.pipeline_flag, str(pick.pipeline_parallel))
    return ()


def node_launch(pick: Layout, plan: NodePlan | None, engine_name: str) -> dict[str, LaunchCommand]:
    """How the recommended layout runs across servers under `engine_name`, beside its launch command
    (which carries the layout's parallelism, `across_servers_words`): what each server adds to it,
    as the engine declares it (`EngineModel.across_servers`)."""
    if plan is None or pick.gpus_per_replica <= plan.gpus_per_node:
        if plan is not None and pick.replicas * pick.gpus_per_replica > plan.gpus_per_node:
            return {
                "nodes": LaunchCommand(
                    None, f"replicas spread over the {plan.nodes} servers; no traffic between them"
                )
            }
        return {}
    how = engine(engine_name).across_servers
    if how is None:
        return {"nodes": LaunchCommand(None, "gpusize writes no launch of this engine across servers")}
    template = how.expert_servers if pick.expert_parallel > 1 else how.spanning_servers
    text = template.format(n=plan.nodes, local=plan.gpus_per_node, ep=pick.expert_parallel)
    return {"nodes": LaunchCommand(None, text)}


def pipeline_hop_bytes(spec: ModelSpec, tokens: int) -> int:
    """Bytes one pipeline stage sends the next for `tokens` tokens: the hidden states and the residual
    in bf16 (vLLM's IntermediateTensors {"hidden_states", "residual"}, e.g. model_executor/models/
    llama.py make_empty_intermediate_tensors_factory)."""
    return 2 * tokens * spec.hidden_size * network.ACTIVATION_BYTES


def expert_parallel_weights_bytes(spec: ModelSpec, work: Workload, ep: int) -> int:
    """Weight bytes one GPU holds under data-parallel attention + expert parallel over `ep` GPUs: the
    whole model at TP=1 less the routed experts, plus ceil(experts / ep) whole experts (vLLM
    determine_expert_map gives the first ranks one more when ep does not divide them)."""
    return data_parallel_weights_bytes(spec, work.weights, 1, ep, False, True)


def _supported(work: Workload, kind: str) -> str | None:
    """None when the engine release runs `kind` across servers, else why not."""
    since = MULTINODE_SINCE.get((work.engine.name, kind))
    if since is None:
        return f"{engine(work.engine.name).label} has no {kind}-parallel layout across servers in gpusize"
    version = parse_version(work.engine.version or "")
    first = parse_version(since)
    if version is not None and first is not None and version < first:
        return f"{kind} parallel across servers needs {engine(work.engine.name).label} {since} or later"
    return None


def _point(
    spec: ModelSpec,
    work: Workload,
    gpu: GpuSpec,
    tp: int,
    batch: int,
    demand: Demand,
    prompt: int,
    output: int,
    context: int,
    step_of: float | None,
    extra_step_s: float,
    extra_prefill_s: float,
    lanes: int = 1,
) -> tuple[float, float, float | None, float] | None:
    """(per-request tok/s, aggregate tok/s, TTFT, decode step s) as load.steady computes them, with
    the inter-node time added to each decode step and to the prefill, and `lanes` micro-batches in
    flight at once (pipeline stages each working on one). `step_of`: the decode step, when the caller
    computed it."""
    lane = max(1, math.ceil(batch / lanes))
    if step_of is None:
        # one engine over servers: vLLM runs it on Ray (or in pipeline stages), without async scheduling
        step = decode_step(spec, work, gpu, tp, lane, context, host_overlap=False)
        if step is None:
            return None
        step_of = step.step_s
    t_pf = prefill_seconds(spec, work, gpu, tp, prompt, cached=demand.cached_tokens(prompt))
    prefill = (t_pf or 0.0) + extra_prefill_s
    step_s = step_of + extra_step_s
    tpot, first, cycle = load.turn(step_s, prefill, lane, output, speed_on(work, gpu).request_s)
    active = min(lanes, batch)
    return 1 / tpot, active * lane * max(output, 1) / cycle, first if t_pf is not None else None, step_s


def _layout(
    base: Candidate | None,
    *,
    gpu: GpuSpec,
    nodes: int,
    tp: int,
    pp: int,
    ep: int,
    capacity: int,
    kv_per_seq_gpu: int,
    point: tuple[float, float, float | None, float] | None,
    in_flight: int,
    network_s: float,
    note: str,
    reason: str | None,
    engine_name: str,
    arch: str,
) -> Layout:
    gpus = max(tp * pp, ep)  # every GPU of the servers
    price = gpu.price_for(gpus)
    fits = reason is None and base is not None and base.per_gpu is not None and capacity >= 1
    failure = f"service down: the only engine spans every GPU of the {nodes} servers" if fits else ""
    common = {
        "replicas": 1,
        "tensor_parallel": tp,
        "gpus_per_replica": gpus,
        "split_mode": "tensor",
        "nodes": nodes,
        "pipeline_parallel": pp,
        "expert_parallel": ep,
        "network": note,
        "one_gpu_failure": failure,
        "usd_per_hour": price,
    }
    if not fits or base is None or base.per_gpu is None:
        return Layout(fits=False, reason=reason or (base.reason if base else None), **common)  # type: ignore[arg-type]
    g = base.per_gpu
    active = min(in_flight, capacity)
    per_request, aggregate, ttft, step_s = point if point else (None, None, None, 0.0)
    # steady load's spread (load.FirstTokenSpread: each request arrives at a random point of a step)
    spread = load.FirstTokenSpread(ttft, wave_s=step_s) if ttft is not None else None
    kv = kv_per_seq_gpu * math.ceil(active / max(1, ep))
    headroom = g.usable_bytes - (g.total_bytes - g.kv_cache_bytes) - kv
    per_kind = load.per_request_metric(in_flight)
    ranges = tuple(  # one engine across servers: no single-server range applies
        load.across_servers(
            load.speed_range(
                engine_name, gpu.vendor, arch, in_flight, m, architecture=load.architecture_family(gpu)
            )
        )
        for m in (per_kind, "aggregate", "ttft")
    )
    per_low, per_high = load.ranged(per_request, ranges[0])
    agg_low, agg_high = load.ranged(aggregate, ranges[1])
    ttft_low, ttft_high = load.ranged(ttft, ranges[2])
    cost = economics.cost_per_million_tokens(price, aggregate) if price and aggregate else None
    return Layout(
        fits=True,
        kv_cache_capacity_tokens=base.kv_cache_capacity_tokens,
        max_concurrency=float(capacity),
        capacity_sequences=capacity,
        concurrent_sequences=active,
        serves_all=in_flight <= capacity,
        per_request_tokens_per_s=per_request,
        per_request_tokens_per_s_low=per_low,
        per_request_tokens_per_s_high=per_high,
        aggregate_tokens_per_s=aggregate,
        aggregate_tokens_per_s_low=agg_low,
        aggregate_tokens_per_s_high=agg_high,
        ttft_s=ttft,
        ttft_s_low=ttft_low,
        ttft_s_high=ttft_high,
        ttft_p50_s=spread.quantile(load.TTFT_QUANTILES[0]) if spread else None,
        ttft_p90_s=spread.quantile(load.TTFT_QUANTILES[1]) if spread else None,
        speed_ranges=load.shown_ranges(ranges, (per_request, aggregate, ttft)),
        bound="network" if point and network_s > 0.5 / max(per_request or 1, 1e-9) else "memory",
        kv_cache_bytes=kv,
        headroom_bytes=headroom,
        network_s_per_step=network_s,
        usd_per_month=price * economics.HOURS_PER_MONTH if price else None,
        usd_per_million_tokens=cost,
        usd_per_million_tokens_low=economics.cost_per_million_tokens(price, agg_high)
        if price and agg_high
        else None,
        usd_per_million_tokens_high=economics.cost_per_million_tokens(price, agg_low)
        if price and agg_low
        else None,
        **common,  # type: ignore[arg-type]
    )


def _in_flight(demand: Demand, per_request: float, ttft: float | None) -> int:
    return concurrency_for(demand, per_request, ttft or 0.0)


def _pipeline(
    spec: ModelSpec, gpu: GpuSpec, nodes: int, work: Workload, demand: Demand, link: NodeLink, per_node: int
) -> Layout:
    """TP=G x PP=N over N servers of G GPUs: memory from the engine's own multi-node plan; each
    decode step of a micro-batch crosses N - 1 stage boundaries (latency + its hidden states over the
    link), N micro-batches in flight keep the stages busy (fewer sequences than stages leave the
    others idle: the bubble)."""
    model = engine(work.engine.name)
    why = _supported(work, "pipeline")
    base = model.nodes(spec, gpu, nodes, work, per_node) if model.nodes is not None and why is None else None
    if base is None and why is None:
        why = f"{model.label}: no pipeline-parallel memory model in gpusize"
    note = (
        f"TP={per_node} inside each server, PP={nodes} across: each token's hidden states cross {nodes - 1} "
        f"server boundary(ies) per step over {link.words()}"
    )
    return _grown(spec, gpu, nodes, work, demand, link, base, why, note, tp=per_node, pp=nodes, ep=1)


def _tensor(
    spec: ModelSpec, gpu: GpuSpec, nodes: int, work: Workload, demand: Demand, link: NodeLink, per_node: int
) -> Layout:
    """TP=GN over every GPU of N servers of G: memory from the engine model at that TP; two
    all-reduces per layer each step, hierarchical as NCCL runs them on rail-optimized servers: inside
    each server over NVLink (the decode step's own term), then between servers, each GPU's NIC
    carrying 1/G of the tensor in an all-reduce over the N servers."""
    tp = per_node * nodes
    model = engine(work.engine.name)
    why = _supported(work, "tensor")
    base = model.evaluate(spec, gpu, tp, work) if why is None else None
    note = (
        f"TP={tp} over {nodes} servers: 2 all-reduces per layer per step cross {link.words()} "
        "(hierarchical: NVLink inside each server, then the link)"
    )
    return _grown(spec, gpu, nodes, work, demand, link, base, why, note, tp=tp, pp=1, ep=1)


def _grown(
    spec: ModelSpec,
    gpu: GpuSpec,
    nodes: int,
    work: Workload,
    demand: Demand,
    link: NodeLink,
    base: Candidate | None,
    why: str | None,
    note: str,
    *,
    tp: int,
    pp: int,
    ep: int,
) -> Layout:
    """A TP x PP layout of one engine over every server, its speed with the network terms."""
    model = engine(work.engine.name)
    common = {
        "gpu": gpu,
        "nodes": nodes,
        "tp": tp,
        "pp": pp,
        "ep": ep,
        "engine_name": work.engine.name,
        "arch": load.speed_arch(spec, work, gpu),
    }
    if base is None or not base.fits or base.per_gpu is None:
        return _layout(
            base,
            capacity=0,
            kv_per_seq_gpu=0,
            point=None,
            in_flight=0,
            network_s=0.0,
            note=note,
            reason=why or (base.reason if base else "does not fit"),
            **common,  # type: ignore[arg-type]
        )
    pool = int(base.max_concurrency or 0)
    seqs = model.max_sequences(gpu, work) if model.max_sequences else pool
    capacity = max(min(pool, seqs), 0)
    prompt = min(demand.prompt_tokens, work.context_tokens)
    output = max(min(demand.output_tokens, work.context_tokens - prompt), 1)
    context = mean_context(demand, work.context_tokens)
    step_tp = tp  # TP over all: each GPU reads 1/tp of the weights; TP x PP: 1/tp of its stage's
    in_flight, point, net = 1, None, 0.0
    for _ in range(12):
        batch = max(1, min(in_flight, capacity))
        lane = math.ceil(batch / pp)
        if pp > 1:
            net = (pp - 1) * network.p2p_s(link, pipeline_hop_bytes(spec, lane) / step_tp)
            pf_net = (pp - 1) * network.p2p_s(link, pipeline_hop_bytes(spec, prompt) / step_tp)
        else:
            # hierarchical (NCCL over rail-optimized servers): the NVLink part is in the decode step;
            # between servers each GPU's NIC carries 1/G of the tensor in an all-reduce over `nodes`
            rail = tp // nodes  # the GPUs of one server
            net = 2 * len(spec.layers) * network.allreduce_s(link, nodes, lane * spec.hidden_size * 2 / rail)
            pf_net = (
                2 * len(spec.layers) * network.allreduce_s(link, nodes, prompt * spec.hidden_size * 2 / rail)
            )
        point = _point(
            spec, work, gpu, step_tp, batch, demand, prompt, output, context, None, net, pf_net, pp
        )
        if point is None:
            break
        want = _in_flight(demand, point[0], point[2])
        if want == in_flight:
            break
        in_flight = want
    if demand.users is not None:
        in_flight = demand.users
    kv_seq = base.per_gpu.kv_cache_bytes // max(work.batch, 1)
    return _layout(
        base,
        capacity=capacity,
        kv_per_seq_gpu=kv_seq,
        point=point,
        in_flight=in_flight,
        network_s=net,
        note=note,
        reason=None,
        **common,  # type: ignore[arg-type]
    )


def expert_parallel_plan(
    spec: ModelSpec,
    gpu: GpuSpec,
    nodes: int,
    work: Workload,
    why: str | None = None,
    per_node: int = GPUS_PER_NODE,
) -> tuple[Candidate | None, int, str | None]:
    """(the plan of one GPU, the sequences of the requested context all GPUs hold, why not) under
    data-parallel attention x expert parallel over `nodes` servers of `per_node` GPUs: the pipeline
    plan's activations,
    overhead and reserves (an estimate), expert_parallel_weights_bytes, and a KV pool at TP=1 for the
    GPU's own whole sequences, capped by the engine's max_num_seqs per DP rank."""
    ep = per_node * nodes
    model = engine(work.engine.name)
    shaped = (
        model.nodes(spec, gpu, nodes, work, per_node)
        if model.nodes is not None
        else model.evaluate(spec, gpu, per_node, work)
    )
    g = shaped.per_gpu
    if why is not None or g is None:
        return None, 0, why or shaped.reason or "does not fit"
    weights = expert_parallel_weights_bytes(spec, work, ep)
    rest = g.total_bytes - g.weights_bytes - g.kv_cache_bytes  # activations, overhead, reserves
    available = g.usable_bytes - weights - rest
    per_token = kvcache.kv_cache_bytes_per_token(spec, work.kv_bytes, 1)
    tokens = max(available, 0) // per_token // kvcache.BLOCK_SIZE * kvcache.BLOCK_SIZE if per_token else 0
    per_gpu_seqs = tokens // max(work.context_tokens, 1)
    seqs_cap = model.max_sequences(gpu, work) if model.max_sequences else per_gpu_seqs
    capacity = ep * min(per_gpu_seqs, seqs_cap)
    need = per_token * work.context_tokens * work.batch
    total = weights + rest + need
    reason = None if capacity >= 1 else f"EP={ep}: {available / GIB:.1f} GiB left for KV per GPU"
    base = replace(
        shaped,
        fits=capacity >= 1,
        reason=reason,
        num_gpus=ep,
        tensor_parallel=1,
        pipeline_parallel=1,
        kv_cache_capacity_tokens=tokens,
        max_concurrency=float(capacity),
        per_gpu=replace(
            g,
            weights_bytes=weights,
            kv_cache_bytes=need,
            total_bytes=total,
            headroom_bytes=g.usable_bytes - total,
        ),
    )
    return base, capacity, reason


def _expert(
    spec: ModelSpec, gpu: GpuSpec, nodes: int, work: Workload, demand: Demand, link: NodeLink, per_node: int
) -> Layout | None:
    """Data-parallel attention + expert parallel over every GPU (MoE only; None for a dense model).

    Memory per GPU: the pipeline plan's activations, overhead and reserves (an estimate), the weights
    of expert_parallel_weights_bytes, and a KV pool at TP=1 for the GPU's own sequences (each DP rank
    holds whole sequences). Decode step per GPU: its sequences' step at TP=1, scaled by the bytes it
    reads (dense weights whole, the experts the whole batch touches / EP, its sequences' KV), plus per
    MoE layer the all-to-all (DEEPEP_LOW_LATENCY_S floor, or its bytes over the link)."""
    if spec.moe is None:
        return None
    ep = per_node * nodes
    why = _supported(work, "expert")
    note = (
        f"DP attention x EP={ep} over {nodes} servers: each MoE layer's dispatch and combine (all-to-all) "
        f"cross {link.words()}"
    )
    common = {
        "gpu": gpu,
        "nodes": nodes,
        "tp": 1,
        "pp": 1,
        "ep": ep,
        "engine_name": work.engine.name,
        "arch": load.speed_arch(spec, work, gpu),
    }
    base, capacity, why = expert_parallel_plan(spec, gpu, nodes, work, why, per_node)
    if base is None or capacity < 1:
        return _layout(
            base,
            capacity=0,
            kv_per_seq_gpu=0,
            point=None,
            in_flight=0,
            network_s=0.0,
            note=note,
            reason=why or (base.reason if base else None) or "does not fit",
            **common,  # type: ignore[arg-type]
        )
    per_token = kvcache.kv_cache_bytes_per_token(spec, work.kv_bytes, 1)
    prompt = min(demand.prompt_tokens, work.context_tokens)
    output = max(min(demand.output_tokens, work.context_tokens - prompt), 1)
    context = mean_context(demand, work.context_tokens)
    fmt = work.weights
    expert_bytes = spec.params.experts * fmt.role_bytes("experts") * fmt.checkpoint_scale
    layers = moe_layers(spec)
    in_flight, point, net = 1, None, 0.0
    for _ in range(12):
        batch = max(1, min(in_flight, capacity))
        local = max(1, math.ceil(batch / ep))
        one = decode_step(spec, work, gpu, 1, local, context)
        if one is None:
            break
        read_one = decode_weight_bytes(spec, work, 1, local) + local * kv_read_bytes(spec, work, 1, context)
        local_experts = expert_bytes * experts_touched(spec, local)
        read_ep = read_one - local_experts + expert_bytes * experts_touched(spec, batch) / ep
        step_s = one.fixed_s + (one.step_s - one.fixed_s) * read_ep / max(read_one, 1.0)
        a2a_bytes = local * spec.moe.num_experts_per_tok * spec.hidden_size * A2A_BYTES_PER_ELEMENT
        floor = all_to_all_floor_s(ep)
        net = layers * max(floor, network.all_to_all_s(link, nodes, a2a_bytes))
        pf_bytes = prompt * spec.moe.num_experts_per_tok * spec.hidden_size * A2A_BYTES_PER_ELEMENT
        pf_net = layers * max(floor, network.all_to_all_s(link, nodes, pf_bytes))
        point = _point(spec, work, gpu, 1, local, demand, prompt, output, context, step_s, net, pf_net)
        if point is None:
            break
        point = (point[0], point[1] * min(ep, batch), point[2], point[3])
        want = _in_flight(demand, point[0], point[2])
        if want == in_flight:
            break
        in_flight = want
    if demand.users is not None:
        in_flight = demand.users
    return _layout(
        base,
        capacity=capacity,
        kv_per_seq_gpu=per_token * context,
        point=point,
        in_flight=in_flight,
        network_s=net,
        note=note,
        reason=None,
        **common,  # type: ignore[arg-type]
    )


def layout_memory(spec: ModelSpec, gpu: GpuSpec, work: Workload, x: Layout) -> Candidate:
    """The engine's plan of one GPU of a layout of `serve --nodes` (memory per GPU)."""
    model = engine(work.engine.name)
    per_node = x.gpus_per_replica // max(x.nodes, 1)  # a layout that spans the servers: each one's GPUs
    if x.expert_parallel > 1:
        base, _, why = expert_parallel_plan(spec, gpu, x.nodes, work, per_node=per_node)
        return base or replace(model.evaluate(spec, gpu, per_node, work), fits=False, reason=why)
    if x.pipeline_parallel > 1 and model.nodes is not None:
        return model.nodes(spec, gpu, x.pipeline_parallel, work, per_node)
    return model.evaluate(spec, gpu, x.tensor_parallel, work)


def node_option(
    spec: ModelSpec,
    gpu: GpuSpec,
    work: Workload,
    demand: Demand,
    plan: NodePlan,
    targets: Targets | None = None,
) -> Option:
    """The quote option of `plan.nodes` servers of this GPU type: the layout `serve --nodes`
    recommends, its memory per GPU, speed and price for all the servers."""
    aim = targets or Targets()
    layouts = node_layouts(spec, gpu, plan.nodes, work, demand, plan.link, aim, plan.gpus_per_node)
    pick, _ = recommend(layouts, aim)
    x = pick or layouts[0]
    best = layout_memory(spec, gpu, work, x)
    g = best.per_gpu if best.fits and pick is not None else None
    fits = pick is not None
    return option_from(
        gpu,
        plan.nodes * plan.gpus_per_node,
        x,
        g,
        fits,
        None if fits else (x.reason or best.reason or "no layout fits"),
        (plan.words(),),
        headroom_bytes=x.headroom_bytes if g else None,
        nodes=plan.nodes,
        pipeline_parallel=x.pipeline_parallel,
        expert_parallel=x.expert_parallel,
        network=x.network or (f"replicas on separate servers: no traffic over {plan.link.words()}"),
    )


def node_layouts(
    spec: ModelSpec,
    gpu: GpuSpec,
    nodes: int,
    work: Workload,
    demand: Demand,
    link: NodeLink,
    targets: Targets | None = None,
    per_node: int = GPUS_PER_NODE,
) -> list[Layout]:
    """Every layout of `nodes` servers of `per_node` GPUs for the demand: replicas that each fit one
    server (tensor parallel inside it, never over the link), then the engines that span servers (TP
    x PP, TP over all, and for MoE DP attention x EP), each marked by whether its users get the
    targets."""
    aim = targets or Targets()
    replicas = [
        replace(x, nodes=nodes)
        for x in compare(spec, gpu, per_node * nodes, work, demand, targets=aim)
        if x.gpus_per_replica <= per_node
    ]
    spanning = [
        _pipeline(spec, gpu, nodes, work, demand, link, per_node),
        _tensor(spec, gpu, nodes, work, demand, link, per_node),
    ]
    moe = _expert(spec, gpu, nodes, work, demand, link, per_node)
    if moe is not None:
        spanning.append(moe)
    spanning = [
        replace(x, meets_targets=x.fits and aim.met_by(x.per_request_tokens_per_s, x.ttft_s))
        for x in spanning
    ]
    return replicas + spanning
