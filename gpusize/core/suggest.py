"""Fix suggestions (pure): when a plan does not fit, the nearest configurations that do; when it fits
on more GPUs than an engine setting would need, that setting.

Nothing here is guessed: every suggestion is a workload variant (one lever changed: more GPUs, FP8 or
int4 weights, an FP8 KV cache, a shorter context, a higher memory utilization, fewer sequences per
step, another GPU type) evaluated by the same engine model as the plan it answers, and only the
variants that fit are returned, cheapest first: the GPU catalog's price per hour for the whole server
where the GPU is priced, else fewer GPUs, then less memory; among equals the least intrusive lever.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from gpusize.core.engines import EngineModel
from gpusize.core.engines.base import NodesEvaluator
from gpusize.core.gpu import GpuSpec
from gpusize.core.levers import Change, one
from gpusize.core.levers import Variant as _Variant
from gpusize.core.plan import TP_SIZES, Candidate, thin_margin
from gpusize.core.search import Ranking, first_fit, undominated
from gpusize.core.spec import ModelSpec
from gpusize.core.weights import linear_bytes_per_gpu, weight_format
from gpusize.core.workload import EngineSettings, Workload
from gpusize.units import DTYPE_BYTES

__all__ = [
    "MAX_SUGGESTIONS",
    "OTHER_GPU_TYPES",
    "Change",
    "Scope",
    "Suggestion",
    "fewer_gpus",
    "fixes",
    "one_card",
]

#: Most suggestions returned (cheapest first).
MAX_SUGGESTIONS = 8
#: Other GPU types suggested when the plan was asked for one type (cheapest first).
OTHER_GPU_TYPES = 3
#: Levers from least to most intrusive: what breaks a tie of price and GPU count.
_RANKING = Ranking(
    ("seqs", "utilization", "kv", "gpus", "fp8", "int4", "offload", "batch", "context", "gpu", "nodes")
)


@dataclass(frozen=True, kw_only=True)
class Suggestion:
    """A configuration that fits: what changes, and the plan it gives (evaluated, not guessed)."""

    changes: tuple[Change, ...]
    summary: str
    #: What the change needs or why it works (a pre-quantized checkpoint, vLLM's scheduler defaults).
    note: str | None
    gpu: str
    gpu_full_name: str
    num_gpus: int
    tensor_parallel: int
    pipeline_parallel: int
    fits: bool
    kv_cache_capacity_tokens: int | None
    max_context_tokens: int | None
    #: Indicative USD per hour for all the GPUs of the plan (None when the GPU is unpriced).
    usd_per_hour: float | None
    lever: str = field(metadata={"json": False})
    memory_bytes: int = field(default=0, metadata={"json": False})


@dataclass(frozen=True, kw_only=True)
class Scope:
    """Where to look: the GPU types the user asked about, the catalog's others, and the counts."""

    gpus: tuple[GpuSpec, ...]
    #: Other GPU types to suggest (the catalog; empty for this machine's own GPUs).
    others: tuple[GpuSpec, ...] = ()
    #: The GPU count the user fixed (--gpus), else None.
    count: int | None = None
    #: Most GPUs in one server (a local machine may have fewer than 8).
    max_count: int = 8


def fixes(spec: ModelSpec, work: Workload, model: EngineModel, scope: Scope) -> tuple[Suggestion, ...]:
    """The nearest configurations that fit, cheapest first (at most MAX_SUGGESTIONS): each lever on the
    GPU types asked about (with the fewest GPUs it needs), other GPU types, and, when no one-server
    change fits, int4 with an FP8 KV cache and (vLLM) a pipeline across servers."""
    found: list[Suggestion] = []
    for gpu in scope.gpus:
        found += _on_gpu(spec, work, model, gpu, scope)
    if len(scope.gpus) == 1:
        found += _other_types(spec, work, model, scope)
    if not found:
        found += _last_resort(spec, work, model, scope)
    kept = _RANKING.best_per_lever(undominated(found), per_gpu=len(scope.gpus) == 1)
    return tuple(_RANKING.cheapest(kept, MAX_SUGGESTIONS))


def fewer_gpus(
    spec: ModelSpec, work: Workload, model: EngineModel, gpu: GpuSpec, needed: int
) -> Suggestion | None:
    """A setting that runs the model on fewer GPUs than the `needed` it takes with the engine's
    defaults (the engine's setting levers: vLLM's fewer sequences per step, a higher memory
    utilization), or None."""
    variants = model.levers.settings(work, gpu)
    for n in (k for k in TP_SIZES if k < needed):
        for variant in variants:
            made = _evaluated(spec, gpu, n, variant, model, None)
            if made:
                return made
    return None


