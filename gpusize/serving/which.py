"""Reverse query (pure): every model of a catalog that fits given hardware, most capable (or fastest)
first (the stated rules in `SORTS`, which `rank` applies), each on all the GPUs the person has, in
its own weights or, when those do not fit, in a quantized build (FP8 or int4) with the launch flag it needs.

A model is planned the way `fit MODEL --gpus N` plans it: tensor parallel across all N GPUs, so the
two commands give the same split and the same KV pool; where TP=N is not a valid split of the model,
the largest valid one that fits, run as N / TP replicas. A cheap lower bound (the linear weights alone
against the GPUs' whole memory) skips the full plan of a build that cannot fit.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Sequence
from dataclasses import field
from itertools import chain
from typing import Any, Literal

from gpusize.core.engines import EngineModel, engine, on_gpu, prepare
from gpusize.core.gpu import GpuSpec
from gpusize.core.levers import Change
from gpusize.core.model import ParsedCatalogModel
from gpusize.core.plan import TP_SIZES, Candidate
from gpusize.core.spec import ModelSpec
from gpusize.core.weights import WeightFormat, linear_bytes_per_gpu, weight_format
from gpusize.core.workload import Request, Workload
from gpusize.dataclass import dataclass, replace
from gpusize.errors import ConfigError, InputError
from gpusize.serving import load, throughput
from gpusize.units import GIB

__all__ = [
    "GENERATION_MONTHS",
    "SORTS",
    "CatalogEntry",
    "Entry",
    "ModelFit",
    "Sort",
    "SortRule",
    "Speeds",
    "any_fits",
    "fit_one",
    "generation",
    "models_that_fit",
    "rank",
    "with_speeds",
]

Sort = Literal["capability", "speed"]

#: The width of one model generation in the capability order: releases in the same half-year
#: (January-June, July-December) are one generation, ranked by size within it. A judgement, stated
#: with the ranking: a newer generation of a model line beats an older one of the same size (Qwen3-8B
#: over Qwen2.5-7B on the vendors' own benchmark tables), and six months is about the gap between
#: two releases of the lines in the catalog.
GENERATION_MONTHS = 6


def generation(released: str | None) -> int | None:
    """The generation of a `YYYY-MM` release month (half-years since year 0), None when undated."""
    if not released:
        return None
    year, month = released.split("-")
    return (int(year) * 12 + int(month) - 1) // GENERATION_MONTHS


@dataclass(frozen=True)
class SortRule:
    """One ordering of the fitting models: its key (smallest first) and the rule in words, printed
    under the table and in the JSON assumptions."""

    key: Callable[[ModelFit], tuple[Any, ...]]
    rule: str


def _capability(r: ModelFit) -> tuple[Any, ...]:
    gen = generation(r.released)
    return (gen is None, -(gen or 0), -r.params_total, -r.params_active, r.name)


#: The orderings `which --sort` offers. The one place the ranking is declared: `rank` applies it, and
#: every caller (the report, an index of the catalog) goes through `rank`.
SORTS: dict[Sort, SortRule] = {
    "capability": SortRule(
        _capability,
        "newest generation first (the catalog's release month, by half-year), then most total, then "
        "active, parameters; models with no release date in the catalog after the dated ones",
    ),
    "speed": SortRule(
        lambda r: (-(r.tokens_per_s or 0), r.name), "fastest single-sequence decode first (estimate)"
    ),
}

#: The quantized builds tried when a model's own weights do not fit (and --dtype is auto): the flag
#: each needs, and what it takes.
QUANTIZED_BUILDS: tuple[tuple[str, Change, str], ...] = (
    ("fp8", Change("--quantization", "fp8"), "quantized to FP8 while loading"),
    ("int4", Change("--dtype", "int4"), "needs a pre-quantized int4 checkpoint (AWQ or GPTQ)"),
)


@dataclass(frozen=True)
class CatalogEntry:
    """A catalog model as `which` reads it."""

    name: str
    hf_id: str
    config: dict[str, Any] = field(compare=False)
    family: str | None = None
    #: The release month, `YYYY-MM` (the catalog's `released`), None when the catalog has none.
    released: str | None = None
    #: `parse_config(config)`, where the catalog holds it parsed (`CatalogModel.spec`); None: parsed here.
    spec: ModelSpec | None = field(default=None, compare=False, repr=False)


#: What `which` plans: an entry made for it, or a catalog model read parsed as it is (the same
#: names, config, release month and spec: 10,000 entries copied from a user catalog's models were a
#: tenth of `which --quiet` over them).
Entry = CatalogEntry | ParsedCatalogModel


@dataclass(frozen=True, kw_only=True)
class ModelFit:
    """One model's row in `which`: its names, parameters and how it runs on the GPUs asked for."""

    name: str
    hf_id: str
    family: str | None
    #: The release month, `YYYY-MM`, from the catalog (None: undated; ranked after the dated ones).
    released: str | None = None
    params_total: int
    params_active: int
    fits: bool
    #: The weights the plan runs: the checkpoint's own, or a quantized build (fp8, int4).
    weight_dtype: str | None = None
    #: The flags a quantized build needs (empty for the model's own weights).
    changes: tuple[Change, ...] = ()
    #: Engines of `tensor_parallel` GPUs each (1 when TP spans every GPU).
    replicas: int | None = None
    tensor_parallel: int | None = None
    headroom_bytes: int | None = None
    max_concurrency: float | None = None
    kv_cache_capacity_tokens: int | None = None  # per engine, as `fit --gpus N` reports it
    tokens_per_s: float | None = None  # one sequence at half the context, estimate (calibrated model)
    #: Its range (`speed_range`: single-sequence decode of the engine, dense or MoE, out of sample by
    #: source); None where not calibrated.
    tokens_per_s_low: float | None = None
    tokens_per_s_high: float | None = None
    speed_range: load.SpeedRange | None = field(default=None, metadata={"sheet": False})
    #: Fits one sequence by less than the engine's error (core/plan.thin_margin, the rule of fit,
    #: serve and quote): the yes stands, the next size up is the safe choice.
    thin_margin: bool = False
    #: Why it does not fit, in a few words (on every GPU, with the most compact build tried).
    reason: str | None = None
    #: How far from fitting: bytes needed per GPU / bytes usable (the nearest misses first).
    shortfall: float = field(default=0.0, metadata={"json": False})
    #: The speed estimate not yet made (planned with `speeds=False`): (tokens_per_s, low, high) when
    #: called; `with_speeds` fills those fields with it. None when they are filled (or no speed is
    #: estimated: a miss). Not part of the value: equal rows stay equal, and no output shows it.
    pending_speed: Callable[[], Speeds] | None = field(
        default=None, compare=False, repr=False, metadata={"json": False, "sheet": False}
    )


