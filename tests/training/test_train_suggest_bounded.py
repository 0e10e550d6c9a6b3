"""The bounded suggestion search (training/suggest.py through core/search.cheapest_first_fits)
gives the answer of the exhaustive one it replaced: every lever on every GPU type evaluated, then
ranked. `exhaustive` below is that search as it was (b749ff7), kept as the reference."""

from __future__ import annotations

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from gpusize.core.gpu import GpuSpec
from gpusize.core.levers import Change
from gpusize.core.search import undominated
from gpusize.core.spec import ModelSpec
from gpusize.core.suggest import OTHER_GPU_TYPES
from gpusize.dataclass import replace
from gpusize.sources.catalog import load_gpus
from gpusize.training import setup as ts
from gpusize.training import suggest as sg
from gpusize.training.plan import evaluate
from gpusize.training.suggest_variants import Variant, variants
from tests.helpers import catalog_spec


def exhaustive_on_gpu(
    spec: ModelSpec, setup: ts.TrainSetup, gpu: GpuSpec, count: int | None, max_count: int, batch_seq: bool
) -> list[sg.TrainSuggestion]:
    """`_on_gpu` as it was: every lever evaluated at its first fit."""
    low = count or 1
    out: list[sg.TrainSuggestion] = []
    sharded = setup if setup.sharding in ("zero3", "fsdp") else replace(setup, sharding="fsdp")
    more_changes = () if sharded is setup else (Change("--sharding", "fsdp"),)
    if count or setup.sharding in ("none", "ddp"):
        plain = Variant("gpus", more_changes, "more GPUs, sharded states", None, sharded)
        out += sg._first_fit(spec, gpu, sg._counts(setup, low + 1, max_count), plain, count)
    for variant in variants(setup):
        if variant.lever == "batch" and not batch_seq:
            continue
        one_gpu = variant.setup.sharding == "none" or variant.lever == "framework"
        counts = [low] if one_gpu else sg._counts(setup, low, max_count)
        out += sg._first_fit(spec, gpu, counts, variant, count)
    widest = evaluate(spec, setup, gpu, low) if batch_seq else None
    if widest and 0 < widest.max_seq_tokens < setup.seq_tokens:
        seq = widest.max_seq_tokens
        variant = Variant("seq", (Change("--seq", str(seq)),), f"sequences of {seq:,} tokens", None, setup)
        out += sg._first_fit(spec, gpu, [low], replace(variant, setup=replace(setup, seq_tokens=seq)), count)
    return undominated(out)


def exhaustive(
    spec: ModelSpec,
    setup: ts.TrainSetup,
    gpus: tuple[GpuSpec, ...],
    others: tuple[GpuSpec, ...] = (),
    count: int | None = None,
    max_count: int = 8,
) -> tuple[sg.TrainSuggestion, ...]:
    """`train_fixes` as it was: every GPU type's levers, every other type's first fit, then ranked."""
    found: list[sg.TrainSuggestion] = []
    for gpu in gpus:
        found += exhaustive_on_gpu(spec, setup, gpu, count, max_count, batch_seq=len(gpus) > 1)
    if len(gpus) == 1:
        asked = {g.name for g in gpus}
        others_found: list[sg.TrainSuggestion] = []
        for gpu in (g for g in others if g.name not in asked):
            variant = Variant("gpu", (Change("--gpu", gpu.name),), f"{gpu.name} instead", None, setup)
            others_found += sg._first_fit(spec, gpu, sg._counts(setup, 1, 8), variant, count)
        found += sg._RANKING.cheapest(others_found, OTHER_GPU_TYPES)
    if not found:
        found += sg._all_levers(spec, setup, gpus, others, count, max_count)
    best = sg._RANKING.best_per_lever(found, per_gpu=len(gpus) == 1)
    return tuple(sg._RANKING.cheapest(best, sg.MAX_TRAIN_SUGGESTIONS))


GPUS = load_gpus()
MODELS = [
    "Qwen3-8B",
    "Llama-3.1-8B",
    "Qwen3-30B-A3B",
    "Qwen3-32B",
    "Llama-3.3-70B",
    "Qwen3-1.7B",
    "gpt-oss-20b",
]
#: Jobs of the sample: (method, sequence, batch, sharding, GPU count or None, extra setup fields).
JOB = st.tuples(
    st.sampled_from(["full", "lora", "qlora"]),
    st.sampled_from([2048, 8192, 32768, 65536, 131072]),
    st.sampled_from([1, 1, 4, 8]),
    st.sampled_from(["fsdp", "fsdp", "zero2", "ddp", "none"]),
    st.sampled_from([None, None, 1, 2, 4]),
    st.sampled_from([{}, {"grad_ckpt": False}, {"optimizer": "adamw-8bit"}, {"expandable_segments": True}]),
)


def at(*names: str) -> list[int]:
    """Indexes of these GPU types in the catalog."""
    return [next(i for i, g in enumerate(GPUS) if g.name == name) for name in names]


def check(model: str, job: tuple, gpus: tuple[GpuSpec, ...]) -> None:  # type: ignore[type-arg]
    method, seq, batch, sharding, count, extra = job
    setup = ts.TrainSetup(method=method, seq_tokens=seq, batch=batch, sharding=sharding, **extra)
    spec = catalog_spec(model)
    assert sg.train_fixes(spec, setup, gpus, GPUS, count) == exhaustive(spec, setup, gpus, GPUS, count)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    model=st.sampled_from(MODELS),
    job=JOB,
    picked=st.lists(st.integers(0, len(GPUS) - 1), min_size=1, max_size=6, unique=True),
)
@example(model="Qwen3-8B", job=("full", 131072, 1, "fsdp", None, {}), picked=list(range(len(GPUS))))
@example(model="Qwen3-8B", job=("full", 131072, 1, "fsdp", 2, {}), picked=list(range(len(GPUS))))
@example(model="Qwen3-30B-A3B", job=("full", 32768, 1, "fsdp", None, {}), picked=list(range(len(GPUS))))
@example(model="Qwen3-8B", job=("full", 32768, 8, "fsdp", None, {}), picked=at("H100-SXM"))
@example(model="Llama-3.1-8B", job=("full", 32768, 1, "fsdp", None, {}), picked=at("RTX4090"))
@example(model="Qwen3-8B", job=("full", 131072, 1, "fsdp", None, {}), picked=at("H100-SXM", "L40S", "MI300X"))
@example(model="Llama-3.3-70B", job=("full", 32768, 1, "ddp", None, {}), picked=list(range(len(GPUS))))
@example(
    model="Qwen3-8B", job=("lora", 8192, 1, "fsdp", 1, {}), picked=at("RTX3090", "H100-SXM", "RTX3090Ti")
)
@example(model="Llama-3.3-70B", job=("qlora", 32768, 4, "fsdp", None, {}), picked=at("H100-SXM"))
def test_bounded_search_answers_as_the_exhaustive_one(model: str, job: tuple, picked: list[int]) -> None:  # type: ignore[type-arg]
    check(model, job, tuple(GPUS[i] for i in picked))
