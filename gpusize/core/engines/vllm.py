"""vLLM's memory model (pure), following vLLM 0.19.0.

Per GPU, the utilization budget (gpu_memory_utilization x CUDA-visible total) must hold weights +
activation peak + non-torch memory + the KV blocks the requests need; the CUDA context and the
CUDA-graph pool must fit in what is left outside the budget. The KV pool is whatever the budget
leaves after the non-KV terms (vllm/v1/worker/gpu_worker.py determine_available_memory).

The activation and overhead constants are estimates fitted to the vLLM 0.19 H100 records of the
shared reference engine-logs.yaml (bench/calibrate_vllm.py); those records stay as conformance tests
(tests/core/test_conformance.py).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from gpusize.core import kvcache, runtime
from gpusize.core.engines.base import EngineModel
from gpusize.core.gpu import GpuSpec
from gpusize.core.plan import Candidate, PerGpu, context_problem, refused, split_problem
from gpusize.core.spec import ModelSpec
from gpusize.core.weights import rope_cache_bytes, weights_bytes
from gpusize.core.workload import Workload
from gpusize.units import GIB

__all__ = [
    "CUDA_GRAPH_POOL",
    "DEFAULT_GPU_MEMORY_UTILIZATION",
    "ENGINE",
    "HIDDEN_STATE_COPIES",
    "NON_TORCH_PP",
    "NON_TORCH_TP1",
    "NON_TORCH_TPN",
    "SAMPLER_LOGITS_COPIES",
    "SchedulerLimits",
    "activation_bytes",
    "evaluate",
    "evaluate_nodes",
    "evaluate_pipeline",
    "headroom_warning",
    "non_torch_bytes",
    "scheduler_limits",
]

VERSION = "0.19.0"
#: vLLM 0.19.0 CacheConfig default (vllm/config/cache.py: Field(default=0.9)); 0.92 from 0.20.0.
DEFAULT_GPU_MEMORY_UTILIZATION = 0.9
#: vLLM 0.19 `vllm serve` scheduler defaults (engine/arg_utils.py get_batch_defaults): devices with
#: >= 70 GiB that are not A100 get 8192 batched tokens / 1024 sequences, others 2048 / 256.
LARGE_GPU_BYTES = 70 * GIB

#: vLLM 0.19 profile-run peak (torch peak increase) = SAMPLER_LOGITS_COPIES fp32 copies of the dummy
#: sampler's logits (min(max_num_seqs, max_num_batched_tokens) rows x vocab, gathered on every rank)
#: + HIDDEN_STATE_COPIES bf16 copies of the dummy batch's hidden states (max_num_batched_tokens x
#: hidden). Least-squares fit over the 16 non-PP vLLM 0.19 H100 records (bench/calibrate_vllm.py).
SAMPLER_LOGITS_COPIES = 3.76
HIDDEN_STATE_COPIES = 0.90

#: Memory outside PyTorch that grows during the profile run (vLLM 'non-torch forward increase'):
#: 0.24-0.27 GiB at TP=1 (mean 0.25), 2.07-2.17 GiB per GPU at TP>=2 for NCCL / custom all-reduce
#: buffers (mean 2.10). vLLM 0.19 H100 records llmd-v019-*.
NON_TORCH_TP1 = int(0.25 * GIB)
NON_TORCH_TPN = int(2.10 * GIB)
#: vLLM's pipeline-parallel non-torch increase per GPU (llmd-v019-04: 0.07 GiB at PP=2).
NON_TORCH_PP = int(0.07 * GIB)
#: CUDA-graph pool captured after the KV cache is allocated, outside the budget: 0.76-1.84 GiB in
#: the vLLM 0.19 H100 records; we budget the largest seen.
CUDA_GRAPH_POOL = int(1.84 * GIB)


@dataclass(frozen=True)
class SchedulerLimits:
    max_num_seqs: int
    max_num_batched_tokens: int


def scheduler_limits(gpu: GpuSpec, work: Workload) -> SchedulerLimits:
    """The scheduler limits vLLM runs with: the user's, else 0.19's per-device defaults."""
    large = gpu.reported_bytes >= LARGE_GPU_BYTES and "a100" not in gpu.full_name.lower()
    seqs, tokens = (1024, 8192) if large else (256, 2048)
    return SchedulerLimits(work.engine.max_num_seqs or seqs, work.engine.max_num_batched_tokens or tokens)


def utilization(work: Workload) -> float:
    return work.engine.gpu_memory_utilization or DEFAULT_GPU_MEMORY_UTILIZATION


def activation_bytes(spec: ModelSpec, limits: SchedulerLimits, tp: int = 1, fused_moe: bool = True) -> int:
    """Estimate of the activation peak on one GPU (vLLM's 'torch peak increase').

    sampler: copies x rows x vocab x 4 B (logits cast to fp32, top-k/top-p over them);
    hidden: copies x tokens x hidden x 2 B; fused MoE workspace (vLLM fused_moe caches):
    tokens x top_k x (3 x expert width / tp + hidden) x 2 B; multimodal encoder cache:
    tokens x hidden x 2 B held during the profile (gpu_model_runner.profile_run)."""
    tokens = limits.max_num_batched_tokens
    rows = min(limits.max_num_seqs, tokens)
    sampler = SAMPLER_LOGITS_COPIES * rows * spec.vocab_size * 4
    hidden = HIDDEN_STATE_COPIES * tokens * spec.hidden_size * 2
    moe = 0.0
    if spec.moe and fused_moe:
        m = spec.moe
        moe = tokens * m.num_experts_per_tok * (3 * m.moe_intermediate_size / tp + spec.hidden_size) * 2
    encoder = tokens * spec.hidden_size * 2 if spec.vision else 0
    return int(sampler + hidden + moe + encoder)


def non_torch_bytes(tp: int) -> int:
    return NON_TORCH_TP1 if tp == 1 else NON_TORCH_TPN


def evaluate(spec: ModelSpec, gpu: GpuSpec, tp: int, work: Workload) -> Candidate:
    """Fit test of one model on `tp` GPUs of one type."""
    block = spec.quantization.block_size if (spec.quantization and work.uses_checkpoint_blocks) else None
    problem = split_problem(spec, tp, block) or context_problem(spec, work.context_tokens)
    if problem:
        return refused(gpu, tp, problem)
    limits = scheduler_limits(gpu, work)
    weights = weights_bytes(spec, work.weights, tp, work.include_mtp)
    acts = activation_bytes(spec, limits, tp, fused_moe=work.weights.name != "mxfp4")
    overhead = non_torch_bytes(tp)
    visible = gpu.visible_bytes
    usable = int(utilization(work) * visible)
    outside = runtime.cuda_context_bytes(tp) + CUDA_GRAPH_POOL
    state = kvcache.recurrent_state_bytes(spec, work.kv_bytes, tp) * work.batch
    available = usable - weights - acts - overhead - state
    layout = kvcache.kv_layout(spec, work.kv_bytes, tp)
    kv_need, capacity, concurrency, max_ctx = 0, None, None, None
    if layout is not None:
        kv_need, capacity, concurrency, max_ctx = _pool(spec, layout, max(available, 0), work, limits)
    total = weights + kv_need + acts + overhead + state
    per_gpu = PerGpu(
        weights_bytes=weights,
        kv_cache_bytes=kv_need + state,
        activations_bytes=acts,
        overhead_bytes=overhead,
        total_bytes=total,
        usable_bytes=usable,
        headroom_bytes=usable - total,
        outside_budget_bytes=outside,
        outside_budget_limit_bytes=visible - usable,
        visible_bytes=visible,
    )
    reason = _misfit(per_gpu, available, work, max_ctx) or _not_free(gpu, usable)
    return Candidate(
        gpu=gpu.name,
        gpu_full_name=gpu.full_name,
        num_gpus=tp,
        tensor_parallel=tp,
        fits=reason is None,
        reason=reason,
        per_gpu=per_gpu,
        kv_cache_capacity_tokens=capacity,
        max_concurrency=concurrency,
        max_context_tokens=max_ctx,
        kv_heads_per_gpu=kvcache.kv_heads_per_gpu(spec.num_key_value_heads, tp),
        kv_heads_replicated=not spec.mla and tp > spec.num_key_value_heads,
        warning=headroom_warning(per_gpu),
        price_usd_per_hour=gpu.price_for(tp),
    )


def _pool(
    spec: ModelSpec, layout: kvcache.KvLayout, available: int, work: Workload, limits: SchedulerLimits
) -> tuple[int, int, float, int]:
    """(KV bytes the requests need, pool tokens, concurrency, largest context that fits)."""
    batched = limits.max_num_batched_tokens
    need = work.batch * kvcache.request_kv_bytes(layout, work.context_tokens, batched)
    blocks = kvcache.pool_blocks(layout, available)
    per_request = kvcache.blocks_per_request(layout, work.context_tokens, batched)
    limit = max(work.context_tokens, spec.max_context or spec.max_position_embeddings or 0)
    largest = kvcache.largest_context(layout, blocks, work.batch, batched, limit)
    return need, kvcache.capacity_tokens(layout, blocks), round(blocks / per_request, 2), largest


def _misfit(g: PerGpu, available: int, work: Workload, max_ctx: int | None) -> str | None:
    if available <= 0:
        return (
            f"weights, activations and overhead ({(g.usable_bytes - available) / GIB:.1f} GiB) "
            f"exceed the {g.usable_bytes / GIB:.1f} GiB budget; no room for KV cache"
        )
    if g.total_bytes > g.usable_bytes:
        fits_ctx = f"; the largest context that fits is {max_ctx:,} tokens" if max_ctx else ""
        return (
            f"KV cache for {work.batch} x {work.context_tokens:,} tokens needs "
            f"{g.kv_cache_bytes / GIB:.1f} GiB, only {available / GIB:.1f} GiB left{fits_ctx}"
        )
    if g.outside_budget_limit_bytes < runtime.CUDA_CONTEXT_TP1:
        return (
            f"only {g.outside_budget_limit_bytes / GIB:.2f} GiB left outside the utilization "
            f"budget, less than a CUDA context ({runtime.CUDA_CONTEXT_TP1 / GIB:.2f} GiB); "
            f"lower --gpu-memory-utilization"
        )
    return None


def _not_free(gpu: GpuSpec, usable: int) -> str | None:
    """vLLM refuses to start when the GPU's free memory is below utilization x total."""
    if gpu.free_mib is None or gpu.free_mib * (1 << 20) >= usable:
        return None
    return (
        f"only {gpu.free_mib * (1 << 20) / GIB:.1f} GiB free on this GPU, the engine asks for "
        f"{usable / GIB:.1f} GiB; free memory or lower --gpu-memory-utilization"
    )


def headroom_warning(g: PerGpu) -> str | None:
    """The CUDA context and graph pool live outside the budget; warn when our (H100-calibrated,
    conservative) estimate of them exceeds what is left there. Not a verdict: vLLM runs TP=2 on
    24 GB cards at 0.9 and 0.98 (engine-logs vllm-13061), where this estimate says it would not."""
    if g.outside_budget_bytes <= g.outside_budget_limit_bytes:
        return None
    return (
        f"CUDA context + graph pool may need ~{g.outside_budget_bytes / GIB:.1f} GiB outside "
        f"the budget, {g.outside_budget_limit_bytes / GIB:.1f} GiB left: if start-up fails "
        f"at CUDA-graph capture, lower --gpu-memory-utilization or use --enforce-eager"
    )


# --------------------------------------------------------------------------- pipeline parallel


def evaluate_pipeline(
    spec: ModelSpec, gpu: GpuSpec, tp: int, pp: int, work: Workload, servers: int = 1
) -> Candidate:
    """TP x PP: each of `pp` pipeline stages holds 1/pp of the layers (weights and KV) on `tp` GPUs;
    the last stage keeps the sampler's activation peak, and vLLM sizes the pool by the fullest stage
    (llmd-v019-04: Llama-3.1-8B at PP=2 logs 1,075,312 tokens). An ESTIMATE beyond that record."""
    single = evaluate(spec, gpu, tp, work)
    if single.per_gpu is None:
        return replace(
            single, num_gpus=tp * pp, pipeline_parallel=pp, price_usd_per_hour=gpu.price_for(tp * pp)
        )
    g = single.per_gpu
    rope = rope_cache_bytes(spec, work.weights)
    weights = (g.weights_bytes - rope) // pp + rope
    overhead = (NON_TORCH_TPN if tp > 1 else 0) + NON_TORCH_PP
    available = g.usable_bytes - weights - g.activations_bytes - overhead
    layers = len(spec.attention_layers)
    per_token = kvcache.kv_cache_bytes_per_token(spec, work.kv_bytes, tp) * -(-layers // pp) // max(layers, 1)
    capacity = max(available, 0) // per_token // kvcache.BLOCK_SIZE * kvcache.BLOCK_SIZE if per_token else 0
    need = work.batch * work.context_tokens * per_token
    total = weights + need + g.activations_bytes + overhead
    per_gpu = replace(
        g,
        weights_bytes=weights,
        kv_cache_bytes=need,
        overhead_bytes=overhead,
        total_bytes=total,
        headroom_bytes=g.usable_bytes - total,
    )
    fits = available > 0 and capacity >= work.batch * work.context_tokens
    largest = (
        min(capacity // max(work.batch, 1), spec.max_context or capacity)
        // kvcache.BLOCK_SIZE
        * kvcache.BLOCK_SIZE
    )
    reason = (
        None
        if fits
        else f"TP={tp} x PP={pp}: {available / GIB:.1f} GiB left for KV per GPU, {capacity:,} tokens"
    )
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
        price_usd_per_hour=gpu.price_for(tp * pp),
    )


def evaluate_nodes(spec: ModelSpec, gpu: GpuSpec, nodes: int, work: Workload) -> Candidate:
    """Multi-node ESTIMATE: TP=8 inside each server, one pipeline stage per server (vLLM's layout for
    models beyond one node); only used when the user asks (`--nodes`)."""
    return evaluate_pipeline(spec, gpu, 8, nodes, work, servers=nodes)


def effective_settings(
    spec: ModelSpec, gpu: GpuSpec, tp: int, work: Workload
) -> dict[str, float | int | str]:
    limits = scheduler_limits(gpu, work)
    return {
        "gpu_memory_utilization": utilization(work),
        "max_num_seqs": limits.max_num_seqs,
        "max_num_batched_tokens": limits.max_num_batched_tokens,
        "block_size": kvcache.MLA_BLOCK_SIZE if spec.mla else kvcache.BLOCK_SIZE,
    }


ENGINE = EngineModel(
    name="vllm",
    version=f"vLLM {VERSION}",
    note=f"vLLM {VERSION}: gpu_memory_utilization x CUDA-visible total holds weights + activation peak + "
    "non-torch memory + paged KV (16-token blocks, hybrid groups); CUDA context and graphs outside it",
    settings=frozenset({"gpu_memory_utilization", "max_num_seqs", "max_num_batched_tokens"}),
    evaluate=evaluate,
    effective_settings=effective_settings,
)
