"""Fix suggestions (pure): when a plan does not fit, the nearest configurations that do; when it fits
on more GPUs than an engine setting would need, that setting.

Nothing here is guessed: every suggestion is a workload variant (one lever changed: more GPUs, FP8 or
int4 weights, an FP8 KV cache, a shorter context, a higher memory utilization, fewer sequences per
step, another GPU type) evaluated by the same engine model as the plan it answers, and only the
variants that fit are returned, cheapest first: the GPU catalog's price per hour for the whole server
where the GPU is priced, else fewer GPUs, then less memory; among equals the least intrusive lever.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

from gpusize.core.engines import EngineModel, llamacpp
from gpusize.core.engines.vllm import (
    THIN_MARGIN,
    evaluate_nodes,
    scheduler_limits,
    scheduler_note,
    utilization,
)
from gpusize.core.gpu import GpuSpec
from gpusize.core.plan import TP_SIZES, Candidate
from gpusize.core.spec import ModelSpec
from gpusize.core.weights import linear_bytes_per_gpu, weight_format
from gpusize.core.workload import Workload
from gpusize.units import DTYPE_BYTES, GIB

__all__ = [
    "HIGH_UTILIZATION",
    "MAX_SUGGESTIONS",
    "OTHER_GPU_TYPES",
    "Change",
    "Scope",
    "Suggestion",
    "fewer_gpus",
    "fixes",
]

#: The highest --gpu-memory-utilization suggested: vLLM's own docs raise it to 0.95 for more KV cache
#: (docs.vllm.ai "Conserving Memory"); above it the CUDA context and graph capture have little room.
HIGH_UTILIZATION = 0.95
#: Most suggestions returned (cheapest first).
MAX_SUGGESTIONS = 8
#: Other GPU types suggested when the plan was asked for one type (cheapest first).
OTHER_GPU_TYPES = 3
#: The smallest --max-num-seqs suggested: below it a server runs too few requests at once to be a
#: useful fix.
MIN_SEQS = 32
#: Levers from least to most intrusive: what breaks a tie of price and GPU count.
_LEVERS = ("seqs", "utilization", "kv", "gpus", "fp8", "int4", "offload", "batch", "context", "gpu", "nodes")
#: The engines' flag for the GPU count and the context (gpusize accepts both as aliases).
_COUNT_FLAG = {"vllm": "--tensor-parallel-size", "sglang": "--tensor-parallel-size"}
_CONTEXT_FLAG = {"vllm": "--max-model-len", "sglang": "--context-length"}


@dataclass(frozen=True)
class Change:
    """One flag to pass, under the engine's own name where the engine has the setting."""

    flag: str
    value: str


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


@dataclass(frozen=True)
class _Variant:
    lever: str
    changes: tuple[Change, ...]
    summary: str
    note: str | None
    work: Workload


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
    kept = _best_per_lever(_undominated(found), per_gpu=len(scope.gpus) == 1)
    return tuple(_cheapest(kept, MAX_SUGGESTIONS))


def fewer_gpus(
    spec: ModelSpec, work: Workload, model: EngineModel, gpu: GpuSpec, needed: int
) -> Suggestion | None:
    """A setting that runs the model on fewer GPUs than the `needed` it takes with the engine's
    defaults (vLLM: fewer sequences per step, a higher memory utilization), or None."""
    if model.name != "vllm":
        return None
    variants = _settings(work, gpu)
    for n in (k for k in TP_SIZES if k < needed):
        for variant in variants:
            made = _evaluated(spec, gpu, n, variant, model, None)
            if made:
                return made
    return None


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
    if model.name == "vllm":
        for variant in _settings(work, gpu):
            out += _first_fit(spec, gpu, counts, variant, model, scope.count)
    widest = model.evaluate(spec, gpu, scope.count or counts[-1], work) if counts else None
    shorter = _shorter_context(spec, work, model, gpu, widest, scope.count)
    fewer = _smaller_batch(spec, work, model, gpu, widest, scope.count)
    offload = _offload(spec, work, model, gpu, scope.count or 1) if model.name == "llamacpp" else None
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
        variant = _one(
            "batch", "--batch", str(batch), summary, None, work.with_context(work.context_tokens, batch)
        )
        made = _evaluated(spec, gpu, widest.num_gpus, variant, model, count)
        if made:
            return made
        batch -= 1
    return None


