"""The fit report (pure): the smallest split per GPU type, the pick, the whole-model memory and what
the numbers assume. One object drives the table and `--json`."""

from __future__ import annotations

from dataclasses import field, replace

from gpusize import __version__
from gpusize.core import kvcache
from gpusize.core.engines import ENGINE_MODULES, EngineModel, engine, engine_label, on_gpu
from gpusize.core.gpu import VENDOR_TERMS, GpuSpec, VendorTerms
from gpusize.core.model import ResolvedModel
from gpusize.core.plan import TP_SIZES, Candidate, recommend, smallest_fit
from gpusize.core.reserves import Reserve
from gpusize.core.spec import ModelSpec
from gpusize.core.suggest import Change, Scope, Suggestion, fewer_gpus, fixes, one_card
from gpusize.core.weights import weights_bytes
from gpusize.core.workload import Workload
from gpusize.dataclass import dataclass
from gpusize.reports.common import (
    NOT_IN_SHEETS,
    GpuFile,
    ModelFacts,
    gpu_file_notes,
    gpu_files,
    model_facts,
    price_note,
)

__all__ = ["FitAssumptions", "FitReport", "MemoryBreakdown", "build_fit_report", "model_notes"]


@dataclass(frozen=True, kw_only=True)
class MemoryBreakdown:
    """The model on one GPU (TP=1) as the engine would load it: the same terms as a split's per-GPU
    figures, so `total_bytes` here and a TP=1 row's `need` are the same number. The CUDA context and
    graph pool the engine keeps outside its budget are shown apart (`outside_budget_bytes`)."""

    weights_bytes: int
    kv_cache_bytes: int
    kv_cache_bytes_per_token: int
    activations_bytes: int
    overhead_bytes: int
    total_bytes: int
    outside_budget_bytes: int
    #: PyTorch engines (transformers): the allocated peak and the device figure (reserved peak + CUDA
    #: context) that `total_bytes` equals; None for vLLM, SGLang and llama.cpp.
    allocated_peak_bytes: int | None = None
    device_bytes: int | None = None
    #: What the engine reserves under its own flags (LoRA slots, a draft model, ...), inside the total.
    reserves: tuple[Reserve, ...] = ()

    def kv_average_per_token(self, tokens: int) -> int | None:
        """The KV total's bytes per token held when it is not `tokens` x `kv_cache_bytes_per_token`
        (sliding windows, recurrent state, the engine's own layout), else None."""
        product = tokens * self.kv_cache_bytes_per_token
        if not tokens or abs(self.kv_cache_bytes - product) <= KV_PRODUCT_TOLERANCE * product:
            return None
        return round(self.kv_cache_bytes / tokens)


#: The KV total counts as tokens x bytes a token while within this share of that product.
KV_PRODUCT_TOLERANCE = 0.005


@dataclass(frozen=True, kw_only=True)
class FitAssumptions:
    """What a fit answer assumed: the engine and its settings, the weight and KV formats, what is
    estimated, and the notes printed with it (JSON `assumptions`)."""

    engine: str
    engine_model: str
    #: The engine's settings for the plan shown (the user's, else its defaults), under its own names.
    settings: dict[str, float | int | str]
    weight_format: str
    kv_cache_dtype: str
    estimates: tuple[str, ...]
    best_effort: bool
    include_mtp: bool
    cuda_visible_assumed_for: tuple[str, ...]
    #: The plan GPU's vendor terms (context, graphs) the text uses; not a JSON key.
    terms: VendorTerms = field(default=VENDOR_TERMS["NVIDIA"], metadata={"json": False, **NOT_IN_SHEETS})
    #: The GPUs shown that come from a user catalog file (none: all bundled).
    gpu_files: tuple[GpuFile, ...] = field(metadata=NOT_IN_SHEETS)
    prices: str
    notes: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class FitReport:
    """The answer of `fit`: the model, the workload, the memory of the plan, every split tried, the
    suggestions and the assumptions (its `--json`)."""

    gpusize_version: str
    command: str
    fits: bool
    model: ModelFacts
    workload: Workload
    memory: MemoryBreakdown
    plan: Candidate | None
    #: The fewest GPUs of the plan's type that run it, when --gpus asked for more (else the plan's).
    min_gpus: int | None
    candidates: tuple[Candidate, ...]
    #: Configurations that fit, each evaluated by the same engine model, cheapest first: the nearest
    #: fixes when nothing fits; settings that save GPUs when it fits.
    suggestions: tuple[Suggestion, ...]
    #: When one GPU type was asked for (no --gpus) and the plan takes several: what ONE of them can
    #: do (quantized weights or KV cache, the largest context, llama.cpp offload), each evaluated.
    one_gpu: tuple[Suggestion, ...]
    assumptions: FitAssumptions