def one_card(
    spec: ModelSpec,
    work: Workload,
    model: EngineModel,
    gpu: GpuSpec,
    offloaders: tuple[EngineModel, ...] = (),
) -> tuple[Suggestion, ...]:
    """What ONE GPU of this type can do when the plan takes several (a person who owns one card): each
    lever on one GPU (quantized weights, a quantized KV cache, the largest context, fewer sequences,
    the engine's settings and offload), then, for an engine without an offload lever, the first of
    `offloaders` (llama.cpp) with layers left in system RAM; every one evaluated, cheapest first."""
    found = list(fixes(spec, work, model, Scope(gpus=(gpu,), count=1, max_count=1)))
    for variant in _variants(spec, work, model, gpu):  # a lever that fits one GPU at a shorter context
        c = model.evaluate(spec, gpu, 1, variant.work)
        shorter = None if c.fits else _shorter_context(spec, variant.work, model, gpu, c, 1)
        if shorter:
            summary = f"{variant.summary}, {shorter.summary}"
            changes = (*variant.changes, *shorter.changes)
            found.append(replace(shorter, changes=changes, summary=summary, note=variant.note))
    if model.levers.offload is None:
        for other in offloaders:
            made = _offload_on(spec, work, other, gpu)
            if made:
                found.append(made)
                break
    return tuple(found[:MAX_SUGGESTIONS])


def _offload_on(spec: ModelSpec, work: Workload, other: EngineModel, gpu: GpuSpec) -> Suggestion | None:
    """`work` under another engine (its defaults: llama.cpp's f16 KV cache), its offload lever on one
    GPU, evaluated by that engine's model."""
    kv = other.kv_default or "fp16"
    there = replace(
        work,
        engine=EngineSettings(name=other.name),
        release=other.releases.resolve(None),
        kv_cache_dtype=kv,
        kv_bytes=other.kv_cache_types.get(kv, DTYPE_BYTES.get(kv, 2.0)),
    )
    if other.levers.offload is None:
        return None
    variant = other.levers.offload(spec, there, gpu, 1)
    if variant is None or other.refuses_context(spec, there):
        return None
    note = f"needs a GGUF file of the model; {variant.note}" if variant.note else None
    engine_flag = Change("--engine", other.name)
    summary = f"{other.label}, {variant.summary} in GPU memory"
    moved = variant._replace(changes=(engine_flag, *variant.changes), summary=summary, note=note)
    return _evaluated(spec, gpu, 1, moved, other, 1)


# --------------------------------------------------------------------------- the levers


def _on_gpu(
    spec: ModelSpec, work: Workload, model: EngineModel, gpu: GpuSpec, scope: Scope
) -> list[Suggestion]:
    """Each lever on this GPU type, at the fewest GPUs (from the user's count) where it fits."""
    low = scope.count or 1
    counts = [n for n in TP_SIZES if low <= n <= scope.max_count]
    out: list[Suggestion] = []
    if scope.count:  # the same workload on more GPUs (without a fixed count, the plan tried them all)
        plain = _Variant("gpus", (), "more GPUs", None, work)
        out += _first_fit(spec, gpu, [n for n in counts if n > scope.count], plain, model, scope.count)
    for variant in _variants(spec, work, model, gpu):
        out += _first_fit(spec, gpu, counts, variant, model, scope.count)
    for variant in model.levers.settings(work, gpu):
        out += _first_fit(spec, gpu, counts, variant, model, scope.count)
    widest = model.evaluate(spec, gpu, scope.count or counts[-1], work) if counts else None
    shorter = _shorter_context(spec, work, model, gpu, widest, scope.count)
    fewer = _smaller_batch(spec, work, model, gpu, widest, scope.count)
    offload = _offload(spec, work, model, gpu, scope.count or 1)
    out += [s for s in (fewer, shorter, offload) if s]
    if len(scope.gpus) > 1:  # no --gpu was given: name the type
        out = [replace(s, changes=(Change("--gpu", gpu.name), *s.changes)) for s in out]
    return out