def _offload(spec: ModelSpec, work: Workload, model: EngineModel, gpu: GpuSpec, n: int) -> Suggestion | None:
    """llama.cpp: the most layers on the GPUs (-ngl) that fit; the rest run from system RAM."""
    layers = spec.num_hidden_layers + 1  # the output head counts as one layer
    lo, hi = 0, min(work.engine.n_gpu_layers or layers, layers) - 1
    while lo < hi:  # the largest count that fits
        mid = (lo + hi + 1) // 2
        fits = model.evaluate(spec, gpu, n, replace(work, engine=replace(work.engine, n_gpu_layers=mid))).fits
        lo, hi = (mid, hi) if fits else (lo, mid - 1)
    if lo < 1:
        return None
    fewer = replace(work, engine=replace(work.engine, n_gpu_layers=lo))
    host = model.evaluate(spec, gpu, n, fewer).host_bytes or 0
    note = (
        f"the other layers run from system RAM ({host / GIB:.1f} GiB), at the host's bandwidth: much slower"
    )
    return _evaluated(
        spec,
        gpu,
        n,
        _one("offload", "--n-gpu-layers", str(lo), f"{lo} of {layers} layers", note, fewer),
        model,
        n,
    )


def _one(lever: str, flag: str, value: str, summary: str, note: str | None, work: Workload) -> _Variant:
    """A variant that changes one flag."""
    return _Variant(lever, (Change(flag, value),), summary, note, work)


def _variants(spec: ModelSpec, work: Workload, model: EngineModel, gpu: GpuSpec) -> list[_Variant]:
    """Quantized weights and an FP8 KV cache, where the engine and the checkpoint allow them."""
    out: list[_Variant] = []
    name = {"vllm": "vLLM", "sglang": "SGLang"}.get(model.name, model.name)
    if model.name in ("vllm", "sglang") and work.stored_layers is None:
        linear = work.weights.linear_bytes
        if linear > 1.5 and gpu.supports_bf16:  # vLLM's FP8 kernels need compute capability 8.0+
            note = f"{name} quantizes the weights to FP8 while loading; no new checkpoint"
            out.append(
                _one("fp8", "--quantization", "fp8", "FP8 weights", note, _with_weights(spec, work, "fp8"))
            )
        if linear > 0.75:
            note = (
                "needs a pre-quantized int4 checkpoint (AWQ or GPTQ, e.g. an '-AWQ' repository), or "
                f"--quantization bitsandbytes for {name} to quantize to 4 bits while loading"
            )
            out.append(
                _one("int4", "--dtype", "int4", "int4 weights", note, _with_weights(spec, work, "int4"))
            )
    if work.kv_cache_dtype != "fp8" and work.kv_bytes > 1:
        kv_note = "llama.cpp: -ctk q8_0 -ctv q8_0" if model.name == "llamacpp" else None
        fp8_kv = replace(work, kv_cache_dtype="fp8", kv_bytes=DTYPE_BYTES["fp8"])
        if model.name != "llamacpp" or llamacpp.refusal(fp8_kv) is None:  # q8_0 V needs -fa on
            out.append(_one("kv", "--kv-cache-dtype", "fp8", "FP8 KV cache", kv_note, fp8_kv))
    return out


def _settings(work: Workload, gpu: GpuSpec) -> list[_Variant]:
    """vLLM settings that leave the KV cache more room: fewer sequences per step (its sampler and
    CUDA-graph reservations scale with them), a higher memory utilization."""
    out: list[_Variant] = []
    seqs = scheduler_limits(gpu, work).max_num_seqs
    note = scheduler_note(gpu, work)
    for value in _halvings(seqs, max(work.batch, MIN_SEQS)):
        fewer = replace(work, engine=replace(work.engine, max_num_seqs=value))
        out.append(
            _one("seqs", "--max-num-seqs", str(value), f"at most {value} sequences per step", note, fewer)
        )
    if utilization(work) < HIGH_UTILIZATION:
        higher = replace(work, engine=replace(work.engine, gpu_memory_utilization=HIGH_UTILIZATION))
        summary = f"memory utilization {HIGH_UTILIZATION}"
        out.append(
            _one("utilization", "--gpu-memory-utilization", f"{HIGH_UTILIZATION}", summary, None, higher)
        )
    return out


