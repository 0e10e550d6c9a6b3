"""One vLLM instance on `tp` GPUs: the KV pool the budget leaves, the verdict and its warnings."""

from __future__ import annotations

from gpusize.core import kvcache, runtime
from gpusize.core.engines.vllm.behaviour import Behaviour, behaviour_of, utilization
from gpusize.core.engines.vllm.data_parallel import dp_problem, dp_size, rank_tp, rank_work, weights_per_gpu
from gpusize.core.engines.vllm.extensible import budget_bytes
from gpusize.core.engines.vllm.hybrid import holds_state, with_state_pages
from gpusize.core.engines.vllm.lora import lora_host_bytes
from gpusize.core.engines.vllm.multimodal import skipped_tower_bytes
from gpusize.core.engines.vllm.overhead import (
    CUDA_GRAPH_POOL,
    activation_bytes,
    cuda_graph_estimate_bytes,
    non_torch_bytes,
)
from gpusize.core.engines.vllm.reserves import RESERVES
from gpusize.core.engines.vllm.scheduler import SchedulerLimits, scheduler_limits
from gpusize.core.engines.vllm.speculative import draft_layout
from gpusize.core.gpu import GpuSpec
from gpusize.core.plan import Candidate, PerGpu, refused, split_problem, thin_margin
from gpusize.core.reserves import reserves_of, total_bytes
from gpusize.core.spec import ModelSpec
from gpusize.core.weights import estimated_layers, weights_bytes
from gpusize.core.workload import Workload
from gpusize.units import GIB

__all__ = [
    "OFFLOAD_NOTE",
    "THIN_MARGIN",
    "evaluate",
    "headroom_warning",
    "offloaded_bytes",
    "thin_margin_warning",
]


#: How vLLM keeps FP8-block experts whole where tensor parallel would cut their blocks.
WHOLE_EXPERTS = "--enable-expert-parallel keeps experts whole"


def evaluate(spec: ModelSpec, gpu: GpuSpec, tp: int, work: Workload) -> Candidate:
    """Fit test of one model on `tp` GPUs of one type."""
    beh = behaviour_of(work, spec)
    ep = work.engine.enable_expert_parallel and spec.moe is not None
    block = spec.quantization.block_size if (spec.quantization and work.uses_checkpoint_blocks) else None
    # --data-parallel-size: the plan's n GPUs run dp ranks of n / dp (data_parallel.py); each term
    # below is one rank's, on one of its GPUs, but the routed experts (over all n) and what the n
    # GPUs share (NCCL, the context, the price)
    n, dp = tp, dp_size(work)
    if dp > 1:
        problem = dp_problem(n, dp) or split_problem(spec, rank_tp(n, dp), block, ep, WHOLE_EXPERTS, n)
        tp, work = rank_tp(n, dp), rank_work(work, dp)
    else:
        problem = split_problem(spec, tp, block, ep, WHOLE_EXPERTS)
    if problem:
        return refused(gpu, n, problem)
    limits = scheduler_limits(gpu, work, beh, spec)
    offloaded = offloaded_bytes(spec, work, tp)
    # Text-only: the vision tower is not built (multimodal.TOWER_SKIPPED_SINCE).
    skipped = skipped_tower_bytes(spec, work, tp)
    if dp > 1:
        weights = weights_per_gpu(spec, work, n, dp, ep) - offloaded - skipped
    else:
        weights = weights_bytes(spec, work.weights, tp, work.include_mtp, ep) - offloaded - skipped
    acts = activation_bytes(
        spec, limits, tp, work.weights.name != "mxfp4", beh, ep, work.engine.flashinfer_sampler
    )
    graphs = 0 if work.engine.enforce_eager else cuda_graph_estimate_bytes(spec, limits, tp)
    # V1 up to 0.9.0.1 counts the CUDA context, and what other processes hold, inside the budget
    # (Behaviour.context_in_budget).
    context = runtime.CUDA_CONTEXT_TP1 if beh.context_in_budget else 0
    others = _others_bytes(gpu, work.reserved_bytes) if beh.context_in_budget else 0
    overhead = non_torch_bytes(gpu, n, beh) + (graphs if beh.graphs_in_budget else 0) + context + others
    visible = gpu.visible_bytes
    if beh.extensible_kv:  # sized after warmup: the device's free memory less a margin and the peak
        before = runtime.cuda_context_bytes(n, gpu.interconnect) + _others_bytes(gpu, work.reserved_bytes)
        usable = budget_bytes(visible, utilization(work), before, acts, graphs, gpu.vendor)
    else:
        usable = int(utilization(work) * visible)
    outside = (
        runtime.cuda_context_bytes(n, gpu.interconnect)
        - context
        + (0 if beh.graphs_in_budget or not graphs else CUDA_GRAPH_POOL)
    )
    layout = kvcache.kv_layout(spec, work.kv_bytes, tp, beh.hybrid_group_ratio, beh.default_block_size)
    if layout is not None and not beh.hybrid_kv:  # V0 and V1 before 0.9.1: one group, whole context
        layout = _unified(layout, spec)
    else:
        layout = with_state_pages(spec, layout, work, tp, beh.hybrid_group_ratio, gpu)
    # The recurrent state lives in the pool's pages when the model has attention layers (hybrid.py).
    state = 0 if holds_state(layout) else kvcache.recurrent_state_bytes(spec, work.kv_bytes, tp) * work.batch
    held = reserves_of(RESERVES, spec, gpu, tp, work)
    available = usable - weights - acts - overhead - state - total_bytes(held)
    if layout is not None:
        layout = draft_layout(layout, spec, work, tp)
    kv_need, capacity, concurrency, max_ctx = 0, None, None, None
    if layout is not None:
        kv_need, capacity, concurrency, max_ctx = _pool(spec, layout, max(available, 0), work, limits, beh)
    total = weights + kv_need + acts + overhead + state + total_bytes(held)
    per_gpu = PerGpu(
        weights_bytes=weights,
        kv_cache_bytes=kv_need + state,
        activations_bytes=acts,
        overhead_bytes=overhead,
        total_bytes=total,
        usable_bytes=usable,
        headroom_bytes=usable - total,
        outside_budget_bytes=outside,
        outside_budget_limit_bytes=visible - usable - (0 if beh.context_in_budget else work.reserved_bytes),
        visible_bytes=visible,
        reserves=held,
    )
    reason = (
        _misfit(per_gpu, available, work, max_ctx)
        # the extensible cache's budget is a cap, not a requirement of free memory at start-up
        or (
            None
            if beh.context_in_budget or beh.extensible_kv
            else _not_free(gpu, usable, work.reserved_bytes, n, beh)
        )
        or _no_context_room(per_gpu)
    )
    thin = reason is None and thin_margin(concurrency, work.batch, THIN_MARGIN)
    if dp > 1 and capacity is not None and concurrency is not None:  # the server holds dp pools
        capacity, concurrency = capacity * dp, round(concurrency * dp, 2)
    return Candidate(
        gpu=gpu.name,
        gpu_full_name=gpu.full_name,
        num_gpus=n,
        tensor_parallel=n,
        fits=reason is None,
        reason=reason,
        per_gpu=per_gpu,
        kv_cache_capacity_tokens=capacity,
        max_concurrency=concurrency,
        max_context_tokens=max_ctx,
        kv_heads_per_gpu=kvcache.kv_heads_per_gpu(spec.num_key_value_heads, tp),
        kv_heads_replicated=not spec.mla and tp > spec.num_key_value_heads,
        warning=headroom_warning(per_gpu) or (thin_margin_warning(per_gpu, available) if thin else None),
        thin_margin=thin,
        usd_per_hour=gpu.price_for(n),
        host_bytes=(offloaded * n + lora_host_bytes(spec, n, work)) or None,
    )