#: A fitting row's single-sequence decode estimate and its range: (tokens_per_s, low, high).
Speeds = tuple[float | None, float | None, float | None]


def fit_one(
    entry: Entry, gpu: GpuSpec, num_gpus: int, request: Request, quantized: bool = True, speeds: bool = True
) -> ModelFit:
    """One catalog model on all `num_gpus` GPUs, in its own weights and then (with `quantized` and
    --dtype auto) in its FP8 and int4 builds; a config that cannot be read is a row with its reason.
    Without `speeds`, a fitting row's speed estimate is left to `with_speeds` (`ModelFit.pending_speed`)."""
    model = engine(request.engine.name)
    try:
        spec = entry.spec or _parsed(entry.config)
    except ConfigError as exc:
        return _row(entry, None, fits=False, reason=str(exc))
    try:
        work = prepare(spec, request)
    except InputError as exc:  # the engine refuses this context (or a setting) for this model
        longest = spec.max_context or spec.max_position_embeddings
        beyond = longest and request.context_tokens > longest
        reason = f"its maximum context is {longest:,} tokens" if beyond else str(exc)
        return _row(entry, spec, fits=False, reason=reason, shortfall=float("inf"))
    builds: Iterator[_Build] = iter([(work.weights, lambda: work, ())])
    own = spec.quantization is None  # a pre-quantized checkpoint is itself a build of its base model
    if quantized and own and request.dtype == "auto" and model.quantizes_on_load:
        builds = chain(builds, _builds(spec, request, work, gpu))  # prepared only when reached
    miss: tuple[str, float] = ("", 0.0)
    offload = int((request.engine.cpu_offload_gb or 0) * GIB)
    for weights, made, changes in builds:
        per_gpu = linear_bytes_per_gpu(spec, weights, num_gpus)  # once for the bound, ratio and reason
        if _weights_exceed(per_gpu, gpu, offload):  # before preparing: most miss here
            miss = (_weights_reason(weights, per_gpu, gpu), per_gpu / gpu.visible_bytes)
            continue
        build = on_gpu(spec, gpu, made())  # the KV dtype the engine's auto picks on this GPU
        best, replicas = _layout(spec, gpu, num_gpus, build, model)
        if best.fits and best.per_gpu is not None:
            return _fitting(entry, spec, gpu, build, best, replicas, changes, speeds)
        miss = (_short_reason(best, build), _need_ratio(best))
    return _row(entry, spec, fits=False, reason=miss[0], shortfall=miss[1])


