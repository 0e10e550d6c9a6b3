"""Plain transformers inference (pure): `model.generate` on one GPU, DynamicCache, transformers 5.x.

Two figures, one verdict. The allocated peak (`torch.cuda.max_memory_allocated`) and the reserved peak
come from replaying the prefill's tensors (core.engines.hf_prefill) through the caching-allocator
model (core.allocator); what `nvidia-smi` shows is the reserved peak plus the CUDA context
(runtime.TORCH_CUDA_CONTEXT_BYTES). The job fits when that device figure is at most the GPU's
CUDA-visible memory. Measured against tests/data/reference/measured (one H200, torch 2.11,
transformers 5.17): tests/core/test_torch_inference.py.
"""

from __future__ import annotations

import functools

from gpusize.core import allocator, kvcache, runtime
from gpusize.core.engines.base import EngineModel
from gpusize.core.engines.hf_prefill import (
    Prefill,
    attention_implementation,
    layer_kv_bytes,
    prefill_trace,
)
from gpusize.core.gpu import GpuSpec
from gpusize.core.plan import Candidate, PerGpu, context_problem, refused
from gpusize.core.spec import ModelSpec
from gpusize.core.weights import WeightFormat, activation_dtype, rope_cache_bytes, weights_bytes
from gpusize.core.workload import Workload
from gpusize.dataclass import dataclass
from gpusize.units import DTYPE_BYTES, GIB

__all__ = ["ENGINE", "InferencePeak", "evaluate", "inference_peak", "weight_tensors"]

VERSION = "5.x generate (DynamicCache)"


@functools.lru_cache(maxsize=256)
def weight_tensors(spec: ModelSpec, fmt: WeightFormat, total: int) -> tuple[int, ...]:
    """The weight tensors in load order (embedding, each layer's linears, norms, lm_head), sized so
    they sum to `total` (the engine's weight bytes): what the allocator sees at load."""
    p = spec.params
    raw = [p.embedding * fmt.other_bytes]
    per_layer = (p.linear * fmt.linear_bytes + (p.small + p.router) * fmt.other_bytes) / max(
        len(spec.layers), 1
    )
    shares = _layer_shares(spec)
    for _ in spec.layers:
        raw += [per_layer * s for s in shares]
    raw.append(p.lm_head * fmt.other_bytes + p.vision * fmt.other_bytes)
    scale = total / max(sum(raw), 1)
    return tuple(int(r * scale) for r in raw if r > 0)


def _layer_shares(spec: ModelSpec) -> tuple[float, ...]:
    """How a decoder layer's weight bytes split into tensors: q, k, v, o, gate, up, down for a dense
    Llama layer (fused 3-D expert tensors for MoE: gate_up and down)."""
    h, i = spec.hidden_size, spec.intermediate_size
    q, kv = spec.num_attention_heads * spec.head_dim, spec.num_key_value_heads * spec.head_dim
    if spec.moe:
        e = spec.moe.num_experts * spec.moe.moe_intermediate_size
        parts = [h * q, h * kv, h * kv, q * h, 2 * e * h, e * h]
    else:
        parts = [h * q, h * kv, h * kv, q * h, h * i, h * i, i * h]
    total = sum(parts)
    return tuple(x / total for x in parts)


def _largest_linear(spec: ModelSpec) -> int:
    """Elements of the largest decoder matrix: an MLP projection or q_proj."""
    width = max((layer.intermediate_size for layer in spec.layers), default=spec.intermediate_size)
    return spec.hidden_size * max(width, spec.num_attention_heads * spec.head_dim)


@dataclass(frozen=True)
class InferencePeak:
    """The peaks of one generate call, in bytes."""

    weights_bytes: int
    kv_cache_bytes: int
    allocated_peak_bytes: int
    reserved_peak_bytes: int
    context_bytes: int

    @property
    def device_bytes(self) -> int:
        return self.reserved_peak_bytes + self.context_bytes