#: How --cpu-offload-gb is modelled, in both engines' notes.
OFFLOAD_NOTE = (
    "--cpu-offload-gb: decoder-layer weights wait in pinned CPU memory (host_bytes), parameter by "
    "parameter up to the budget, and cross PCIe x16 every forward pass: the speed estimates add that "
    "copy at the link's per-direction rate"
)


def offloaded_bytes(spec: ModelSpec, work: Workload, tp: int) -> int:
    """Weight bytes per GPU that `--cpu-offload-gb` moves to pinned CPU memory, in vLLM and SGLang alike:
    each worker walks the decoder layers in model order and moves their parameters one by one until
    the bytes moved reach cpu_offload_gb GiB ("we use per-parameter offloading: one module might have
    some parameters offloaded and some not": vllm/model_executor/models/utils.py
    `maybe_offload_to_cpu`, called by `make_layers` per layer; SGLang python/sglang/srt/utils/
    offloader.py `OffloaderV1.maybe_offload_to_cpu`, the same code). So min(budget, every decoder
    layer's bytes / TP); the last parameter may pass the budget by up to its size, which this leaves
    on the GPU (the cautious side). Embeddings and the output head never move."""
    budget = int((work.engine.cpu_offload_gb or 0) * GIB)
    if not budget:  # the default: nothing moves, and the layer walk below is the costly part of a plan
        return 0
    layers = sum(layer // tp for layer in estimated_layers(spec, work.weights).layer_bytes)
    return min(budget, layers)


def _pool(
    spec: ModelSpec,
    layout: kvcache.KvLayout,
    available: int,
    work: Workload,
    limits: SchedulerLimits,
    beh: Behaviour,
) -> tuple[int, int, float, int]:
    """(KV bytes the requests need, pool tokens as the release logs them, concurrency, largest context)."""
    batched = limits.max_num_batched_tokens
    need = work.batch * kvcache.request_kv_bytes(layout, work.context_tokens, batched)
    blocks = kvcache.pool_blocks(layout, available)
    per_request = kvcache.blocks_per_request(layout, work.context_tokens, batched)
    limit = max(work.context_tokens, spec.max_context or spec.max_position_embeddings or 0)
    largest = kvcache.largest_context(layout, blocks, work.batch, batched, limit)
    concurrency = blocks / per_request
    if beh.tokens_from_concurrency:
        tokens = int(concurrency * work.context_tokens)
    else:
        tokens = kvcache.capacity_tokens(layout, blocks)
    return need, tokens, round(concurrency, 2), largest


def _unified(layout: kvcache.KvLayout, spec: ModelSpec) -> kvcache.KvLayout:
    """Sliding and full layers as one full-attention group, as a release without the hybrid allocator
    keeps them (Behaviour.hybrid_kv); a model of one layer type as it is."""
    if len(layout.groups) <= 1 or len({group.kind for group in layout.groups}) <= 1:
        return layout
    layers = len(spec.attention_layers)
    return kvcache.KvLayout(layout.page_bytes, layout.block_size, layers, (kvcache.KvGroup("full", None),))


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
    return None


def _no_context_room(g: PerGpu) -> str | None:
    """The budget leaves less than a CUDA context outside it (utilization set too high)."""
    if g.outside_budget_limit_bytes < runtime.CUDA_CONTEXT_TP1:
        return (
            f"only {g.outside_budget_limit_bytes / GIB:.2f} GiB left outside the utilization "
            f"budget, less than a CUDA context ({runtime.CUDA_CONTEXT_TP1 / GIB:.2f} GiB); "
            f"lower --gpu-memory-utilization"
        )
    return None


def _not_free(gpu: GpuSpec, usable: int, reserved: int, tp: int, beh: Behaviour) -> str | None:
    """vLLM refuses to start when the free memory at its start-up snapshot is below utilization x total
    ("Free memory on device ... is less than desired GPU memory utilization"). The snapshot comes after
    the CUDA context, and from 0.11 after NCCL init, so those are already taken from the free memory."""
    taken = (
        runtime.CUDA_CONTEXT_TP1
        if beh.nccl_init_in_budget
        else runtime.cuda_context_bytes(tp, gpu.interconnect)
    )
    free = gpu.visible_bytes - _others_bytes(gpu, reserved) - taken
    if free >= usable:
        return None
    if not beh.checks_free_memory:  # V0: no check; the KV cache is sized for the budget, then allocated
        return (
            f"vLLM {beh.version} (V0) sizes the KV cache for the whole utilization budget "
            f"({usable / GIB:.2f} GiB) but only {free / GIB:.2f} GiB is free: it runs out of memory "
            "allocating it; lower --gpu-memory-utilization or free memory"
        )
    return (
        f"vLLM refuses to start: free memory on startup ({free / GIB:.2f} GiB) is less than the "
        f"utilization budget ({usable / GIB:.2f} GiB); lower --gpu-memory-utilization or free memory"
    )


def _others_bytes(gpu: GpuSpec, reserved: int) -> int:
    """What other processes hold on the device: the memory not free on a local GPU, plus --reserved."""
    held = 0 if gpu.free_mib is None else gpu.visible_bytes - gpu.free_mib * (1 << 20)
    return max(held, 0) + reserved


#: A pool within this fraction of what the requests need is inside the model's error on public logs
#: (tests/core/test_vllm_releases.py holds every record to 3%): the verdict stands, with a warning.
THIN_MARGIN = 0.03


def thin_margin_warning(g: PerGpu, available: int) -> str | None:
    """The warning of a thin margin (core/plan.thin_margin: the pool holds the requests by less than
    the model's error): by how much the KV pool exceeds what the requests need."""
    need = g.kv_cache_bytes
    return (
        f"fits by {(available - need) / GIB:.2f} GiB of KV cache, within gpusize's {THIN_MARGIN:.0%} error "
        "on public start-up logs: the next size up is the safe choice, or lower --max-num-seqs"
    )


def headroom_warning(g: PerGpu) -> str | None:
    """The CUDA context (and, where the release keeps it outside, the graph pool) live outside the
    budget; warn when our conservative estimate of them exceeds what is left there. Not a verdict: vLLM
    runs TP=2 on 24 GB cards at 0.9 and 0.98 (engine-logs vllm-13061), where this estimate says it would
    not."""
    if g.outside_budget_bytes <= g.outside_budget_limit_bytes:
        return None
    return (
        f"CUDA context + graph pool may need ~{g.outside_budget_bytes / GIB:.1f} GiB outside "
        f"the budget, {g.outside_budget_limit_bytes / GIB:.1f} GiB left (a cautious estimate from "
        "public vLLM start-up logs): if start-up fails at CUDA-graph capture, lower "
        "--gpu-memory-utilization or use --enforce-eager"
    )
