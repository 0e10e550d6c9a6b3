"""One suggestion evaluated: a lever's workload on n GPUs, by the engine's own model, kept only when it
fits on a safe margin; and the order of the counts tried."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from gpusize.core.engines import EngineModel
from gpusize.core.gpu import GpuSpec
from gpusize.core.levers import Change
from gpusize.core.levers import Variant as _Variant
from gpusize.core.plan import Candidate, thin_margin
from gpusize.core.search import first_fit
from gpusize.core.spec import ModelSpec
from gpusize.core.suggest.values import Suggestion
from gpusize.core.weights import linear_bytes_per_gpu, weight_format
from gpusize.core.workload import Workload
from gpusize.dataclass import replace

__all__ = [
    "chain_floors",
    "evaluated",
    "fewest_counts",
    "first_fit_of",
    "suggestion",
    "thin",
    "weights_alone_too_big",
    "with_weights",
]


def first_fit_of(
    spec: ModelSpec,
    gpu: GpuSpec,
    counts: Iterable[int],
    variant: _Variant,
    model: EngineModel,
    asked: int | None,
) -> list[Suggestion]:
    return first_fit(counts, lambda n: evaluated(spec, gpu, n, variant, model, asked))


def evaluated(
    spec: ModelSpec, gpu: GpuSpec, n: int, variant: _Variant, model: EngineModel, asked: int | None
) -> Suggestion | None:
    if weights_alone_too_big(spec, variant.work, gpu, n):
        return None
    c = model.evaluate(spec, gpu, n, variant.work)
    if not c.fits or thin(c, variant.work, model):
        return None
    changes = variant.changes
    if (asked is None and n > 1) or (asked is not None and n != asked):
        changes += (Change(model.levers.count_flag, str(n)),)
    return suggestion(c, variant._replace(changes=changes), gpu)


def chain_floors(
    spec: ModelSpec,
    gpu: GpuSpec,
    counts: Sequence[int],
    settings: Sequence[_Variant],
    model: EngineModel,
    asked: int | None,
) -> dict[str, int | None]:
    """For each chained setting lever (`Levers.chained`) among `settings`: the fewest of `counts` where
    its last variant, the one with the most room, fits (None: no count), which no variant of the
    lever beats; found by evaluating that variant, as the search would have."""
    last = {v.lever: v for v in settings if v.lever in model.levers.chained}
    out: dict[str, int | None] = {}
    for lever, variant in last.items():
        made = first_fit_of(spec, gpu, counts, variant, model, asked)
        out[lever] = made[0].num_gpus if made else None
    return out


def thin(c: Candidate, work: Workload, model: EngineModel) -> bool:
    """A paged-KV plan that holds the requests by less than the model's error on public start-up logs
    (the engine's thin margin): the plan itself keeps it with a warning, a suggestion does not."""
    return thin_margin(c.max_concurrency, work.batch, model.levers.thin_margin)


def weights_alone_too_big(spec: ModelSpec, work: Workload, gpu: GpuSpec, n: int) -> bool:
    """A cheap lower bound: the linear weights alone, split n ways, above the GPU's whole memory
    (llama.cpp with layers left in system RAM excepted)."""
    if work.engine.n_gpu_layers is not None:
        return False
    return linear_bytes_per_gpu(spec, work.weights, n) > gpu.visible_bytes


def fewest_counts(
    spec: ModelSpec, work: Workload, gpus: list[GpuSpec], counts: list[int]
) -> list[int | None]:
    """For each GPU, the first of `counts` where the weights alone are not too big
    (`weights_alone_too_big`), or None: the bytes per GPU found once per count, not per GPU type."""
    if work.engine.n_gpu_layers is not None:
        return [counts[0] if counts else None for _ in gpus]
    linear = [(n, linear_bytes_per_gpu(spec, work.weights, n)) for n in counts]
    out = []
    for gpu in gpus:
        visible = gpu.visible_bytes
        out.append(next((n for n, need in linear if need <= visible), None))
    return out


def suggestion(c: Candidate, variant: _Variant, gpu: GpuSpec) -> Suggestion:
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


def with_weights(spec: ModelSpec, work: Workload, dtype: str) -> Workload:
    return replace(work, requested_dtype=dtype, weights=weight_format(spec, dtype), checkpoint_warning=None)