@functools.lru_cache(maxsize=512)
def inference_peak(
    spec: ModelSpec, workspace: int, work: Workload, capacity: int | None = None
) -> InferencePeak:
    """Replay one generate call of `work` (batch x context_tokens prompt) on one GPU whose cuBLAS
    workspaces take `workspace` bytes (allocator.cublas_workspace_bytes), with unlimited memory or
    `capacity` bytes for the allocator (it frees its cache before giving up: reserved_peak_bytes is
    then -1 when even that fails)."""
    weights = weights_bytes(spec, work.weights, 1) - rope_cache_bytes(spec, work.weights)
    act = DTYPE_BYTES.get(activation_dtype(spec), 2.0)
    if work.weights.name in ("fp32", "bf16", "fp16"):
        act = DTYPE_BYTES[work.weights.name]
    settings = work.engine
    prefill = Prefill(
        batch=work.batch,
        tokens=work.context_tokens,
        act_bytes=act,
        kv_bytes=work.kv_bytes,
        attn=attention_implementation(spec, settings.attn_implementation),
        version=settings.transformers_version or "5",
        weights=weight_tensors(spec, work.weights, weights),
        dequant=_largest_linear(spec) * 2 if work.weights.linear_bytes < 2 else 0,
    )
    trace = prefill_trace(spec, prefill, workspace)
    peaks = allocator.replay(trace, expandable_segments=settings.expandable_segments, capacity=capacity)
    kv = work.batch * (
        sum(layer_kv_bytes(spec, la, work.context_tokens, work.kv_bytes) for la in spec.layers)
        + kvcache.recurrent_state_bytes(spec, work.kv_bytes)
    )
    return InferencePeak(
        weights_bytes=weights,
        kv_cache_bytes=kv,
        allocated_peak_bytes=peaks.allocated_bytes,
        reserved_peak_bytes=-1 if peaks.out_of_memory else peaks.reserved_bytes,
        context_bytes=runtime.TORCH_CUDA_CONTEXT_BYTES,
    )


def evaluate(spec: ModelSpec, gpu: GpuSpec, n: int, work: Workload) -> Candidate:
    if n != 1:
        return refused(gpu, n, "the transformers model here is single-GPU", tp=1)
    workspace = allocator.cublas_workspace_bytes(gpu.architecture)
    peak = inference_peak(spec, workspace, work)
    visible = gpu.visible_bytes
    if peak.device_bytes > visible:  # near full, PyTorch frees its cache before it gives up
        tight = inference_peak(spec, workspace, work, visible - peak.context_bytes)
        if tight.reserved_peak_bytes >= 0 and tight.device_bytes <= visible:
            peak = tight
    total = peak.device_bytes
    acts = peak.allocated_peak_bytes - peak.weights_bytes - peak.kv_cache_bytes
    per_gpu = PerGpu(
        weights_bytes=peak.weights_bytes,
        kv_cache_bytes=peak.kv_cache_bytes,
        activations_bytes=acts,
        overhead_bytes=total - peak.allocated_peak_bytes,
        total_bytes=total,
        usable_bytes=visible,
        headroom_bytes=visible - total,
        outside_budget_bytes=0,
        outside_budget_limit_bytes=0,
        visible_bytes=visible,
        allocated_peak_bytes=peak.allocated_peak_bytes,
        device_bytes=total,
    )
    reason = context_problem(spec, work.context_tokens)
    if reason is None and total > visible:
        reason = (
            f"needs {total / GIB:.1f} GiB on the device ({peak.allocated_peak_bytes / GIB:.1f} GiB "
            f"allocated by PyTorch), the GPU has {visible / GIB:.1f} GiB"
        )
    has_kv = kvcache.kv_layout(spec, work.kv_bytes, 1) is not None
    tokens = work.batch * work.context_tokens
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


def _effective(spec: ModelSpec, gpu: GpuSpec, n: int, work: Workload) -> dict[str, float | int | str]:
    s = work.engine
    return {
        "attn_implementation": attention_implementation(spec, s.attn_implementation),
        "transformers_version": s.transformers_version or "5",
        "expandable_segments": "True" if s.expandable_segments else "False",
    }


ENGINE = EngineModel(
    name="transformers",
    version=f"transformers {VERSION}, torch 2.11 caching allocator",
    note="transformers generate: weights + DynamicCache of the whole prompt + the prefill's transients "
    "(replayed through PyTorch's caching allocator) = allocated peak; + the allocator's cache = reserved "
    "peak; + CUDA context = what nvidia-smi shows, the figure the fit is decided on",
    evaluate=evaluate,
    effective_settings=_effective,
)