def _parsed(config: dict[str, Any]) -> ModelSpec:
    from gpusize.core.parse import parse_config  # start-up: a catalog read parsed has every spec

    return parse_config(config)


def models_that_fit(
    entries: Sequence[Entry],
    gpu: GpuSpec,
    num_gpus: int,
    request: Request,
    sort: Sort = "capability",
    speeds: bool = True,
) -> list[ModelFit]:
    """Every entry planned, ranked by `rank`. Entries with the same config (fine-tunes of one base,
    copies under other names) are planned once: a row depends on its entry only through the config
    and the names `_row` copies (`_named`). Without `speeds` the fitting rows' speed estimates are
    left to `with_speeds` (a table too narrow for its tok/s column never shows them: the estimate was
    a tenth of `which` over the catalog, bench/RESULTS.md issue 24); the speed order needs them."""
    speeds = speeds or sort == "speed"
    planned: dict[object, ModelFit] = {}
    rows: list[ModelFit] = []
    for e in entries:
        # The same parsed spec (a catalog parses equal configs once), else equal configs: repr of JSON
        # values (str, numbers, bools, None, lists, dicts) is equal for equal configs.
        key = id(e.spec) if e.spec is not None else repr(e.config)
        known = planned.get(key)
        if known is None:
            rows.append(planned.setdefault(key, fit_one(e, gpu, num_gpus, request, speeds=speeds)))
        else:
            rows.append(_named(known, e))
    return rank(rows, sort)


def any_fits(
    entries: Sequence[Entry], gpu: GpuSpec, num_gpus: int, request: Request
) -> tuple[bool, list[ModelFit]]:
    """What `which --quiet` answers, planning as few entries as it can: whether `models_that_fit`
    would list a model that fits, and its rows without parameters (the configs that cannot be read:
    the skipped warnings), in its order. The specs are planned smallest first and only until one
    fits (most queries fit the smallest model: one plan), each once (its rows differ only in names);
    an entry without one (a config to parse, or that does not parse) or whose spec has no parameters
    (a row `which` names among the skipped, under each of its names) is planned as `models_that_fit`
    plans it."""
    specs = {id(e.spec): e for e in reversed(entries) if e.spec is not None}  # the first entry of each
    empty = {key for key, e in specs.items() if e.spec and e.spec.params.total == 0}
    unparsed = [fit_one(e, gpu, num_gpus, request) for e in entries if e.spec is None or id(e.spec) in empty]
    planned = (e for key, e in sorted(specs.items(), key=_size) if key not in empty)
    fits = any(r.fits for r in unparsed) or any(fit_one(e, gpu, num_gpus, request).fits for e in planned)
    return fits, rank([r for r in unparsed if r.params_total == 0])


