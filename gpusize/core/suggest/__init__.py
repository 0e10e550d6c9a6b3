"""Fix suggestions (pure): when a plan does not fit, the nearest configurations that do; when it fits
on more GPUs than an engine setting would need, that setting.

Nothing here is guessed: every suggestion is a workload variant (one lever changed: more GPUs, FP8 or
int4 weights, an FP8 KV cache, a shorter context, a higher memory utilization, fewer sequences per
step, another GPU type) evaluated by the same engine model as the plan it answers, and only the
variants that fit are returned, cheapest first: the GPU catalog's price per hour for the whole server
where the GPU is priced, else fewer GPUs, then less memory; among equals the least intrusive lever.

The package: `values` (what a suggestion is, the lever order), `variants` (the levers), `evaluate`
(one variant judged by the engine's model); here the searches: `fixes`, `fewer_gpus`, `one_card`.
"""

from __future__ import annotations

import functools

from gpusize.core.engines import EngineModel
from gpusize.core.gpu import GpuSpec
from gpusize.core.levers import Change
from gpusize.core.plan import TP_SIZES
from gpusize.core.search import undominated
from gpusize.core.spec import ModelSpec
from gpusize.core.suggest.evaluate import chain_floors, evaluated, weights_alone_too_big
from gpusize.core.suggest.values import MAX_SUGGESTIONS, OTHER_GPU_TYPES, RANKING, Scope, Suggestion
from gpusize.core.suggest.variants import last_resort, on_gpu, other_types, shorter_context, variants
from gpusize.core.workload import EngineName, EngineSettings, Workload
from gpusize.dataclass import replace
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


def fixes(spec: ModelSpec, work: Workload, model: EngineModel, scope: Scope) -> tuple[Suggestion, ...]:
    """The nearest configurations that fit, cheapest first (at most MAX_SUGGESTIONS): each lever on the
    GPU types asked about (with the fewest GPUs it needs), other GPU types, and, when no one-server
    change fits, int4 with an FP8 KV cache and (vLLM) a pipeline across servers."""
    found: list[Suggestion] = []
    for gpu in scope.gpus:
        found += on_gpu(spec, work, model, gpu, scope)
    if len(scope.gpus) == 1:
        found += other_types(spec, work, model, scope)
    if not found:
        found += last_resort(spec, work, model, scope)
    kept = RANKING.best_per_lever(undominated(found), per_gpu=len(scope.gpus) == 1)
    return tuple(RANKING.cheapest(kept, MAX_SUGGESTIONS))


def fewer_gpus(
    spec: ModelSpec, work: Workload, model: EngineModel, gpu: GpuSpec, needed: int
) -> Suggestion | None:
    """A setting that runs the model on fewer GPUs than the `needed` it takes with the engine's
    defaults (the engine's setting levers: vLLM's fewer sequences per step, a higher memory
    utilization), or None: the first count and variant that fits, a chained lever skipped on a count
    where its last variant does not fit (`chain_floors`)."""
    variants = model.levers.settings(work, gpu)
    for n in (k for k in TP_SIZES if k < needed):
        floors = chain_floors(spec, gpu, [n], variants, model, None)
        for variant in variants:
            if floors.get(variant.lever, n) is None:  # its most room does not fit: nor does the rest
                continue
            made = evaluated(spec, gpu, n, variant, model, None)
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
    for variant in variants(spec, work, model, gpu):  # a lever that fits one GPU at a shorter context
        if weights_alone_too_big(spec, variant.work, gpu, 1):
            continue  # no context fits (`shorter_context` evaluates each through `evaluated`)
        c = model.evaluate(spec, gpu, 1, variant.work)
        shorter = None if c.fits else shorter_context(spec, variant.work, model, gpu, c, 1)
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


@functools.cache
def _defaults_of(name: EngineName) -> EngineSettings:
    """The engine's settings left at its defaults: one value (and its kept hash) for every row of a
    batch whose one-GPU answer tries llama.cpp's offload (52 fields built a row)."""
    return EngineSettings(name=name)


def _offload_on(spec: ModelSpec, work: Workload, other: EngineModel, gpu: GpuSpec) -> Suggestion | None:
    """`work` under another engine (its defaults: llama.cpp's f16 KV cache), its offload lever on one
    GPU, evaluated by that engine's model."""
    kv = other.kv_default or "fp16"
    there = replace(
        work,
        engine=_defaults_of(other.name),
        release=other.releases.resolve(None),
        kv_cache_dtype=kv,
        kv_bytes=other.kv_cache_types.get(kv, DTYPE_BYTES.get(kv, 2.0)),
    )
    if other.levers.offload is None:
        return None
    variant = other.levers.offload(spec, there, gpu, 1, other.evaluate)
    if variant is None or other.refuses_context(spec, there):
        return None
    note = f"needs a GGUF file of the model; {variant.note}" if variant.note else None
    engine_flag = Change("--engine", other.name)
    summary = f"{other.label}, {variant.summary} in GPU memory"
    moved = variant._replace(changes=(engine_flag, *variant.changes), summary=summary, note=note)
    return evaluated(spec, gpu, 1, moved, other, 1)