def _halvings(value: int, floor: int) -> list[int]:
    out, v = [], value // 2
    while v >= floor:
        out.append(v)
        v //= 2
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
    flag = _CONTEXT_FLAG.get(model.name, "--ctx")
    for _ in range(4):  # the scheduler clamps with the context: step down until the engine agrees
        if ctx <= 0 or ctx >= work.context_tokens:
            return None
        summary = f"context {ctx:,} tokens (the largest that fits)"
        variant = _one("context", flag, str(ctx), summary, None, work.with_context(ctx))
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
    return _cheapest(found, OTHER_GPU_TYPES)


def _last_resort(spec: ModelSpec, work: Workload, model: EngineModel, scope: Scope) -> list[Suggestion]:
    """When no single lever fits in one server: int4 weights with an FP8 KV cache, and (vLLM) the
    model as it is over several servers (TP=8 x PP=N)."""
    out: list[Suggestion] = []
    counts = [n for n in TP_SIZES if (scope.count or 1) <= n <= scope.max_count]
    asked = {g.name for g in scope.gpus}
    for gpu in (*scope.gpus, *(g for g in scope.others if g.name not in asked)):
        other = () if gpu.name in asked else (Change("--gpu", gpu.name),)
        if model.name in ("vllm", "sglang") and work.weights.linear_bytes > 0.75:
            both = replace(
                _with_weights(spec, work, "int4"), kv_cache_dtype="fp8", kv_bytes=DTYPE_BYTES["fp8"]
            )
            changes = (*other, Change("--dtype", "int4"), Change("--kv-cache-dtype", "fp8"))
            note = "needs a pre-quantized int4 checkpoint (AWQ or GPTQ)"
            variant = _Variant("int4", changes, "int4 weights and FP8 KV cache", note, both)
            out += _first_fit(spec, gpu, counts, variant, model, scope.count)
        if model.name == "vllm" and scope.max_count == 8:
            out += _nodes(spec, work, gpu, other)
    return out


def _nodes(spec: ModelSpec, work: Workload, gpu: GpuSpec, other: tuple[Change, ...]) -> list[Suggestion]:
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
    for n in counts:
        made = _evaluated(spec, gpu, n, variant, model, asked)
        if made:
            return [made]
    return []


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
        changes += (Change(_COUNT_FLAG.get(model.name, "--gpus"), str(n)),)
    return _suggestion(c, replace(variant, changes=changes), gpu)


def _thin(c: Candidate, work: Workload, model: EngineModel) -> bool:
    """A paged-KV plan that holds the requests by less than the model's error on public start-up logs
    (THIN_MARGIN): the plan itself keeps it with a warning, a suggestion does not."""
    if model.name not in ("vllm", "sglang") or c.max_concurrency is None:
        return False
    return c.max_concurrency < work.batch * (1 + THIN_MARGIN)


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


def _order(s: Suggestion) -> tuple[bool, float, int, int, int]:
    price = s.usd_per_hour
    return (price is None, price or 0.0, s.num_gpus, s.memory_bytes, _LEVERS.index(s.lever))


def _cheapest(found: Sequence[Suggestion], limit: int) -> list[Suggestion]:
    return sorted(found, key=_order)[:limit]


def _best_per_lever(found: list[Suggestion], per_gpu: bool) -> list[Suggestion]:
    """One suggestion per lever (and GPU type, when one type was asked for), the cheapest."""
    best: dict[tuple[str, str], Suggestion] = {}
    for s in sorted(found, key=_order):
        key = (s.lever, s.gpu if per_gpu or s.lever == "gpu" else "")
        best.setdefault(key, s)
    return list(best.values())


def _undominated(found: list[Suggestion]) -> list[Suggestion]:
    """Drop a lever that needs at least as many GPUs as adding GPUs alone does (two changes where
    one is enough)."""
    more = {s.gpu: s.num_gpus for s in found if s.lever == "gpus"}
    return [s for s in found if s.lever == "gpus" or s.num_gpus < more.get(s.gpu, 1 << 30)]


def _with_weights(spec: ModelSpec, work: Workload, dtype: str) -> Workload:
    return replace(work, requested_dtype=dtype, weights=weight_format(spec, dtype), checkpoint_warning=None)