def _size(item: tuple[int, Entry]) -> int:
    """An entry's parameters: the fewest are the likeliest to fit."""
    spec = item[1].spec
    return spec.params.total if spec else 0


def _named(row: ModelFit, entry: Entry) -> ModelFit:
    """`row` (planned for another entry of the same config) as this entry's: the fields of `_row`
    that come from the entry rather than from the config (gpusize.dataclass.replace: 10,000 copies
    of one row took 0.1 s with the standard library's)."""
    named: ModelFit = replace(
        row, name=entry.name, hf_id=entry.hf_id, family=entry.family, released=entry.released
    )
    return named


def with_speeds(rows: Sequence[ModelFit], first: int | None = None) -> list[ModelFit]:
    """The rows with their pending speed estimates made (`ModelFit.pending_speed`), or those of the
    `first` N rows that have one: each estimate once, also where rows of one config share it; a row
    without one (or past the first N) as it is."""
    made: dict[int, Speeds] = {}
    done: list[ModelFit] = []
    left = len(rows) if first is None else first
    for r in rows:
        if r.pending_speed is None or left <= 0:
            done.append(r)
            continue
        left -= 1
        key = id(r.pending_speed)
        if key not in made:
            made[key] = r.pending_speed()
        tokens, low, high = made[key]
        done.append(
            replace(r, tokens_per_s=tokens, tokens_per_s_low=low, tokens_per_s_high=high, pending_speed=None)
        )
    return done


def rank(rows: list[ModelFit], sort: Sort = "capability") -> list[ModelFit]:
    """Fitting models first, in the order of `SORTS[sort]`; then the rest, nearest misses first."""
    fitting = sorted((r for r in rows if r.fits), key=SORTS[sort].key)
    misses = sorted((r for r in rows if not r.fits), key=lambda r: (r.shortfall or float("inf"), r.name))
    return fitting + misses


# --------------------------------------------------------------------------- builds and layouts


#: A build `which` tries: its weights, the workload that runs them (prepared when called) and the
#: flags it needs.
_Build = tuple[WeightFormat, Callable[[], Workload], tuple[Change, ...]]


def _builds(spec: ModelSpec, request: Request, work: Workload, gpu: GpuSpec) -> Iterator[_Build]:
    """The FP8 and int4 builds smaller than the checkpoint (FP8 needs compute capability 8.0+), each
    tried when the one before it did not fit (most models fit in their own weights or not at all),
    and prepared only when its weights pass the bound: they are what `prepare` resolves for a
    request of that dtype (`weight_format`; `which` states no checkpoint bytes)."""
    for dtype, change, _ in QUANTIZED_BUILDS:
        smaller = work.weights.linear_bytes > (1.5 if dtype == "fp8" else 0.75)
        if smaller and (dtype != "fp8" or gpu.supports_bf16):
            asked = replace(request, dtype=dtype)
            yield weight_format(spec, dtype), functools.partial(prepare, spec, asked), (change,)


def _layout(
    spec: ModelSpec, gpu: GpuSpec, num_gpus: int, work: Workload, model: EngineModel
) -> tuple[Candidate, int]:
    """TP across every GPU, as `fit --gpus N` plans; when that split is not valid, the largest valid
    TP that fits, as N / TP replicas."""
    whole = model.evaluate(spec, gpu, num_gpus, work)
    if whole.fits or whole.per_gpu is not None:
        return whole, 1
    for tp in sorted((t for t in TP_SIZES if t < num_gpus and num_gpus % t == 0), reverse=True):
        c = model.evaluate(spec, gpu, tp, work)
        if c.fits:
            return c, num_gpus // tp
    return whole, 1


