"""Plain transformers inference (pure): `model.generate` on one GPU, eager, DynamicCache.

Weights + a DynamicCache of batch x context tokens + the prefill peak (one layer's MLP intermediates
and hidden states for the whole prompt, SDPA's memory-efficient attention, fp32 logits of the last
position: generate keeps logits_to_keep=1) + the CUDA context.
"""

from __future__ import annotations

from gpusize.core import kvcache, runtime
from gpusize.core.engines.base import EngineModel
from gpusize.core.gpu import GpuSpec
from gpusize.core.plan import Candidate, PerGpu, context_problem, refused
from gpusize.core.spec import ModelSpec
from gpusize.core.weights import rope_cache_bytes, weights_bytes
from gpusize.core.workload import Workload
from gpusize.units import GIB

__all__ = ["ENGINE", "evaluate"]

VERSION = "4.5x generate (eager, DynamicCache)"


def evaluate(spec: ModelSpec, gpu: GpuSpec, n: int, work: Workload) -> Candidate:
    if n != 1:
        return refused(gpu, n, "the transformers model here is single-GPU", tp=1)
    weights = weights_bytes(spec, work.weights, 1) - rope_cache_bytes(spec, work.weights)
    per_token = kvcache.kv_cache_bytes_per_token(spec, work.kv_bytes, 1)
    state = kvcache.recurrent_state_bytes(spec, work.kv_bytes)
    kv = work.batch * (work.context_tokens * per_token + state)
    tokens = work.batch * work.context_tokens
    width = max((layer.intermediate_size for layer in spec.layers), default=spec.intermediate_size)
    acts = work.batch * spec.vocab_size * 4 + tokens * (3 * width + 4 * spec.hidden_size) * 2
    overhead = runtime.CUDA_CONTEXT_TP1
    total = weights + kv + acts + overhead
    visible = gpu.visible_bytes
    per_gpu = PerGpu(
        weights_bytes=weights,
        kv_cache_bytes=kv,
        activations_bytes=acts,
        overhead_bytes=overhead,
        total_bytes=total,
        usable_bytes=visible,
        headroom_bytes=visible - total,
        outside_budget_bytes=0,
        outside_budget_limit_bytes=0,
        visible_bytes=visible,
    )
    reason = context_problem(spec, work.context_tokens)
    if reason is None and total > visible:
        reason = f"needs {total / GIB:.1f} GiB, the GPU has {visible / GIB:.1f} GiB"
    has_kv = kvcache.kv_layout(spec, work.kv_bytes, 1) is not None
    return Candidate(
        gpu=gpu.name,
        gpu_full_name=gpu.full_name,
        num_gpus=1,
        tensor_parallel=1,
        fits=reason is None,
        reason=reason,
        per_gpu=per_gpu,
        kv_cache_capacity_tokens=tokens if has_kv else None,
        max_concurrency=float(work.batch),
        max_context_tokens=work.context_tokens,
        usd_per_hour=gpu.price_for(1),
    )


ENGINE = EngineModel(
    name="transformers",
    version=f"transformers {VERSION}",
    note="transformers generate: weights + full DynamicCache + prefill peak (fp32 logits of the last "
    "position and one layer's intermediates) + CUDA context",
    settings=frozenset(),
    evaluate=evaluate,
)