def _smaller_batch(
    spec: ModelSpec,
    work: Workload,
    model: EngineModel,
    gpu: GpuSpec,
    widest: Candidate | None,
    count: int | None,
) -> Suggestion | None:
    """The most concurrent sequences of this context that fit on the most GPUs tried (--batch)."""
    if work.batch < 2 or widest is None or widest.per_gpu is None or not widest.max_concurrency:
        return None
    batch = min(int(widest.max_concurrency), work.batch - 1)
    for _ in range(4):  # per-request reservations round up: step down until the engine agrees
        if batch < 1:
            return None
        summary = f"{batch} concurrent sequence{'s' if batch > 1 else ''} of this context"
        variant = one(
            "batch", "--batch", str(batch), summary, None, work.with_context(work.context_tokens, batch)
        )
        made = _evaluated(spec, gpu, widest.num_gpus, variant, model, count)
        if made:
            return made
        batch -= 1
    return None


def _offload(spec: ModelSpec, work: Workload, model: EngineModel, gpu: GpuSpec, n: int) -> Suggestion | None:
    """The engine's offload lever (llama.cpp: the most layers on the GPUs that fit), evaluated."""
    variant = model.levers.offload(spec, work, gpu, n) if model.levers.offload else None
    return _evaluated(spec, gpu, n, variant, model, n) if variant else None


def _variants(spec: ModelSpec, work: Workload, model: EngineModel, gpu: GpuSpec) -> list[_Variant]:
    """Quantized weights and an FP8 KV cache, where the engine and the checkpoint allow them."""
    out: list[_Variant] = []
    name = model.label
    if model.quantizes_on_load and work.stored_layers is None:
        linear = work.weights.linear_bytes
        if linear > 1.5 and gpu.supports_bf16:  # vLLM's FP8 kernels need compute capability 8.0+
            note = f"{name} quantizes the weights to FP8 while loading; no new checkpoint"
            out.append(
                one("fp8", "--quantization", "fp8", "FP8 weights", note, _with_weights(spec, work, "fp8"))
            )
        if linear > 0.75:
            note = (
                "needs a pre-quantized int4 checkpoint (AWQ or GPTQ, e.g. an '-AWQ' repository), or "
                f"--quantization bitsandbytes for {name} to quantize to 4 bits while loading"
            )
            out.append(
                one("int4", "--dtype", "int4", "int4 weights", note, _with_weights(spec, work, "int4"))
            )
    for kind in model.levers.kv_types:
        size = model.kv_cache_types.get(kind, DTYPE_BYTES.get(kind, 0.0))
        if work.kv_cache_dtype == kind or not 0 < size < work.kv_bytes:
            continue
        quantized = replace(work, kv_cache_dtype=kind, kv_bytes=size)
        if model.refuses_context(spec, quantized) is None:  # llama.cpp: a q8_0 V cache needs -fa on
            how = model.levers.kv_note.format(kind=kind) if model.levers.kv_note else None
            label = "FP8" if kind == "fp8" else kind
            out.append(one("kv", "--kv-cache-dtype", kind, f"{label} KV cache", how, quantized))
    return out


def _shorter_context(
    spec: ModelSpec,
    work: Workload,
    model: EngineModel,
    gpu: GpuSpec,
    widest: Candidate | None,
    count: int | None,
) -> Suggestion | None:
    """The largest context that fits on the most GPUs tried, confirmed by evaluating it."""
    if widest is None or widest.per_gpu is None or not widest.max_context_tokens:
        return None
    ctx = widest.max_context_tokens
    flag = model.levers.context_flag
    for _ in range(4):  # the scheduler clamps with the context: step down until the engine agrees
        if ctx <= 0 or ctx >= work.context_tokens:
            return None
        summary = f"context {ctx:,} tokens (the largest that fits)"
        variant = one("context", flag, str(ctx), summary, None, work.with_context(ctx))
        made = _evaluated(spec, gpu, widest.num_gpus, variant, model, count)
        if made:
            return made
        ctx = ctx * 15 // 16 // 16 * 16
    return None


def _other_types(spec: ModelSpec, work: Workload, model: EngineModel, scope: Scope) -> list[Suggestion]:
    """The cheapest other GPU types that run the workload as it is (fewest GPUs each)."""
    asked = {g.name for g in scope.gpus}
    counts = [n for n in TP_SIZES if n <= 8]
    found = []
    for gpu in scope.others:
        if gpu.name in asked:
            continue
        variant = _Variant("gpu", (Change("--gpu", gpu.name),), f"{gpu.name} instead", None, work)
        found += _first_fit(spec, gpu, counts, variant, model, scope.count)
    return _RANKING.cheapest(found, OTHER_GPU_TYPES)