def _fitting(
    entry: Entry,
    spec: ModelSpec,
    gpu: GpuSpec,
    work: Workload,
    best: Candidate,
    replicas: int,
    changes: tuple[Change, ...],
    speeds: bool = True,
) -> ModelFit:
    assert best.per_gpu is not None
    rng = load.speed_range(
        work.engine.name,
        gpu.vendor,
        load.speed_arch(spec, work, gpu),
        1,
        "decode",
        throughput.build_of(work.engine, gpu),
        load.architecture_family(gpu),
    )
    estimate = functools.partial(_speeds, spec, work, gpu, best, rng)
    tokens, low, high = estimate() if speeds else (None, None, None)
    return _row(
        entry,
        spec,
        True,
        weight_dtype=work.weight_dtype,
        changes=changes,
        replicas=replicas,
        tensor_parallel=best.tensor_parallel,
        headroom_bytes=best.per_gpu.headroom_bytes,
        max_concurrency=best.max_concurrency,
        kv_cache_capacity_tokens=best.kv_cache_capacity_tokens,
        tokens_per_s=tokens,
        tokens_per_s_low=low,
        tokens_per_s_high=high,
        speed_range=rng,
        thin_margin=best.thin_margin,
        pending_speed=None if speeds else estimate,
    )


def _speeds(spec: ModelSpec, work: Workload, gpu: GpuSpec, best: Candidate, rng: load.SpeedRange) -> Speeds:
    """One sequence's decode at half the context on the plan's GPUs (estimate), and its range."""
    placement = (
        throughput.LlamaCppPlacement(best.num_gpus) if engine(work.engine.name).splits_layers else None
    )
    speed = throughput.decode_step(
        spec, work, gpu, best.tensor_parallel, 1, work.context_tokens // 2, placement
    )
    tokens = speed.per_sequence_tokens_per_s if speed else None
    low, high = load.ranged(tokens, rng)
    return tokens, low, high


def _row(
    entry: Entry,
    spec: ModelSpec | None,
    fits: bool,
    reason: str | None = None,
    shortfall: float = 0.0,
    **plan: Any,
) -> ModelFit:
    """A row of `entry`: its names and sizes, and the `plan` fields a fitting row has (made once,
    not a row and then a replaced copy)."""
    return ModelFit(
        name=entry.name,
        hf_id=entry.hf_id,
        family=entry.family,
        released=entry.released,
        params_total=spec.params.total if spec else 0,
        params_active=spec.params.active if spec else 0,
        fits=fits,
        reason=reason,
        shortfall=shortfall,
        **plan,
    )


# --------------------------------------------------------------------------- why not


def _weights_exceed(per_gpu: float, gpu: GpuSpec, offload: int) -> bool:
    """The cheap lower bound: the linear weights alone split over the GPUs (`per_gpu`:
    `linear_bytes_per_gpu`), less the `offload` bytes --cpu-offload-gb may keep in CPU memory (at
    most that much per GPU: core/engines/vllm/pool.py `offloaded_bytes`, SGLang's alike), above a
    GPU's memory. It proves a miss, never a fit."""
    return per_gpu - offload > gpu.visible_bytes


def _weights_reason(weights: WeightFormat, per_gpu: float, gpu: GpuSpec) -> str:
    per = per_gpu / GIB
    return f"{weights.name} weights alone {per:,.1f} GiB per GPU, {gpu.visible_bytes / GIB:.1f} GiB on each"


def _need_ratio(c: Candidate) -> float:
    g = c.per_gpu
    return g.total_bytes / g.usable_bytes if g and g.usable_bytes else float("inf")


def _short_reason(c: Candidate, work: Workload) -> str:
    """A few words: the split or context problem, no room beside the weights, or the largest context."""
    g = c.per_gpu
    if g is None:
        return c.reason or "no valid split"
    fixed = g.weights_bytes + g.activations_bytes + g.overhead_bytes
    if fixed >= g.usable_bytes:
        return (
            f"{work.weight_dtype} weights + engine {fixed / GIB:.1f} GiB per GPU, budget "
            f"{g.usable_bytes / GIB:.1f} GiB"
        )
    if c.max_context_tokens:
        return f"{work.weight_dtype}: the largest context that fits is {c.max_context_tokens:,} tokens"
    return c.reason or "KV cache does not fit"
