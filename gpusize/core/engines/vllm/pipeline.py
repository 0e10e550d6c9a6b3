"""Pipeline parallel (TP x PP) and multi-node estimates over the single-stage model."""

from __future__ import annotations

from dataclasses import replace

from gpusize.core import kvcache
from gpusize.core.engines.vllm.behaviour import behaviour_of
from gpusize.core.engines.vllm.overhead import NON_TORCH_PP, non_torch_bytes
from gpusize.core.engines.vllm.pool import evaluate
from gpusize.core.gpu import GpuSpec
from gpusize.core.plan import Candidate
from gpusize.core.reserves import total_bytes
from gpusize.core.spec import ModelSpec
from gpusize.core.weights import rope_cache_bytes
from gpusize.core.workload import Workload
from gpusize.errors import InputError
from gpusize.units import GIB

__all__ = ["evaluate_nodes", "evaluate_pipeline"]


def evaluate_pipeline(
    spec: ModelSpec, gpu: GpuSpec, tp: int, pp: int, work: Workload, servers: int = 1
) -> Candidate:
    """TP x PP: each of `pp` pipeline stages holds 1/pp of the layers (weights and KV) on `tp` GPUs;
    the last stage keeps the sampler's activation peak, and vLLM sizes the pool by the fullest stage
    (llmd-v019-04: Llama-3.1-8B at PP=2 logs 1,075,312 tokens). An ESTIMATE beyond that record."""
    if (work.engine.data_parallel_size or 1) > 1:  # data_parallel.py: ranks inside one server
        raise InputError(
            "--data-parallel-size is modelled on one server; across servers 'serve --nodes' lays out "
            "data parallel x expert parallel itself"
        )
    single = evaluate(spec, gpu, tp, work)
    if single.per_gpu is None:
        return replace(single, num_gpus=tp * pp, pipeline_parallel=pp, usd_per_hour=gpu.price_for(tp * pp))
    beh = behaviour_of(work, spec)
    g = single.per_gpu
    rope = rope_cache_bytes(spec, work.weights)
    weights = (g.weights_bytes - rope) // pp + rope
    graphs = g.overhead_bytes - non_torch_bytes(gpu, tp, beh)
    overhead = (non_torch_bytes(gpu, tp, beh) if tp > 1 else 0) + NON_TORCH_PP + graphs
    # What the engine reserves under its own flags (LoRA slots, a draft, the encoder budget) stays
    # whole on every stage: the cautious side (a stage holds only its layers' adapters, and the draft
    # lives on the last stage), stated as an estimate like the rest of this model.
    held = total_bytes(g.reserves)
    available = g.usable_bytes - weights - g.activations_bytes - overhead - held
    layers = len(spec.attention_layers)
    per_token = kvcache.kv_cache_bytes_per_token(spec, work.kv_bytes, tp) * -(-layers // pp) // max(layers, 1)
    capacity = max(available, 0) // per_token // kvcache.BLOCK_SIZE * kvcache.BLOCK_SIZE if per_token else 0
    need = work.batch * work.context_tokens * per_token
    total = weights + need + g.activations_bytes + overhead + held
    per_gpu = replace(
        g,
        weights_bytes=weights,
        kv_cache_bytes=need,
        overhead_bytes=overhead,
        total_bytes=total,
        headroom_bytes=g.usable_bytes - total,
    )
    fits = available > 0 and capacity >= work.batch * work.context_tokens
    largest = min(capacity // max(work.batch, 1), spec.max_context or capacity)
    largest = largest // kvcache.BLOCK_SIZE * kvcache.BLOCK_SIZE
    reason = None
    if not fits:
        reason = f"TP={tp} x PP={pp}: {available / GIB:.1f} GiB left for KV per GPU, {capacity:,} tokens"
    warning = None
    if servers > 1:
        warning = (
            f"spans {servers} servers (TP={tp} x PP={pp}): the inter-node network (InfiniBand/RoCE) "
            f"decides speed, and memory of remote GPUs does not add up for free. Estimate."
        )
    return Candidate(
        gpu=gpu.name,
        gpu_full_name=gpu.full_name,
        num_gpus=tp * pp,
        tensor_parallel=tp,
        pipeline_parallel=pp,
        fits=fits,
        reason=reason,
        per_gpu=per_gpu,
        kv_cache_capacity_tokens=capacity,
        max_concurrency=round(capacity / work.context_tokens, 2),
        max_context_tokens=largest,
        kv_heads_per_gpu=kvcache.kv_heads_per_gpu(spec.num_key_value_heads, tp),
        warning=warning,
        usd_per_hour=gpu.price_for(tp * pp),
    )


def evaluate_nodes(spec: ModelSpec, gpu: GpuSpec, nodes: int, work: Workload, per_node: int = 8) -> Candidate:
    """Multi-node ESTIMATE: TP over the `per_node` GPUs of each server, one pipeline stage per server
    (vLLM's layout for models beyond one node); only used when the user asks (`--nodes`)."""
    return evaluate_pipeline(spec, gpu, per_node, nodes, work, servers=nodes)
