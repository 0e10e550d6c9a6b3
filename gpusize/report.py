"""The Report: one result object that drives both the table and --json (pure).

`build_fit_report` runs the planner over the GPUs asked for and assembles the answer. JSON keys
are a contract (tests/test_json_contract.py; README "JSON output").
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict

from gpusize import __version__, engines, kvcache, memory, plan
from gpusize.catalog import DEFAULT_CUDA_RESERVE_MIB, GpuSpec
from gpusize.model import ModelSpec
from gpusize.params import ParamCounts


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


@dataclass(frozen=True)
class Origin:
    """Where the model came from (plain values from `source.resolve_model`)."""

    id: str
    source: str  # catalog | local | hub | gguf
    revision: str | None = None
    checkpoint_bytes: int | None = None
    checkpoint_dtypes: dict[str, int] | None = None
    notes: tuple[str, ...] = ()
    gguf: Any = None  # gguf_file.GgufModel when the model is a GGUF file


def origin_of(resolved: Any) -> Origin:
    """The plain facts of a `source.ResolvedModel` that reports carry."""
    return Origin(
        resolved.id,
        resolved.source,
        resolved.revision,
        resolved.checkpoint_bytes,
        resolved.checkpoint_dtypes,
        resolved.notes,
        resolved.gguf,
    )


class ModelInfo(_Out):
    id: str
    source: str
    revision: str | None
    checkpoint_bytes: int | None
    checkpoint_dtypes: dict[str, int] | None
    architecture: str
    model_type: str
    params_total: int
    params_active: int
    params_vision: int
    params_mtp: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    attention_layers: int
    sliding_window_layers: int
    vocab_size: int
    max_position_embeddings: int | None


class WorkloadInfo(_Out):
    mode: str
    context_tokens: int
    batch: int
    weight_dtype: str
    kv_cache_dtype: str
    engine: str
    engine_version: str
    gpu_memory_utilization: float


class MemoryInfo(_Out):
    weights_bytes: int
    kv_cache_bytes: int
    kv_cache_bytes_per_token: int
    activations_bytes: int
    overhead_bytes: int
    total_bytes: int


class PerGpuInfo(_Out):
    weights_bytes: int
    kv_cache_bytes: int
    activations_bytes: int
    overhead_bytes: int
    total_bytes: int
    usable_bytes: int
    headroom_bytes: int
    outside_budget_bytes: int
    outside_budget_limit_bytes: int
    visible_bytes: int


class CandidateInfo(_Out):
    gpu: str
    num_gpus: int
    tensor_parallel: int
    fits: bool
    reason: str | None
    per_gpu: PerGpuInfo | None
    kv_cache_capacity_tokens: int | None
    max_concurrency: float | None
    max_context_tokens: int | None
    kv_heads_per_gpu: int | None
    kv_heads_replicated: bool
    warning: str | None
    host_bytes: int | None
    pipeline_parallel: int
    price_usd_per_hour: float | None


class PlanInfo(CandidateInfo):
    gpu_full_name: str


class Report(_Out):
    gpusize_version: str
    fits: bool
    model: ModelInfo
    workload: WorkloadInfo
    memory: MemoryInfo
    plan: PlanInfo | None
    candidates: list[CandidateInfo]
    assumptions: dict[str, Any]


def _candidate(c: plan.Candidate, gpu: GpuSpec) -> dict[str, Any]:
    data = asdict(c)
    data["price_usd_per_hour"] = gpu.price_usd_per_hour * c.num_gpus if gpu.price_usd_per_hour else None
    return data


def model_info(origin: Origin, spec: ModelSpec, counts: ParamCounts) -> ModelInfo:
    return ModelInfo(
        id=origin.id,
        source=origin.source,
        revision=origin.revision,
        checkpoint_bytes=origin.checkpoint_bytes,
        checkpoint_dtypes=origin.checkpoint_dtypes,
        architecture=spec.architecture,
        model_type=spec.model_type,
        params_total=counts.total,
        params_active=counts.active,
        params_vision=counts.vision,
        params_mtp=counts.mtp,
        num_hidden_layers=spec.num_hidden_layers,
        num_attention_heads=spec.num_attention_heads,
        num_key_value_heads=spec.num_key_value_heads,
        head_dim=spec.head_dim,
        attention_layers=len(spec.attention_layers),
        sliding_window_layers=sum(1 for la in spec.attention_layers if la.window),
        vocab_size=spec.vocab_size,
        max_position_embeddings=spec.max_position_embeddings,
    )


def whole_model_memory(
    spec: ModelSpec, counts: ParamCounts, work: plan.Workload, limits: plan.SchedulerLimits
) -> MemoryInfo:
    """The model on one imaginary GPU (TP=1): what it needs in total."""
    fmt = plan.weight_format_for(spec, counts, work)
    kv_bytes = plan.kv_element_bytes(spec, work.kv_dtype)
    weights = memory.weights_bytes(spec, counts, fmt, 1, work.include_mtp)
    layout = kvcache.kv_layout(spec, kv_bytes, 1)
    kv = work.batch * (
        kvcache.request_kv_bytes(layout, work.context, limits.max_num_batched_tokens) if layout else 0
    )
    kv += work.batch * memory.recurrent_state_bytes(spec, kv_bytes, 1)
    acts = memory.activation_bytes(
        spec, limits.max_num_seqs, limits.max_num_batched_tokens, 1, fused_moe=fmt.name != "mxfp4"
    )
    overhead = memory.non_torch_bytes(1) + memory.cuda_context_bytes(1) + memory.CUDA_GRAPH_POOL
    return MemoryInfo(
        weights_bytes=weights,
        kv_cache_bytes=kv,
        kv_cache_bytes_per_token=memory.kv_cache_bytes_per_token(spec, kv_bytes, 1),
        activations_bytes=acts,
        overhead_bytes=overhead,
        total_bytes=weights + kv + acts + overhead,
    )


def build_fit_report(
    origin: Origin,
    spec: ModelSpec,
    counts: ParamCounts,
    gpus: list[GpuSpec],
    work: plan.Workload,
    fixed_count: int | None = None,
    max_count: int = 8,
    options: engines.EngineOptions = engines.DEFAULT_OPTIONS,
    nodes: int | None = None,
) -> Report:
    """Plan over `gpus`: the smallest valid TP per GPU type up to `max_count` (or exactly `fixed_count`)."""
    rows: list[dict[str, Any]] = []
    best: list[tuple[plan.Candidate, GpuSpec]] = []
    for gpu in gpus:
        sizes = (fixed_count,) if fixed_count else tuple(t for t in plan.TP_SIZES if t <= max_count)
        tried = engines.smallest_fit(spec, counts, gpu, work, sizes, options)
        if nodes and not tried[-1].fits and work.engine == "vllm":
            tried.append(plan.evaluate_nodes(spec, counts, gpu, nodes, work))
        rows += [_candidate(c, gpu) for c in tried]
        best.append((tried[-1], gpu))
    chosen = plan.recommend(best)
    limits = plan.scheduler_limits(chosen[1] if chosen else gpus[0])
    plan_info = None
    if chosen:
        plan_info = PlanInfo(**_candidate(*chosen), gpu_full_name=chosen[1].full_name)
    elif len(gpus) == 1:  # one GPU asked for: show the closest miss as the plan
        plan_info = PlanInfo(**_candidate(best[0][0], gpus[0]), gpu_full_name=gpus[0].full_name)
    return Report(
        gpusize_version=__version__,
        fits=chosen is not None,
        model=model_info(origin, spec, counts),
        workload=WorkloadInfo(
            mode="inference",
            context_tokens=work.context,
            batch=work.batch,
            weight_dtype=plan.weight_format_for(spec, counts, work).name,
            kv_cache_dtype=_kv_name(spec, work.kv_dtype),
            engine=work.engine,
            engine_version=engines.ENGINE_VERSIONS[work.engine],
            gpu_memory_utilization=work.gpu_memory_utilization,
        ),
        memory=whole_model_memory(spec, counts, work, limits),
        plan=plan_info,
        candidates=[CandidateInfo(**row) for row in rows],
        assumptions=assumptions(origin, spec, counts, work, limits, gpus, chosen[1] if chosen else None),
    )


def checkpoint_warning(spec: ModelSpec, counts: ParamCounts, work: plan.Workload) -> str | None:
    """The >1% disagreement between stored tensors and config arithmetic, if any."""
    if not work.checkpoint_bytes or work.weight_dtype != "auto":
        return None
    fmt = memory.weight_format(spec, work.weight_dtype)
    return memory.checkpoint_agreement(spec, counts, fmt, work.checkpoint_bytes)[1]


def _kv_name(spec: ModelSpec, kv_dtype: str) -> str:
    return memory.activation_dtype(spec) if kv_dtype == "auto" else kv_dtype


def assumptions(
    origin: Origin,
    spec: ModelSpec,
    counts: ParamCounts,
    work: plan.Workload,
    limits: plan.SchedulerLimits,
    gpus: list[GpuSpec],
    chosen: GpuSpec | None,
) -> dict[str, Any]:
    fmt = plan.weight_format_for(spec, counts, work)
    notes = list(origin.notes)
    if fmt.note:
        notes.append(fmt.note)
    warning = checkpoint_warning(spec, counts, work)
    if warning:
        notes.append(warning)
    if spec.vision and not spec.vision.exact:
        notes.append(
            f"vision tower ({spec.vision.model_type}) parameters estimated with a generic ViT formula"
        )
    if any(layer.window for layer in spec.attention_layers):
        notes.append(
            "sliding-window layers reserve min(window - 1 + max_num_batched_tokens, "
            "context) tokens per request, as vLLM 0.19's hybrid KV allocator does"
        )
    if spec.linear_attention or spec.mamba:
        notes.append(
            "linear-attention / Mamba layers hold a constant recurrent state per "
            "sequence, counted in kv_cache_bytes"
        )
    if spec.num_nextn_predict_layers:
        loaded = "loaded (--mtp)" if work.include_mtp else "not loaded (no speculative decoding; --mtp)"
        notes.append(f"{spec.num_nextn_predict_layers} MTP layer(s) in the checkpoint: {loaded}")
    if spec.best_effort_from:
        notes.append(
            f"BEST-EFFORT ESTIMATE: model_type '{spec.best_effort_from}' is not supported; read as a "
            f"Llama-style decoder from its standard fields"
        )
    unmeasured = [g.name for g in gpus if not g.visible_is_measured]
    if chosen is not None and not chosen.visible_is_measured:
        notes.append(
            f"{chosen.name}: CUDA-visible total assumed = reported total - "
            f"{DEFAULT_CUDA_RESERVE_MIB} MiB driver/CUDA reserve (no measured figure)"
        )
    return {
        "engine": engines.ENGINE_VERSIONS[work.engine],
        "engine_model": engines.ENGINE_NOTES[work.engine],
        "gpu_memory_utilization": work.gpu_memory_utilization,
        "max_num_seqs": limits.max_num_seqs,
        "max_num_batched_tokens": limits.max_num_batched_tokens,
        "kv_block_size": kvcache.MLA_BLOCK_SIZE if spec.mla else kvcache.BLOCK_SIZE,
        "weight_format": fmt.name,
        "estimates": ["activations_bytes", "overhead_bytes"]
        + (["weights_bytes", "kv_cache_bytes"] if spec.best_effort_from else []),
        "best_effort": spec.best_effort_from is not None,
        "include_mtp": work.include_mtp,
        "activation_model": f"{memory.SAMPLER_LOGITS_COPIES} fp32 sampler-logit copies + "
        f"{memory.HIDDEN_STATE_COPIES} hidden-state copy (+ MoE workspace, "
        f"+ encoder cache), fitted to vLLM 0.19 H100 logs",
        "overhead_model": "non-torch 0.25 GiB (TP=1) / 2.10 GiB (TP>=2) inside the budget; "
        "CUDA context 0.51 / 2.07 GiB and CUDA-graph pool 1.84 GiB outside it",
        "cuda_visible_assumed_for": unmeasured,
        "prices": "indicative cloud USD per GPU-hour, snapshot dated 2026-04-10; not a quote",
        "notes": notes,
    }
