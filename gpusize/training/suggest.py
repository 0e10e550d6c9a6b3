"""Fix suggestions for a training job that does not fit (pure): the nearest jobs that do.

Each suggestion changes one lever the job has not pulled yet (activation checkpointing, a smaller
micro-batch with the same effective batch, bf16 instead of bf16-mixed, 8-bit AdamW, optimizer
offload, more GPUs with sharded states, LoRA or QLoRA, a shorter sequence, another GPU type), and
is evaluated by the same peak-memory model as the plan; only those that fit are returned, cheapest
first (the catalog's price per hour for all the GPUs where priced, else fewer GPUs, then less
memory; among equals the least intrusive lever).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import field
from typing import NamedTuple

from gpusize.core.gpu import GpuSpec
from gpusize.core.levers import Change
from gpusize.core.plan import TP_SIZES
from gpusize.core.search import Ranking, Slot, cheapest_first_fits, first_fit, undominated
from gpusize.core.spec import ModelSpec
from gpusize.core.suggest import OTHER_GPU_TYPES
from gpusize.dataclass import dataclass, replace
from gpusize.training.plan import TrainCandidate, evaluate, fits
from gpusize.training.setup import TrainSetup
from gpusize.training.suggest_variants import Variant, fsdp, pulled, variants

__all__ = ["MAX_TRAIN_SUGGESTIONS", "TrainSuggestion", "train_fixes"]

#: Most suggestions returned (cheapest first).
MAX_TRAIN_SUGGESTIONS = 8
#: Levers from least to most intrusive (ties of price and GPU count), ranked as `fit`'s (core/search.py).
_RANKING = Ranking(
    (
        "grad_ckpt",
        "batch",
        "precision",
        "optimizer",
        "framework",
        "offload",
        "gpus",
        "lora",
        "qlora",
        "seq",
        "gpu",
    )
)


@dataclass(frozen=True, kw_only=True)
class TrainSuggestion:
    """A job that fits: the flags that change, and its plan (evaluated, not guessed)."""

    changes: tuple[Change, ...]
    summary: str
    note: str | None
    gpu: str
    gpu_full_name: str
    num_gpus: int
    sharding: str
    fits: bool
    per_gpu_bytes: int
    max_seq_tokens: int
    usd_per_hour: float | None
    lever: str = field(metadata={"json": False})
    memory_bytes: int = field(default=0, metadata={"json": False})


def train_fixes(
    spec: ModelSpec,
    setup: TrainSetup,
    gpus: tuple[GpuSpec, ...],
    others: tuple[GpuSpec, ...] = (),
    count: int | None = None,
    max_count: int = 8,
) -> tuple[TrainSuggestion, ...]:
    """The nearest jobs that fit, cheapest first: each lever on the GPU types asked about (at the
    fewest GPUs it needs, from the user's count), and the cheapest other GPU types.

    Only what the answer keeps is searched for (core/search.cheapest_first_fits): with several GPU
    types asked about, each lever's cheapest first fit over them; with one, the OTHER_GPU_TYPES
    cheapest other types. The candidates are tried in ranking order, so those ranked after the
    answer are never evaluated (most of them need an allocator replay of their own): the same
    answer as evaluating every lever on every GPU type and ranking them all."""
    found: list[TrainSuggestion] = []
    if len(gpus) > 1:
        found += _cheapest_per_lever(spec, setup, gpus, count, max_count)
    elif gpus:
        found += _on_gpu(spec, setup, gpus[0], count, max_count, batch_seq=False)
        found += _cheapest_others(spec, setup, gpus[0], others, count)
    if not found:
        found += _all_levers(spec, setup, gpus, others, count, max_count)
    best = _RANKING.best_per_lever(found, per_gpu=len(gpus) == 1)
    return tuple(_RANKING.cheapest(best, MAX_TRAIN_SUGGESTIONS))


def _cheapest_others(
    spec: ModelSpec, setup: TrainSetup, asked: GpuSpec, others: tuple[GpuSpec, ...], count: int | None
) -> list[TrainSuggestion]:
    """The OTHER_GPU_TYPES cheapest other GPU types that run the job, each at the fewest GPUs."""
    rest = [g for g in others if g.name != asked.name]
    instead = [Variant("gpu", (Change("--gpu", g.name),), f"{g.name} instead", None, setup) for g in rest]
    options = [_slots(g, "gpu", _counts(setup, 1, 8)) for g in rest]
    return cheapest_first_fits(
        _RANKING,
        options,
        lambda i, slot: _made(spec, rest[i], slot.num_gpus, instead[i], count),
        OTHER_GPU_TYPES,
    )


def _counts(setup: TrainSetup, low: int, high: int) -> list[int]:
    return [n for n in TP_SIZES if low <= n <= high]


def _slots(gpu: GpuSpec, lever: str, counts: list[int]) -> list[Slot]:
    """The ranking places of `lever` on `gpu` at each count, before any is evaluated."""
    return [Slot(lever, gpu.name, n, gpu.visible_bytes * n, gpu.price_for(n)) for n in counts]


class _Option(NamedTuple):
    """One lever on one GPU type: the GPU counts to try (fewest first) and the variant, made on first
    use (the sequence lever's needs an evaluation of the job on that GPU type)."""

    lever: str
    counts: list[int]
    variant: Callable[[], Variant | None]


def _given(variant: Variant) -> Callable[[], Variant | None]:
    return lambda: variant


def _options(
    spec: ModelSpec, setup: TrainSetup, gpu: GpuSpec, count: int | None, max_count: int, batch_seq: bool
) -> list[_Option]:
    """Each lever on this GPU type: more GPUs with sharded states (when the plan did not try them),
    each of `variants`, and with `batch_seq` a shorter sequence (the longest the searches find on
    `count` GPUs of this type); the micro-batch and the sequence only with `batch_seq` (one GPU type
    asked: the plan's own suggestion covers them, replay-checked)."""
    low = count or 1
    out: list[_Option] = []
    sharded = setup if setup.sharding in ("zero3", "fsdp") else replace(setup, sharding="fsdp")
    more_changes = () if sharded is setup else (Change("--sharding", "fsdp"),)
    if count or setup.sharding in ("none", "ddp"):  # without a fixed count the plan tried them all
        plain = Variant("gpus", more_changes, "more GPUs, sharded states", None, sharded)
        out.append(_Option("gpus", _counts(setup, low + 1, max_count), _given(plain)))
    for variant in variants(setup):
        if variant.lever == "batch" and not batch_seq:
            continue
        one_gpu = variant.setup.sharding == "none" or variant.lever == "framework"  # Unsloth: one GPU
        counts = [low] if one_gpu else _counts(setup, low, max_count)
        out.append(_Option(variant.lever, counts, _given(variant)))
    if batch_seq:
        out.append(_Option("seq", [low], lambda: _shorter(spec, setup, gpu, low)))
    return out


def _shorter(spec: ModelSpec, setup: TrainSetup, gpu: GpuSpec, low: int) -> Variant | None:
    """The longest sequence the searches find for the job on `low` GPUs of this type, when shorter."""
    seq = evaluate(spec, setup, gpu, low).max_seq_tokens
    if not 0 < seq < setup.seq_tokens:
        return None
    changes = (Change("--seq", str(seq)),)
    return Variant("seq", changes, f"sequences of {seq:,} tokens", None, replace(setup, seq_tokens=seq))


def _on_gpu(
    spec: ModelSpec, setup: TrainSetup, gpu: GpuSpec, count: int | None, max_count: int, batch_seq: bool
) -> list[TrainSuggestion]:
    """Each lever on this GPU type at the fewest GPUs it needs (`_options`), undominated."""
    out: list[TrainSuggestion] = []
    for option in _options(spec, setup, gpu, count, max_count, batch_seq):
        variant = option.variant()
        if variant is not None:
            out += _first_fit(spec, gpu, option.counts, variant, count)
    return undominated(out)


def _cheapest_per_lever(
    spec: ModelSpec, setup: TrainSetup, gpus: tuple[GpuSpec, ...], count: int | None, max_count: int
) -> list[TrainSuggestion]:
    """`_on_gpu` over every GPU type, cut to the cheapest suggestion of each lever (what
    `best_per_lever` keeps of it), searched lever by lever in ranking order: a lever's first fit on a
    GPU type is dropped, as `undominated` drops it, when adding GPUs alone fits on that type with no
    more GPUs."""
    per_gpu = [_options(spec, setup, gpu, count, max_count, batch_seq=True) for gpu in gpus]
    made_variants: dict[tuple[int, int], Variant | None] = {}
    made: dict[tuple[int, int, int], TrainSuggestion | None] = {}

    def tried(j: int, i: int, n: int) -> TrainSuggestion | None:
        """Lever j on GPU type i at n GPUs, each evaluated once (the dominance test asks again)."""
        if (j, i) not in made_variants:
            made_variants[j, i] = per_gpu[i][j].variant()
        variant = made_variants[j, i]
        if variant is not None and (j, i, n) not in made:
            made[j, i, n] = _made(spec, gpus[i], n, variant, count)
        return made.get((j, i, n))

    # the levers are the same on every GPU type (they depend on the job only)
    more = next((j for j, option in enumerate(per_gpu[0]) if option.lever == "gpus"), None)

    def kept(i: int, s: TrainSuggestion) -> bool:
        if s.lever == "gpus" or more is None:
            return True
        fewer = [n for n in per_gpu[i][more].counts if n <= s.num_gpus]
        return not first_fit(fewer, lambda n: tried(more, i, n))

    def lever(j: int) -> Callable[[int, Slot], TrainSuggestion | None]:
        return lambda i, slot: tried(j, i, slot.num_gpus)

    found: list[TrainSuggestion] = []
    for j, option in enumerate(per_gpu[0]):
        slots = [_slots(gpu, option.lever, per_gpu[i][j].counts) for i, gpu in enumerate(gpus)]
        found += cheapest_first_fits(_RANKING, slots, lever(j), 1, kept)
    return found


def _all_levers(
    spec: ModelSpec,
    setup: TrainSetup,
    gpus: tuple[GpuSpec, ...],
    others: tuple[GpuSpec, ...],
    count: int | None,
    max_count: int,
) -> list[TrainSuggestion]:
    """When no single lever fits: levers added one at a time (QLoRA, micro-batch 1, checkpointing,
    optimizer offload, 8-bit AdamW) until the job fits, on the GPU types asked about and the others;
    with every one pulled, the sequence cut to what fits."""
    order = ("qlora", "batch", "grad_ckpt", "offload", "optimizer")  # Unsloth: alone, on one GPU
    levers = sorted((v for v in variants(setup) if v.lever in order), key=lambda v: order.index(v.lever))
    steps: list[Variant] = []
    job, changes = (setup, ()) if setup.sharding not in ("none", "ddp") else fsdp(setup)
    for lever in levers:
        job = pulled(job, lever.lever, lever.setup)
        changes = (*changes, *lever.changes)
        steps.append(
            Variant("qlora", changes, " + ".join(v.summary for v in levers[: len(steps) + 1]), None, job)
        )
    asked = {g.name for g in gpus}
    found: list[TrainSuggestion] = []
    for gpu in (*gpus, *(g for g in others if g.name not in asked)):
        other = () if gpu.name in asked else (Change("--gpu", gpu.name),)
        counts = _counts(job, count or 1, max_count if gpu.name in asked else 8)
        for step in steps:
            made = _first_fit(spec, gpu, counts, replace(step, changes=(*other, *step.changes)), count)
            if made:
                found += made
                break
    if found or not steps:
        return _RANKING.cheapest(found, OTHER_GPU_TYPES)
    light = next((st for st in steps if "micro-batch" in st.summary), steps[0])  # cut the sequence
    for gpu in gpus:
        top = _counts(light.setup, count or 1, max_count)[-1]
        seq = evaluate(spec, light.setup, gpu, top).max_seq_tokens
        if 0 < seq < setup.seq_tokens:
            cut = replace(
                light,
                changes=(*light.changes, Change("--seq", str(seq))),
                summary=f"{light.summary} + sequences of {seq:,} tokens",
                setup=replace(light.setup, seq_tokens=seq),
            )
            found += _first_fit(spec, gpu, [top], cut, count)
    return found


def _first_fit(
    spec: ModelSpec, gpu: GpuSpec, counts: list[int], variant: Variant, asked: int | None
) -> list[TrainSuggestion]:
    return first_fit(counts, lambda n: _made(spec, gpu, n, variant, asked))


def _made(
    spec: ModelSpec, gpu: GpuSpec, n: int, variant: Variant, asked: int | None
) -> TrainSuggestion | None:
    job = variant.setup
    if n > 1 and job.sharding == "none":
        return None
    if not fits(spec, job, gpu, n):  # the fit test alone, before the searches of a full evaluation
        return None
    c = evaluate(spec, job, gpu, n)
    return _suggestion(c, variant, gpu, n, asked) if c.fits else None


def _suggestion(
    c: TrainCandidate, variant: Variant, gpu: GpuSpec, n: int, asked: int | None
) -> TrainSuggestion:
    changes = variant.changes
    if (asked is None and n > 1) or (asked is not None and n != asked):
        changes += (Change("--gpus", str(n)),)
    where = f"{n}x {gpu.name}"
    summary = {"gpu": f"{where} instead", "gpus": f"{where}, sharded states"}.get(
        variant.lever, f"{variant.summary} on {where}"
    )
    return TrainSuggestion(
        changes=changes,
        summary=summary,
        note=variant.note,
        gpu=c.gpu,
        gpu_full_name=c.gpu_full_name,
        num_gpus=n,
        sharding=c.sharding,
        fits=c.fits,
        per_gpu_bytes=c.per_gpu.device_bytes,
        max_seq_tokens=c.max_seq_tokens,
        usd_per_hour=c.usd_per_hour,
        lever=variant.lever,
        memory_bytes=gpu.visible_bytes * n,
    )
