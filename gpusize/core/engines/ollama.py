"""Ollama as an engine (pure): its scheduler's estimate and layer plan (core/engines/ollama_estimate.py)
for a model and its settings, as gpusize plans.

The settings are Ollama's own: `num_ctx` is gpusize's --ctx (Modelfile PARAMETER num_ctx),
`--num-gpu` the Modelfile's num_gpu (layers on the GPUs, default: as many as fit),
`--num-parallel` OLLAMA_NUM_PARALLEL (default 1 since 0.9-era releases; gpusize's --batch when not
given), `--kv-dtype f16|q8_0|q4_0` OLLAMA_KV_CACHE_TYPE (taken only with flash attention), the
flash-attention switch OLLAMA_FLASH_ATTENTION (off by default in v0.12.3 except for gpt-oss, whose
GGUF asks for it), `--gpu-overhead` OLLAMA_GPU_OVERHEAD (bytes kept free per GPU).
"""

from __future__ import annotations

from dataclasses import replace

from gpusize.core.engines.base import EngineModel
from gpusize.core.engines.ollama_estimate import (
    OLLAMA_KV_BYTES,
    OLLAMA_MINIMUM_MEMORY,
    OLLAMA_NUM_BATCH,
    OllamaEstimate,
    architecture,
    graph_bytes,
    human_bytes,
    kv_per_layer,
    ollama_estimate,
    projector_bytes,
    ps_processor,
)
from gpusize.core.gpu import GpuSpec
from gpusize.core.levers import Levers, Variant, one
from gpusize.core.plan import Candidate, Evaluator, PerGpu, context_problem
from gpusize.core.spec import ModelSpec
from gpusize.core.weights import estimated_layers
from gpusize.core.workload import Workload
from gpusize.units import GIB

__all__ = ["ENGINE", "OLLAMA_VERSION", "default_num_ctx", "estimate", "flash_attention", "ps_processor"]

#: The release whose llm/memory.go the estimate follows.
OLLAMA_VERSION = "v0.12.3"
#: Ollama's default num_ctx by release (envconfig OLLAMA_CONTEXT_LENGTH): 2048 before v0.6.7
#: (ollama/ollama 44b466eeb, 2025-04-28, "update default context length to 4096"), 4096 from v0.6.7, and
#: from v0.15.5 (0334ffa62, 2026-01-27, "tiered VRAM-based default context length") 4096 under 23 GiB
#: of total VRAM, 32768 from 23 GiB, 262144 from 47 GiB.
_VRAM_TIERS = ((47 * GIB, 262144), (23 * GIB, 32768), (0, 4096))


def default_num_ctx(release: tuple[int, ...], total_vram: int) -> int:
    """The num_ctx Ollama runs a model with when neither the request, the Modelfile nor
    OLLAMA_CONTEXT_LENGTH sets one."""
    if release < (0, 6, 7):
        return 2048
    if release < (0, 15, 5):
        return 4096
    return next(ctx for floor, ctx in _VRAM_TIERS if total_vram >= floor)


def flash_attention(spec: ModelSpec, work: Workload) -> bool:
    """OLLAMA_FLASH_ATTENTION as given, else v0.12.3's default: on only for gpt-oss (GGML.FlashAttention);
    never for head sizes K != V or gemma2 (SupportsFlashAttention)."""
    if spec.mla is not None or spec.model_type == "gemma2":
        return False
    asked = work.engine.flash_attn
    return architecture(spec) == "gptoss" if asked is None else asked


def _kv_type(spec: ModelSpec, work: Workload) -> str:
    """OLLAMA_KV_CACHE_TYPE applies only with flash attention, and never to gpt-oss (f16 only)."""
    asked = work.kv_cache_dtype if work.kv_cache_dtype in OLLAMA_KV_BYTES else "f16"
    if not flash_attention(spec, work) or architecture(spec) == "gptoss":
        return "f16"
    return asked


def parallel(work: Workload) -> int:
    return work.engine.num_parallel or work.batch