def build_fit_report(
    resolved: ResolvedModel,
    spec: ModelSpec,
    work: Workload,
    gpus: list[GpuSpec],
    fixed_count: int | None = None,
    max_count: int = 8,
    nodes: int | None = None,
    others: tuple[GpuSpec, ...] = (),
) -> FitReport:
    """Plan over `gpus`: the smallest valid split per GPU type up to `max_count` (or exactly
    `fixed_count`); when nothing fits, the nearest configurations that do, on these GPUs and on the
    `others` (the rest of the catalog)."""
    model = engine(work.engine.name)
    sizes = (fixed_count,) if fixed_count else tuple(n for n in TP_SIZES if n <= max_count)
    rows: list[Candidate] = []
    best: list[Candidate] = []
    for gpu in gpus:
        # one engine instance per MIG slice / unified-memory device: only one size to try
        tried = smallest_fit(spec, gpu, work, model.evaluate, sizes[:1] if gpu.one_device else sizes)
        if nodes and not tried[-1].fits and model.nodes is not None:
            from gpusize.core.network import GPUS_PER_NODE  # noqa: PLC0415 - start-up: only fit --nodes

            # each of the servers has --gpus GPUs (default the 8-GPU baseboard)
            tried.append(model.nodes(spec, gpu, nodes, work, fixed_count or GPUS_PER_NODE))
        rows += tried
        best.append(tried[-1])
    chosen = recommend(best)
    plan = chosen or (best[0] if len(gpus) == 1 else None)  # one GPU asked for: its closest miss
    plan_gpu = next((g for g in gpus if plan and g.name == plan.gpu), gpus[0])
    if chosen is None:
        scope = Scope(gpus=tuple(gpus), others=others, count=fixed_count, max_count=max_count)
        suggestions = fixes(spec, work, model, scope)
    else:
        suggestions = _savings(spec, work, model, gpus, best) if not fixed_count else ()
    fewest = chosen.num_gpus if chosen else None
    shown = on_gpu(spec, plan_gpu, work)  # the KV dtype the engine's auto picks on the plan's GPU
    alone: tuple[Suggestion, ...] = ()
    if chosen and len(gpus) == 1 and not fixed_count and chosen.num_gpus > 1:
        alone = one_card(spec, shown, model, plan_gpu, _offloaders(model))
    if chosen and fixed_count and fixed_count > 1:
        smaller = smallest_fit(spec, plan_gpu, work, model.evaluate, [n for n in TP_SIZES if n < fixed_count])
        fewest = next((c.num_gpus for c in smaller if c.fits), fixed_count)
    return FitReport(
        gpusize_version=__version__,
        command="fit",
        fits=chosen is not None,
        model=model_facts(resolved, spec),
        workload=shown,
        memory=whole_model(spec, plan_gpu, shown, model),
        plan=plan,
        min_gpus=fewest,
        candidates=tuple(rows),
        suggestions=suggestions,
        one_gpu=alone,
        assumptions=_assumptions(resolved, spec, shown, model, gpus, plan_gpu, plan),
    )


def _offloaders(model: EngineModel) -> tuple[EngineModel, ...]:
    """The other serving engines that can leave layers in system RAM (llama.cpp)."""
    others = (engine(name) for name in ENGINE_MODULES if name != model.name)
    return tuple(m for m in others if m.serves and m.levers.offload is not None)


def _savings(
    spec: ModelSpec, work: Workload, model: EngineModel, gpus: list[GpuSpec], best: list[Candidate]
) -> tuple[Suggestion, ...]:
    """Per GPU type whose smallest split takes several GPUs: the engine setting that needs fewer
    (vLLM's larger scheduler defaults on H100-class cards are why an A100 80GB can fit where an H100
    needs two). Cheapest first."""
    found = []
    for gpu, c in zip(gpus, best, strict=True):
        if c.fits and c.num_gpus > 1 and c.pipeline_parallel == 1:
            saving = fewer_gpus(spec, work, model, gpu, c.num_gpus)
            if saving and len(gpus) > 1:  # several types shown: the flags name the type they are for
                saving = replace(saving, changes=(Change("--gpu", gpu.name), *saving.changes))
            if saving:
                found.append(saving)
    return tuple(sorted(found, key=lambda s: (s.usd_per_hour is None, s.usd_per_hour or 0.0)))


