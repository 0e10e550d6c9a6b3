"""Tensor-parallel planning: candidate splits, the fit test per GPU, and the recommendation (pure).

The engine model is vLLM 0.19.0 (`ENGINE_VERSION`): per GPU, the utilization budget
(utilization x CUDA-visible total) must hold weights + activation peak + non-torch memory + the
KV blocks the requests need; the CUDA context and CUDA-graph pool must fit in what is left
outside the budget. The KV pool is whatever the budget leaves after the non-KV terms.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from gpusize import kvcache, memory
from gpusize.catalog import GpuSpec
from gpusize.model import ModelSpec
from gpusize.params import ParamCounts

ENGINE = "vllm"
ENGINE_VERSION = "0.19.0"
#: vLLM 0.19.0 CacheConfig default (vllm/config/cache.py: Field(default=0.9)); 0.92 from 0.20.0.
DEFAULT_GPU_MEMORY_UTILIZATION = 0.9
#: vLLM 0.19 `vllm serve` scheduler defaults (engine/arg_utils.py get_batch_defaults): devices with
#: >= 70 GiB that are not A100 get 8192 batched tokens / 1024 sequences, others 2048 / 256.
LARGE_GPU_BYTES = 70 * (1 << 30)
TP_SIZES = (1, 2, 4, 8)


@dataclass(frozen=True)
class Workload:
    context: int
    batch: int
    weight_dtype: str  # auto | fp32 | bf16 | fp16 | fp8 | int8 | int4
    kv_dtype: str  # auto | bf16 | fp16 | fp8
    gpu_memory_utilization: float = DEFAULT_GPU_MEMORY_UTILIZATION
    #: Load the checkpoint's multi-token-prediction layers (speculative decoding).
    include_mtp: bool = False
    #: Exact bytes of the stored tensors (safetensors headers / GGUF), when the source told us.
    checkpoint_bytes: int | None = None
    #: Engine memory model: vllm (here), sglang, llamacpp, transformers (gpusize.engines).
    engine: str = "vllm"


@dataclass(frozen=True)
class SchedulerLimits:
    max_num_seqs: int
    max_num_batched_tokens: int


def scheduler_limits(gpu: GpuSpec) -> SchedulerLimits:
    if gpu.reported_bytes >= LARGE_GPU_BYTES and "a100" not in gpu.full_name.lower():
        return SchedulerLimits(1024, 8192)
    return SchedulerLimits(256, 2048)


@dataclass(frozen=True)
class PerGpu:
    weights_bytes: int
    kv_cache_bytes: int
    activations_bytes: int
    overhead_bytes: int
    total_bytes: int
    usable_bytes: int
    headroom_bytes: int
    #: CUDA context + CUDA-graph pool, held outside the utilization budget.
    outside_budget_bytes: int
    outside_budget_limit_bytes: int
    visible_bytes: int


@dataclass(frozen=True)
class Candidate:
    gpu: str
    num_gpus: int
    tensor_parallel: int
    fits: bool
    reason: str | None
    per_gpu: PerGpu | None = None
    kv_cache_capacity_tokens: int | None = None
    max_concurrency: float | None = None
    max_context_tokens: int | None = None
    kv_heads_per_gpu: int | None = None
    kv_heads_replicated: bool = False
    warning: str | None = None
    #: System RAM the engine needs beside the GPUs (llama.cpp layers and KV left on the CPU).
    host_bytes: int | None = None
    #: Pipeline stages across servers (multi-node plans only, `--nodes`).
    pipeline_parallel: int = 1


def weight_format_for(spec: ModelSpec, counts: ParamCounts, work: Workload) -> memory.WeightFormat:
    """The weight format for this workload, corrected by the checkpoint's stored bytes (dtype=auto)."""
    fmt = memory.weight_format(spec, work.weight_dtype)
    if work.checkpoint_bytes and work.weight_dtype == "auto":
        scale, _ = memory.checkpoint_agreement(spec, counts, fmt, work.checkpoint_bytes)
        fmt = replace(fmt, checkpoint_scale=scale)
    return fmt