def estimate(
    spec: ModelSpec,
    gpu: GpuSpec,
    num_gpus: int,
    work: Workload,
    free: list[int] | None = None,
    minimum: int = OLLAMA_MINIMUM_MEMORY,
) -> OllamaEstimate:
    """Ollama's estimate for num_ctx = --ctx on `num_gpus` idle GPUs of this kind (`free`: the bytes
    each reports free, memory.available in the log; default the GPU's visible memory; `minimum` 0
    for the CPU library)."""
    stored = work.stored_layers or estimated_layers(spec, work.weights)
    n_par = parallel(work)
    batch = min(work.context_tokens, OLLAMA_NUM_BATCH)
    kv = kv_per_layer(spec, work.context_tokens, n_par, OLLAMA_KV_BYTES[_kv_type(spec, work)], batch)
    graph = graph_bytes(spec, work.context_tokens * n_par, batch, sum(kv), flash_attention(spec, work), n_par)
    output = stored.output_bytes or stored.token_embd_bytes
    num_gpu = -1 if work.engine.num_gpu is None else work.engine.num_gpu
    free = free or [gpu.visible_bytes] * num_gpus
    projector = sum(projector_bytes(spec))
    overhead = work.engine.gpu_overhead or 0
    return ollama_estimate(stored.layer_bytes, kv, output, graph, free, num_gpu, overhead, projector, minimum)


def evaluate(spec: ModelSpec, gpu: GpuSpec, num_gpus: int, work: Workload) -> Candidate:
    """Fits when every layer and the output are on the GPUs (`ollama ps`: 100% GPU)."""
    est = estimate(spec, gpu, num_gpus, work)
    busiest = max(range(num_gpus), key=lambda g: est.allocations[g])
    total = est.allocations[busiest]
    overhead = work.engine.gpu_overhead or 0
    usable = gpu.visible_bytes - overhead
    weights, kv = est.placed_weights[busiest], est.placed_kv[busiest]
    graph = est.graph_full if est.fully_loaded else est.graph_partial
    per_gpu = PerGpu(
        weights_bytes=weights,
        kv_cache_bytes=kv,
        activations_bytes=graph if est.tensor_split[busiest] else 0,
        overhead_bytes=max(total - weights - kv - (graph if est.tensor_split[busiest] else 0), 0),
        total_bytes=total,
        usable_bytes=usable,
        headroom_bytes=usable - total,
        outside_budget_bytes=0,
        outside_budget_limit_bytes=0,
        visible_bytes=gpu.visible_bytes,
    )
    reason = context_problem(spec, work.context_tokens)
    wanted = est.layers_model if work.engine.num_gpu is None else min(work.engine.num_gpu, est.layers_model)
    if reason is None and est.layers_offload < wanted:
        reason = (
            f"Ollama would put {est.layers_offload} of {est.layers_model} layers on the GPU "
            f"(ollama ps: {ps_processor(est)}); memory.required.full {est.required_full / GIB:.1f} GiB; "
            "lower num_ctx, OLLAMA_NUM_PARALLEL or the quantization, or accept the CPU share"
        )
    return Candidate(
        gpu=gpu.name,
        gpu_full_name=gpu.full_name,
        num_gpus=num_gpus,
        tensor_parallel=1,
        fits=reason is None,
        reason=reason,
        per_gpu=per_gpu,
        kv_cache_capacity_tokens=work.context_tokens * parallel(work),
        max_concurrency=float(parallel(work)),
        max_context_tokens=work.context_tokens,
        host_bytes=est.required_full - est.required_partial,
        usd_per_hour=gpu.price_for(num_gpus),
    )


