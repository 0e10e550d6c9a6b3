"""The levers a suggestion pulls on one GPU type (more GPUs, quantized weights, a quantized KV cache,
the engine's settings, fewer sequences, a shorter context, offload), other GPU types, and the last
resorts when no one-server change fits."""

from __future__ import annotations

from gpusize.core.engines import EngineModel
from gpusize.core.engines.base import NodesEvaluator
from gpusize.core.gpu import GpuSpec
from gpusize.core.levers import Change, one
from gpusize.core.levers import Variant as _Variant
from gpusize.core.network import GPUS_PER_NODE
from gpusize.core.plan import TP_SIZES, Candidate
from gpusize.core.spec import ModelSpec
from gpusize.core.suggest.evaluate import (
    chain_floors,
    evaluated,
    fewest_counts,
    first_fit_of,
    suggestion,
    with_weights,
)
from gpusize.core.suggest.values import OTHER_GPU_TYPES, RANKING, Scope, Suggestion
from gpusize.core.workload import Workload
from gpusize.dataclass import replace
from gpusize.units import DTYPE_BYTES

__all__ = [
    "last_resort",
    "offload",
    "on_gpu",
    "other_types",
    "shorter_context",
    "smaller_batch",
    "variants",
]


def on_gpu(
    spec: ModelSpec, work: Workload, model: EngineModel, gpu: GpuSpec, scope: Scope
) -> list[Suggestion]:
    """Each lever on this GPU type, at the fewest GPUs (from the user's count) where it fits."""
    low = scope.count or 1
    counts = [n for n in TP_SIZES if low <= n <= scope.max_count]
    out: list[Suggestion] = []
    if scope.count:  # the same workload on more GPUs (without a fixed count, the plan tried them all)
        plain = _Variant("gpus", (), "more GPUs", None, work)
        out += first_fit_of(spec, gpu, [n for n in counts if n > scope.count], plain, model, scope.count)
    out += _per_lever(spec, work, model, gpu, counts, scope.count)
    widest = model.evaluate(spec, gpu, scope.count or counts[-1], work) if counts else None
    shorter = shorter_context(spec, work, model, gpu, widest, scope.count)
    fewer = smaller_batch(spec, work, model, gpu, widest, scope.count)
    offloaded = offload(spec, work, model, gpu, scope.count or 1)
    out += [s for s in (fewer, shorter, offloaded) if s]
    if len(scope.gpus) > 1:  # no --gpu was given: name the type
        out = [replace(s, changes=(Change("--gpu", gpu.name), *s.changes)) for s in out]
    return out


def _per_lever(
    spec: ModelSpec, work: Workload, model: EngineModel, gpu: GpuSpec, counts: list[int], count: int | None
) -> list[Suggestion]:
    """The quantizing variants then the engine's settings, each at the fewest of `counts` where it
    fits, a variant tried only below the fewest GPUs an earlier variant of its lever needs (bounded
    search, issue 24): on one GPU type a lever's suggestions rank by their GPU count alone (price,
    memory and GPUs all grow with it) and the first among equals is kept (Ranking.best_per_lever), so
    a later one at as many GPUs is never shown and need not be evaluated. A chained lever's variants
    are tried only from the fewest GPUs its last variant needs (`chain_floors`): none fits below."""
    out: list[Suggestion] = []
    fewest: dict[str, int] = {}
    settings = model.levers.settings(work, gpu)
    floors = chain_floors(spec, gpu, counts, settings, model, count)  # a chained lever's fewest
    for variant in (*variants(spec, work, model, gpu), *settings):
        below = fewest.get(variant.lever)
        tried = counts if below is None else [n for n in counts if n < below]
        if variant.lever in floors:
            floor = floors[variant.lever]
            tried = [] if floor is None else [n for n in tried if n >= floor]
        made = first_fit_of(spec, gpu, tried, variant, model, count)
        if made:
            fewest[variant.lever] = made[0].num_gpus
        out += made
    return out