def split_problem(spec: ModelSpec, tp: int, block: tuple[int, int] | None) -> str | None:
    """Why tensor-parallel size `tp` is not a valid split of this model, or None."""
    if spec.num_attention_heads % tp:
        return f"TP={tp} does not divide the {spec.num_attention_heads} attention heads"
    kv = spec.num_key_value_heads
    if not spec.mla and kv % tp and tp % kv:
        return f"TP={tp} and the {kv} KV heads do not divide one another"
    la = spec.linear_attention
    if la and (la.num_value_heads % tp or la.num_key_heads % tp):
        return f"TP={tp} does not divide the linear-attention heads"
    if spec.mamba and spec.mamba.num_heads % tp:
        return f"TP={tp} does not divide the {spec.mamba.num_heads} Mamba heads"
    if spec.moe and block and (spec.moe.moe_intermediate_size // tp) % block[1]:
        width = spec.moe.moe_intermediate_size // tp
        return (
            f"TP={tp} leaves {width} expert columns per GPU, not a multiple of the "
            f"checkpoint's {block[1]}-wide FP8 blocks"
        )
    return None


def context_problem(spec: ModelSpec, context: int) -> str | None:
    """A context longer than the model allows is refused by the engine at start-up."""
    if spec.max_context and context > spec.max_context:
        return (
            f"context {context:,} exceeds the model's maximum of {spec.max_context:,} tokens "
            f"(max_position_embeddings / rope_scaling)"
        )
    return None


def evaluate(spec: ModelSpec, counts: ParamCounts, gpu: GpuSpec, tp: int, work: Workload) -> Candidate:
    """Fit test of one model on `tp` GPUs of one type."""
    fmt = weight_format_for(spec, counts, work)
    block = spec.quantization.block_size if (spec.quantization and work.weight_dtype == "auto") else None
    problem = split_problem(spec, tp, block) or context_problem(spec, work.context)
    if problem:
        return Candidate(gpu.name, tp, tp, False, problem)
    limits = scheduler_limits(gpu)
    kv_bytes = kv_element_bytes(spec, work.kv_dtype)
    weights = memory.weights_bytes(spec, counts, fmt, tp, work.include_mtp)
    acts = memory.activation_bytes(
        spec, limits.max_num_seqs, limits.max_num_batched_tokens, tp, fused_moe=fmt.name != "mxfp4"
    )
    overhead = memory.non_torch_bytes(tp)
    visible = gpu.visible_bytes
    usable = int(work.gpu_memory_utilization * visible)
    outside = memory.cuda_context_bytes(tp) + memory.CUDA_GRAPH_POOL
    state = memory.recurrent_state_bytes(spec, kv_bytes, tp) * work.batch
    available = usable - weights - acts - overhead - state
    layout = kvcache.kv_layout(spec, kv_bytes, tp)
    if layout is None:
        kv_need, capacity, concurrency, max_ctx = 0, None, None, None
    else:
        kv_need = work.batch * kvcache.request_kv_bytes(layout, work.context, limits.max_num_batched_tokens)
        blocks = kvcache.pool_blocks(layout, max(available, 0))
        capacity = kvcache.capacity_tokens(layout, blocks)
        per_request = kvcache.blocks_per_request(layout, work.context, limits.max_num_batched_tokens)
        concurrency = round(blocks / per_request, 2)
        max_ctx = kvcache.largest_context(
            layout,
            blocks,
            work.batch,
            limits.max_num_batched_tokens,
            max(work.context, spec.max_position_embeddings or 0),
        )
    total = weights + kv_need + acts + overhead + state
    per_gpu = PerGpu(
        weights,
        kv_need + state,
        acts,
        overhead,
        total,
        usable,
        usable - total,
        outside,
        visible - usable,
        visible,
    )
    reason = _misfit(spec, per_gpu, available, work, max_ctx) or _not_free(gpu, usable)
    return Candidate(
        gpu.name,
        tp,
        tp,
        reason is None,
        reason,
        per_gpu,
        capacity,
        concurrency,
        max_ctx,
        memory.kv_heads_per_gpu(spec.num_key_value_heads, tp),
        not spec.mla and tp > spec.num_key_value_heads,
        headroom_warning(per_gpu),
    )


def _misfit(spec: ModelSpec, g: PerGpu, available: int, work: Workload, max_ctx: int | None) -> str | None:
    gib = 1 << 30
    if available <= 0:
        return (
            f"weights, activations and overhead ({(g.usable_bytes - available) / gib:.1f} GiB) "
            f"exceed the {g.usable_bytes / gib:.1f} GiB budget; no room for KV cache"
        )
    if g.total_bytes > g.usable_bytes:
        fits_ctx = f"; the largest context that fits is {max_ctx:,} tokens" if max_ctx else ""
        return (
            f"KV cache for {work.batch} x {work.context:,} tokens needs "
            f"{g.kv_cache_bytes / gib:.1f} GiB, only {available / gib:.1f} GiB left{fits_ctx}"
        )
    if g.outside_budget_limit_bytes < memory.CUDA_CONTEXT_TP1:
        return (
            f"only {g.outside_budget_limit_bytes / gib:.2f} GiB left outside the utilization "
            f"budget, less than a CUDA context ({memory.CUDA_CONTEXT_TP1 / gib:.2f} GiB); "
            f"lower --gpu-memory-utilization"
        )
    return None


def _not_free(gpu: GpuSpec, usable: int) -> str | None:
    """vLLM refuses to start when the GPU's free memory is below utilization x total."""
    if gpu.free_mib is None or gpu.free_mib * (1 << 20) >= usable:
        return None
    gib = 1 << 30
    return (
        f"only {gpu.free_mib * (1 << 20) / gib:.1f} GiB free on this GPU, the engine asks for "
        f"{usable / gib:.1f} GiB; free memory or lower --gpu-memory-utilization"
    )


def headroom_warning(g: PerGpu) -> str | None:
    """The CUDA context and graph pool live outside the budget; warn when our (H100-calibrated,
    conservative) estimate of them exceeds what is left there. Not a verdict: vLLM runs TP=2 on
    24 GB cards at 0.9 and 0.98 (engine-logs vllm-13061), where this estimate says it would not."""
    if g.outside_budget_bytes <= g.outside_budget_limit_bytes:
        return None
    gib = 1 << 30
    return (
        f"CUDA context + graph pool may need ~{g.outside_budget_bytes / gib:.1f} GiB outside "
        f"the budget, {g.outside_budget_limit_bytes / gib:.1f} GiB left: if start-up fails "
        f"at CUDA-graph capture, lower --gpu-memory-utilization or use --enforce-eager"
    )


def kv_element_bytes(spec: ModelSpec, kv_dtype: str) -> float:
    """KV element size: auto = the activation dtype, never the weights' quantization format."""
    from gpusize.units import DTYPE_BYTES

    name = memory.activation_dtype(spec) if kv_dtype == "auto" else kv_dtype
    return DTYPE_BYTES[name]


def smallest_fit(
    spec: ModelSpec,
    counts: ParamCounts,
    gpu: GpuSpec,
    work: Workload,
    sizes: tuple[int, ...] = TP_SIZES,
    evaluator: Callable[[ModelSpec, ParamCounts, GpuSpec, int, Workload], Candidate] | None = None,
) -> list[Candidate]:
    """Candidates in increasing size up to and including the first that fits (vLLM unless an
    engine's `evaluator` is given)."""
    out = []
    for tp in sizes:
        candidate = (evaluator or evaluate)(spec, counts, gpu, tp, work)
        out.append(candidate)
        if candidate.fits:
            break
    return out


def recommend(best: list[tuple[Candidate, GpuSpec]]) -> tuple[Candidate, GpuSpec] | None:
    """Fewest GPUs, then lowest indicative price for the whole server (unpriced last), then name."""
    fitting = [(c, g) for c, g in best if c.fits]
    if not fitting:
        return None

    def key(item: tuple[Candidate, GpuSpec]) -> tuple[int, float, str]:
        c, g = item
        price = g.price_usd_per_hour * c.num_gpus if g.price_usd_per_hour else float("inf")
        return (c.num_gpus, price, g.name)

    return min(fitting, key=key)


#: vLLM's pipeline-parallel non-torch increase per GPU (llmd-v019-04: 0.07 GiB at PP=2).
NON_TORCH_PP = int(0.07 * (1 << 30))


def evaluate_pipeline(
    spec: ModelSpec, counts: ParamCounts, gpu: GpuSpec, tp: int, pp: int, work: Workload, servers: int = 1
) -> Candidate:
    """TP x PP: each of `pp` pipeline stages holds 1/pp of the layers (weights and KV) on `tp` GPUs;
    the last stage keeps the sampler's activation peak, and vLLM sizes the pool by the fullest stage
    (llmd-v019-04: Llama-3.1-8B at PP=2 logs 1,075,312 tokens). An ESTIMATE beyond that record."""
    single = evaluate(spec, counts, gpu, tp, work)
    if single.per_gpu is None:
        return replace(single, num_gpus=tp * pp, pipeline_parallel=pp)
    fmt = weight_format_for(spec, counts, work)
    g = single.per_gpu
    rope = memory.rope_cache_bytes(spec, fmt)
    weights = (g.weights_bytes - rope) // pp + rope
    overhead = (memory.NON_TORCH_TPN if tp > 1 else 0) + NON_TORCH_PP
    available = g.usable_bytes - weights - g.activations_bytes - overhead
    layers = len(spec.attention_layers)
    stage_layers = -(-layers // pp)
    per_token = memory.kv_cache_bytes_per_token(spec, kv_element_bytes(spec, work.kv_dtype), tp)
    per_token = per_token * stage_layers // max(layers, 1)
    capacity = max(available, 0) // per_token // kvcache.BLOCK_SIZE * kvcache.BLOCK_SIZE if per_token else 0
    need = work.batch * work.context * per_token
    total = weights + need + g.activations_bytes + overhead
    per_gpu = replace(
        g,
        weights_bytes=weights,
        kv_cache_bytes=need,
        overhead_bytes=overhead,
        total_bytes=total,
        headroom_bytes=g.usable_bytes - total,
    )
    fits = available > 0 and capacity >= work.batch * work.context
    reason = (
        None
        if fits
        else (f"TP={tp} x PP={pp}: {available / (1 << 30):.1f} GiB left for KV per GPU, {capacity:,} tokens")
    )
    warning = None
    if servers > 1:
        warning = (
            f"spans {servers} servers (TP={tp} x PP={pp}): the inter-node network (InfiniBand/RoCE) "
            f"decides speed; memory of remote GPUs does not add up for free (seed 001). Estimate."
        )
    return Candidate(
        gpu.name,
        tp * pp,
        tp,
        fits,
        reason,
        per_gpu,
        capacity,
        round(capacity / work.context, 2) if work.context else None,
        None,
        memory.kv_heads_per_gpu(spec.num_key_value_heads, tp),
        warning=warning,
        pipeline_parallel=pp,
    )


def evaluate_nodes(
    spec: ModelSpec, counts: ParamCounts, gpu: GpuSpec, nodes: int, work: Workload
) -> Candidate:
    """Multi-node ESTIMATE: TP=8 inside each server, one pipeline stage per server (vLLM's layout for
    models beyond one node); only used when the user asks (`--nodes`)."""
    return evaluate_pipeline(spec, counts, gpu, 8, nodes, work, servers=nodes)