def effective_settings(spec: ModelSpec, gpu: GpuSpec, n: int, work: Workload) -> dict[str, float | int | str]:
    est = estimate(spec, gpu, n, work)
    return {
        "num_ctx": work.context_tokens,
        "num_gpu": est.layers_offload,
        "OLLAMA_NUM_PARALLEL": parallel(work),
        "OLLAMA_FLASH_ATTENTION": int(flash_attention(spec, work)),
        "OLLAMA_KV_CACHE_TYPE": _kv_type(spec, work),
        "memory.required.full": human_bytes(est.required_full),
        "memory.required.partial": human_bytes(est.required_partial),
        "memory.required.kv": human_bytes(est.kv_bytes),
        "memory.graph.full": human_bytes(est.graph_full),
        "memory.graph.partial": human_bytes(est.graph_partial),
        "ollama_ps": ps_processor(est),
    }


def offload_variant(
    spec: ModelSpec, work: Workload, gpu: GpuSpec, n: int, judge: Evaluator | None = None
) -> Variant | None:
    """What Ollama does by itself when the model does not fit: the layers that fit on the GPUs, the
    rest on the CPU (num_gpu = the estimate's layer count). Its own estimate decides, not `judge`."""
    est = estimate(spec, gpu, n, replace(work, engine=replace(work.engine, num_gpu=None)))
    if est.layers_offload < 1:
        return None
    fewer = replace(work, engine=replace(work.engine, num_gpu=est.layers_offload))
    note = (
        f"ollama ps: {ps_processor(est)}; {(est.required_full - est.required_partial) / GIB:.1f} GiB in "
        "system RAM, run at the host's bandwidth: much slower"
    )
    return one(
        "offload",
        "--num-gpu",
        str(est.layers_offload),
        f"{est.layers_offload} of {est.layers_model} layers",
        note,
        fewer,
    )


def _notes(spec: ModelSpec, work: Workload) -> tuple[str, ...]:
    notes = [
        f"Ollama {OLLAMA_VERSION} sizes num_ctx x OLLAMA_NUM_PARALLEL = "
        f"{work.context_tokens * parallel(work):,} KV cells; its default num_ctx is 2048 before 0.6.7, "
        "4096 from 0.6.7, and 4096/32768/262144 by total VRAM (<23, >=23, >=47 GiB) from 0.15.5"
    ]
    if spec.mla is not None:
        notes.append(
            "MLA: the KV cache is counted as the latent llama.cpp keeps; Ollama's own estimate multiplies "
            "the GGUF's key/value lengths by its KV heads, which depends on how the file was converted"
        )
    if spec.vision is not None and not any(projector_bytes(spec)):
        notes.append("the vision projector's weights and graph are not in this estimate (text-only)")
    if work.kv_cache_dtype in OLLAMA_KV_BYTES and _kv_type(spec, work) != work.kv_cache_dtype:
        notes.append(
            f"OLLAMA_KV_CACHE_TYPE={work.kv_cache_dtype} is ignored without flash attention (and for "
            "gpt-oss): Ollama keeps an f16 cache; pass --flash-attn for a quantized one"
        )
    return tuple(notes)


#: Fix-suggestion levers: Ollama's own CPU offload, a q8_0 / q4_0 KV cache (with flash attention).
LEVERS = Levers(
    kv_types=("q8_0", "q4_0"),
    kv_note="OLLAMA_FLASH_ATTENTION=1 OLLAMA_KV_CACHE_TYPE={kind} ollama serve",
    offload=offload_variant,
)

ENGINE = EngineModel(
    name="ollama",
    version=f"Ollama {OLLAMA_VERSION} (llm/memory.go estimateGPULayers)",
    note="Ollama: its scheduler's estimate (memory.required.full): layers from the last down while they "
    "fit beside a graph estimate, 457 MiB minimum and one spare layer per GPU; the output head last",
    evaluate=evaluate,
    effective_settings=effective_settings,
    levers=LEVERS,
    kv_cache_types=OLLAMA_KV_BYTES,
    kv_default="f16",
    serves=True,
    splits_layers=True,
    notes=_notes,
    prefix_cache="the llama.cpp runner's per-slot prompt cache (a request reuses the prefix it shares with "
    "the slot's previous prompt)",
)