def _last_resort(spec: ModelSpec, work: Workload, model: EngineModel, scope: Scope) -> list[Suggestion]:
    """When no single lever fits in one server: int4 weights with an FP8 KV cache, and (vLLM) the
    model as it is over several servers (TP=8 x PP=N)."""
    out: list[Suggestion] = []
    counts = [n for n in TP_SIZES if (scope.count or 1) <= n <= scope.max_count]
    asked = {g.name for g in scope.gpus}
    for gpu in (*scope.gpus, *(g for g in scope.others if g.name not in asked)):
        other = () if gpu.name in asked else (Change("--gpu", gpu.name),)
        if model.quantizes_on_load and work.weights.linear_bytes > 0.75:
            both = replace(
                _with_weights(spec, work, "int4"), kv_cache_dtype="fp8", kv_bytes=DTYPE_BYTES["fp8"]
            )
            changes = (*other, Change("--dtype", "int4"), Change("--kv-cache-dtype", "fp8"))
            note = "needs a pre-quantized int4 checkpoint (AWQ or GPTQ)"
            variant = _Variant("int4", changes, "int4 weights and FP8 KV cache", note, both)
            out += _first_fit(spec, gpu, counts, variant, model, scope.count)
        if model.nodes and scope.max_count == 8:
            out += _nodes(spec, work, gpu, other, model.nodes)
    return out


def _nodes(
    spec: ModelSpec, work: Workload, gpu: GpuSpec, other: tuple[Change, ...], evaluate_nodes: NodesEvaluator
) -> list[Suggestion]:
    for nodes in (2, 4, 8):
        c = evaluate_nodes(spec, gpu, nodes, work)
        if c.fits:
            changes = (*other, Change("--nodes", str(nodes)))
            summary = f"{nodes} servers of 8 (TP=8 x PP={nodes}; an estimate)"
            return [_suggestion(c, _Variant("nodes", changes, summary, None, work), gpu)]
    return []


# --------------------------------------------------------------------------- evaluation and order


def _first_fit(
    spec: ModelSpec,
    gpu: GpuSpec,
    counts: Iterable[int],
    variant: _Variant,
    model: EngineModel,
    asked: int | None,
) -> list[Suggestion]:
    return first_fit(counts, lambda n: _evaluated(spec, gpu, n, variant, model, asked))


def _evaluated(
    spec: ModelSpec, gpu: GpuSpec, n: int, variant: _Variant, model: EngineModel, asked: int | None
) -> Suggestion | None:
    if _weights_alone_too_big(spec, variant.work, gpu, n):
        return None
    c = model.evaluate(spec, gpu, n, variant.work)
    if not c.fits or _thin(c, variant.work, model):
        return None
    changes = variant.changes
    if (asked is None and n > 1) or (asked is not None and n != asked):
        changes += (Change(model.levers.count_flag, str(n)),)
    return _suggestion(c, variant._replace(changes=changes), gpu)


def _thin(c: Candidate, work: Workload, model: EngineModel) -> bool:
    """A paged-KV plan that holds the requests by less than the model's error on public start-up logs
    (the engine's thin margin): the plan itself keeps it with a warning, a suggestion does not."""
    return thin_margin(c.max_concurrency, work.batch, model.levers.thin_margin)


def _weights_alone_too_big(spec: ModelSpec, work: Workload, gpu: GpuSpec, n: int) -> bool:
    """A cheap lower bound: the linear weights alone, split n ways, above the GPU's whole memory
    (llama.cpp with layers left in system RAM excepted)."""
    if work.engine.n_gpu_layers is not None:
        return False
    return linear_bytes_per_gpu(spec, work.weights, n) > gpu.visible_bytes


def _suggestion(c: Candidate, variant: _Variant, gpu: GpuSpec) -> Suggestion:
    where = f"{c.num_gpus}x {gpu.name}"
    summary = {"nodes": variant.summary, "gpu": f"{where} instead", "gpus": where}.get(
        variant.lever, f"{variant.summary} on {where}"
    )
    return Suggestion(
        changes=variant.changes,
        summary=summary,
        note=variant.note,
        gpu=c.gpu,
        gpu_full_name=c.gpu_full_name,
        num_gpus=c.num_gpus,
        tensor_parallel=c.tensor_parallel,
        pipeline_parallel=c.pipeline_parallel,
        fits=c.fits,
        kv_cache_capacity_tokens=c.kv_cache_capacity_tokens,
        max_context_tokens=c.max_context_tokens,
        usd_per_hour=c.usd_per_hour,
        lever=variant.lever,
        memory_bytes=gpu.visible_bytes * c.num_gpus,
    )


def _with_weights(spec: ModelSpec, work: Workload, dtype: str) -> Workload:
    return replace(work, requested_dtype=dtype, weights=weight_format(spec, dtype), checkpoint_warning=None)
