"""SGLang's memory model (pure), following SGLang 0.5.6 (python/sglang/srt).

mem_fraction_static comes from `_handle_gpu_memory_settings` in server_args.py (512 MiB + 1.5 x
chunked prefill + 2 x cuda-graph batch + tp/8 GiB reserved, at least 10 GiB above 60 GiB cards);
the KV pool is free memory after the weights minus free memory before them x (1 - fraction)
(model_runner.py `profile_max_num_token`); one cell is layers x 2 x (kv_heads / tp) x head_dim x
bytes (MLA: the latent).
"""

from __future__ import annotations

from dataclasses import dataclass

from gpusize.core import kvcache, runtime
from gpusize.core.engines.base import EngineModel
from gpusize.core.gpu import GpuSpec
from gpusize.core.plan import Candidate, PerGpu, context_problem, refused, split_problem
from gpusize.core.spec import ModelSpec
from gpusize.core.weights import weights_bytes
from gpusize.core.workload import Workload
from gpusize.units import GIB

__all__ = ["ENGINE", "SglangDefaults", "evaluate", "sglang_defaults"]

VERSION = "0.5.6"


@dataclass(frozen=True)
class SglangDefaults:
    chunked_prefill: int
    cuda_graph_max_bs: int
    mem_fraction_static: float


#: server_args.py capacity tiers by nvidia-smi total: (below GB, chunked prefill, graph bs TP<4, TP>=4).
_TIERS = (
    (20, 2048, 8, 8),
    (35, 2048, 24, 80),
    (60, 4096, 32, 160),
    (90, 8192, 256, 512),
    (160, 8192, 256, 512),
)


def sglang_defaults(gpu: GpuSpec, tp: int) -> SglangDefaults:
    """SGLang 0.5.6 server_args: capacity tiers by nvidia-smi total (MiB), then the reserve."""
    mib = gpu.memory_mib
    chunk, graph = 16384, 512
    for limit_gb, c, small, large in _TIERS:
        if mib < limit_gb * 1024:
            chunk, graph = c, (small if tp < 4 else large)
            break
    reserved = 512 + max(chunk, 2048) * 1.5 + graph * 2 + tp / 8 * 1024
    if mib > 60 * 1024:
        reserved = max(reserved, 10 * 1024)
    return SglangDefaults(chunk, graph, round((mib - reserved) / mib, 3))


def mem_fraction(gpu: GpuSpec, tp: int, work: Workload) -> float:
    return work.engine.mem_fraction_static or sglang_defaults(gpu, tp).mem_fraction_static


def evaluate(spec: ModelSpec, gpu: GpuSpec, tp: int, work: Workload) -> Candidate:
    problem = split_problem(spec, tp, None) or context_problem(spec, work.context_tokens)
    if problem:
        return refused(gpu, tp, problem)
    fraction = mem_fraction(gpu, tp, work)
    weights = weights_bytes(spec, work.weights, tp, work.include_mtp)
    cell = kvcache.kv_cache_bytes_per_token(spec, work.kv_bytes, tp)
    context = runtime.cuda_context_bytes(tp)
    free_before = gpu.visible_bytes - context
    budget = int(free_before * fraction)
    pool = budget - weights
    capacity = max(pool, 0) // cell if cell else 0
    need = work.batch * work.context_tokens * cell
    total = weights + need
    per_gpu = PerGpu(
        weights_bytes=weights,
        kv_cache_bytes=need,
        activations_bytes=0,
        overhead_bytes=0,
        total_bytes=total,
        usable_bytes=budget,
        headroom_bytes=budget - total,
        outside_budget_bytes=context,
        outside_budget_limit_bytes=gpu.visible_bytes - budget,
        visible_bytes=gpu.visible_bytes,
    )
    fits = pool > 0 and capacity >= work.batch * work.context_tokens
    reason = None
    if not fits:
        reason = (
            f"SGLang's static pool ({fraction} of free memory) leaves {pool / GIB:.1f} GiB of KV for "
            f"{capacity:,} tokens, {work.batch} x {work.context_tokens:,} needed"
        )
    return Candidate(
        gpu=gpu.name,
        gpu_full_name=gpu.full_name,
        num_gpus=tp,
        tensor_parallel=tp,
        fits=fits,
        reason=reason,
        per_gpu=per_gpu,
        kv_cache_capacity_tokens=int(capacity),
        max_concurrency=round(capacity / work.context_tokens, 2),
        max_context_tokens=min(capacity // max(work.batch, 1), spec.max_context or capacity),
        kv_heads_per_gpu=kvcache.kv_heads_per_gpu(spec.num_key_value_heads, tp),
        price_usd_per_hour=gpu.price_for(tp),
    )


def effective_settings(
    spec: ModelSpec, gpu: GpuSpec, tp: int, work: Workload
) -> dict[str, float | int | str]:
    defaults = sglang_defaults(gpu, tp)
    return {
        "mem_fraction_static": mem_fraction(gpu, tp, work),
        "chunked_prefill_size": defaults.chunked_prefill,
        "cuda_graph_max_bs": defaults.cuda_graph_max_bs,
    }


ENGINE = EngineModel(
    name="sglang",
    version=f"SGLang {VERSION}",
    note=f"SGLang {VERSION}: KV pool = free memory after weights - free memory before weights x "
    "(1 - mem_fraction_static); default fraction from GPU size and TP",
    settings=frozenset({"mem_fraction_static"}),
    evaluate=evaluate,
    effective_settings=effective_settings,
)