def smaller_batch(
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
        made = evaluated(spec, gpu, widest.num_gpus, variant, model, count)
        if made:
            return made
        batch -= 1
    return None


def offload(spec: ModelSpec, work: Workload, model: EngineModel, gpu: GpuSpec, n: int) -> Suggestion | None:
    """The engine's offload lever (llama.cpp: the most layers on the GPUs that fit), evaluated."""
    variant = model.levers.offload(spec, work, gpu, n, model.evaluate) if model.levers.offload else None
    return evaluated(spec, gpu, n, variant, model, n) if variant else None


def variants(spec: ModelSpec, work: Workload, model: EngineModel, gpu: GpuSpec) -> list[_Variant]:
    """Quantized weights and an FP8 KV cache, where the engine and the checkpoint allow them."""
    out: list[_Variant] = []
    name = model.label
    if model.quantizes_on_load and work.stored_layers is None:
        linear = work.weights.linear_bytes
        if linear > 1.5 and gpu.supports_bf16:  # vLLM's FP8 kernels need compute capability 8.0+
            note = f"{name} quantizes the weights to FP8 while loading; no new checkpoint"
            out.append(
                one("fp8", "--quantization", "fp8", "FP8 weights", note, with_weights(spec, work, "fp8"))
            )
        if linear > 0.75:
            note = "needs a pre-quantized int4 checkpoint (AWQ or GPTQ, e.g. an '-AWQ' repository)"
            # bitsandbytes only where the release still loads it (vLLM: up to 0.27.1)
            if model.refuses_context(spec, replace(work, load_quantization="bitsandbytes")) is None:
                note += f", or --quantization bitsandbytes for {name} to quantize to 4 bits while loading"
            out.append(one("int4", "--dtype", "int4", "int4 weights", note, with_weights(spec, work, "int4")))
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


def shorter_context(
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
        made = evaluated(spec, gpu, widest.num_gpus, variant, model, count)
        if made:
            return made
        ctx = ctx * 15 // 16 // 16 * 16
    return None


def other_types(spec: ModelSpec, work: Workload, model: EngineModel, scope: Scope) -> list[Suggestion]:
    """The cheapest other GPU types that run the workload as it is (fewest GPUs each), as if every
    type were tried (`_every_type`), by a bounded search (issue 24): each type's answer costs at least
    its price at the fewest GPUs its weights allow (`weights_alone_too_big`), so the types are tried
    from the cheapest such bound and the search stops once OTHER_GPU_TYPES answers rank before the
    next type's bound. The bound holds as a fitting plan on n GPUs is priced for n (`price_for`, every
    engine's Candidate); an answer below its bound falls back to trying every type."""
    asked = {g.name for g in scope.gpus}
    counts = [n for n in TP_SIZES if n <= 8]
    bounds = []
    others = [(order, gpu) for order, gpu in enumerate(scope.others) if gpu.name not in asked]
    for (order, gpu), fewest in zip(
        others, fewest_counts(spec, work, [g for _, g in others], counts), strict=True
    ):
        if fewest is not None:  # else no count gives an answer (`evaluated`)
            bounds.append((_ranked_at(gpu, fewest), order, gpu, fewest))
    found: list[tuple[tuple[bool, float, int, int, int], int, Suggestion]] = []
    for bound, order, gpu, fewest in sorted(bounds, key=lambda b: (b[0], b[1])):
        if len(found) >= OTHER_GPU_TYPES and found[OTHER_GPU_TYPES - 1][:2] < (bound, order):
            break
        variant = _Variant("gpu", (Change("--gpu", gpu.name),), f"{gpu.name} instead", None, work)
        made = first_fit_of(spec, gpu, [n for n in counts if n >= fewest], variant, model, scope.count)
        for s in made:  # one at most: the fewest GPUs of this type
            key = RANKING.key(s)
            if key < bound:  # not the bound promised: try every type
                return _every_type(spec, work, model, scope)
            found = sorted([*found, (key, order, s)], key=_first_two)
    return [s for _, _, s in found[:OTHER_GPU_TYPES]]


def _first_two(found: tuple[tuple[bool, float, int, int, int], int, Suggestion]) -> tuple[object, ...]:
    return found[:2]


def _ranked_at(gpu: GpuSpec, n: int) -> tuple[bool, float, int, int, int]:
    """The ranking key (Ranking.key) of an answer of another GPU type on n of them."""
    price = gpu.price_for(n)
    return (price is None, price or 0.0, n, gpu.visible_bytes * n, RANKING.levers.index("gpu"))


def _every_type(spec: ModelSpec, work: Workload, model: EngineModel, scope: Scope) -> list[Suggestion]:
    """`other_types` by trying every type at every count."""
    asked = {g.name for g in scope.gpus}
    counts = [n for n in TP_SIZES if n <= 8]
    found = []
    for gpu in scope.others:
        if gpu.name in asked:
            continue
        variant = _Variant("gpu", (Change("--gpu", gpu.name),), f"{gpu.name} instead", None, work)
        found += first_fit_of(spec, gpu, counts, variant, model, scope.count)
    return RANKING.cheapest(found, OTHER_GPU_TYPES)


def last_resort(spec: ModelSpec, work: Workload, model: EngineModel, scope: Scope) -> list[Suggestion]:
    """When no single lever fits in one server: int4 weights with an FP8 KV cache, and (vLLM) the
    model as it is over several servers (TP=8 x PP=N)."""
    out: list[Suggestion] = []
    counts = [n for n in TP_SIZES if (scope.count or 1) <= n <= scope.max_count]
    asked = {g.name for g in scope.gpus}
    for gpu in (*scope.gpus, *(g for g in scope.others if g.name not in asked)):
        other = () if gpu.name in asked else (Change("--gpu", gpu.name),)
        if model.quantizes_on_load and work.weights.linear_bytes > 0.75:
            both = replace(
                with_weights(spec, work, "int4"), kv_cache_dtype="fp8", kv_bytes=DTYPE_BYTES["fp8"]
            )
            changes = (*other, Change("--dtype", "int4"), Change("--kv-cache-dtype", "fp8"))
            note = "needs a pre-quantized int4 checkpoint (AWQ or GPTQ)"
            variant = _Variant("int4", changes, "int4 weights and FP8 KV cache", note, both)
            out += first_fit_of(spec, gpu, counts, variant, model, scope.count)
        if model.nodes and scope.max_count == 8:
            out += nodes_variant(spec, work, gpu, other, model.nodes)
    return out


def nodes_variant(
    spec: ModelSpec, work: Workload, gpu: GpuSpec, other: tuple[Change, ...], evaluate_nodes: NodesEvaluator
) -> list[Suggestion]:
    for nodes in (2, 4, 8):
        c = evaluate_nodes(spec, gpu, nodes, work, GPUS_PER_NODE)
        if c.fits:
            changes = (*other, Change("--nodes", str(nodes)))
            summary = f"{nodes} servers of 8 (TP=8 x PP={nodes}; an estimate)"
            return [suggestion(c, _Variant("nodes", changes, summary, None, work), gpu)]
    return []