def whole_model(spec: ModelSpec, gpu: GpuSpec, work: Workload, model: EngineModel) -> MemoryBreakdown:
    one = model.evaluate(spec, gpu, 1, work)
    per_token = kvcache.kv_cache_bytes_per_token(spec, work.kv_bytes, 1)
    g = one.per_gpu
    if g is None:  # refused before sizing (context beyond the model's maximum): weights and KV only
        weights = weights_bytes(spec, work.weights, 1, work.include_mtp)
        kv = work.batch * work.context_tokens * per_token
        return MemoryBreakdown(
            weights_bytes=weights,
            kv_cache_bytes=kv,
            kv_cache_bytes_per_token=per_token,
            activations_bytes=0,
            overhead_bytes=0,
            total_bytes=weights + kv,
            outside_budget_bytes=0,
        )
    return MemoryBreakdown(
        weights_bytes=g.weights_bytes,
        kv_cache_bytes=g.kv_cache_bytes,
        kv_cache_bytes_per_token=per_token,
        activations_bytes=g.activations_bytes,
        overhead_bytes=g.overhead_bytes,
        total_bytes=g.total_bytes,
        outside_budget_bytes=g.outside_budget_bytes,
        reserves=g.reserves,
        allocated_peak_bytes=g.allocated_peak_bytes,
        device_bytes=g.device_bytes,
    )


def model_notes(resolved: ResolvedModel, spec: ModelSpec, work: Workload) -> list[str]:
    """Caveats of the model and its weights, shared by every inference report."""
    notes = list(resolved.notes)
    if work.release.note:
        notes.append(work.release.note)
    if work.weights.note:
        notes.append(work.weights.note)
    if work.checkpoint_warning:
        notes.append(work.checkpoint_warning)
    if spec.vision and not spec.vision.exact:
        notes.append(
            f"vision tower ({spec.vision.model_type}) parameters estimated with a generic ViT formula"
        )
    notes += engine(work.engine.name).notes(spec, work)
    if spec.linear_attention or spec.mamba:
        notes.append(
            "linear-attention / Mamba layers hold a constant recurrent state per sequence, counted in "
            "kv_cache_bytes"
        )
    if spec.num_nextn_predict_layers:
        loaded = "loaded (--mtp)" if work.include_mtp else "not loaded (no speculative decoding; --mtp)"
        notes.append(f"{spec.num_nextn_predict_layers} MTP layer(s) in the checkpoint: {loaded}")
    if spec.best_effort_from:
        notes.append(
            f"BEST-EFFORT ESTIMATE: model_type '{spec.best_effort_from}' is not supported; read as a "
            "Llama-style decoder from its standard fields"
        )
    return notes


def _assumptions(
    resolved: ResolvedModel,
    spec: ModelSpec,
    work: Workload,
    model: EngineModel,
    gpus: list[GpuSpec],
    plan_gpu: GpuSpec,
    plan: Candidate | None,
) -> FitAssumptions:
    notes = model_notes(resolved, spec, work)
    if plan_gpu.memory_note:
        notes.append(plan_gpu.memory_note)
    elif not plan_gpu.visible_is_measured:
        notes.append(
            f"{plan_gpu.name}: {plan_gpu.runtime}-visible total assumed = reported total - "
            f"{plan_gpu.assumed_reserve_mib} MiB driver/{plan_gpu.runtime} reserve (no measured figure)"
        )
    estimates = ("activations_bytes", "overhead_bytes") + (
        ("weights_bytes", "kv_cache_bytes") if spec.best_effort_from else ()
    )
    return FitAssumptions(
        engine=engine_label(work.engine),
        engine_model=model.note,
        settings=model.effective_settings(spec, plan_gpu, _plan_gpus(model, plan), work),
        weight_format=work.weights.name,
        kv_cache_dtype=work.kv_cache_dtype,
        estimates=estimates,
        best_effort=spec.best_effort_from is not None,
        include_mtp=work.include_mtp,
        cuda_visible_assumed_for=tuple(g.name for g in gpus if not g.visible_is_measured),
        terms=plan_gpu.terms,
        gpu_files=gpu_files(gpus),
        prices=price_note(gpus),
        notes=tuple(notes + gpu_file_notes(gpus)),
    )


def _plan_gpus(model: EngineModel, plan: Candidate | None) -> int:
    """The GPU count an engine's settings are stated for: the TP size, or every GPU of a layer split."""
    if plan is None:
        return 1
    return plan.num_gpus if model.splits_layers else plan.tensor_parallel
