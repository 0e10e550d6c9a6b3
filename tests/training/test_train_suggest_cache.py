"""The training searches reuse capacity-limited allocator replays across GPU types
(training/device.py): the suggestions and plans are identical to replaying every candidate."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from gpusize.core import allocator
from gpusize.core.spec import ModelSpec
from gpusize.sources.catalog import find_gpu, load_gpus
from gpusize.training import device
from gpusize.training import setup as ts
from gpusize.training.plan import evaluate
from gpusize.training.suggest import train_fixes
from tests.helpers import catalog_spec

#: A sample of models, methods and lengths whose suggestions search many GPU types near the limit.
SAMPLE = [
    ("Qwen3-8B", "full", 131072, ()),
    ("Qwen3-8B", "lora", 131072, ()),
    ("Llama-3.1-8B", "full", 32768, ("RTX4090",)),
    ("Qwen3-30B-A3B", "qlora", 65536, ("H100",)),
]


def answers(model: str, method: str, seq: int, gpus: tuple[str, ...]) -> object:
    spec, job = catalog_spec(model), ts.TrainSetup(method=method, seq_tokens=seq)
    asked = tuple(find_gpu(g) for g in gpus) or load_gpus()
    plans = [evaluate(spec, job, gpu, n) for gpu in asked[:2] for n in (1, 8)]
    return plans, train_fixes(spec, job, asked[:1], load_gpus())


@pytest.mark.parametrize(("model", "method", "seq", "gpus"), SAMPLE)
def test_cached_replays_give_the_answers_of_replaying_each(
    monkeypatch: pytest.MonkeyPatch, model: str, method: str, seq: int, gpus: tuple[str, ...]
) -> None:
    device._TIGHT.clear()
    device._probes.cache_clear()
    cached = answers(model, method, seq, gpus)
    replays = []

    def each(spec, setup, num_gpus, capacity=None):  # type: ignore[no-untyped-def]
        replays.append(capacity)
        sizes = device._step_sizes(spec, setup, num_gpus)
        trace = device.train_trace(spec, sizes)
        return allocator.replay(trace, expandable_segments=setup.expandable_segments, capacity=capacity)

    monkeypatch.setattr(device, "_replay", each)
    device._probes.cache_clear()  # the searches probe again, through the plain replays
    assert answers(model, method, seq, gpus) == cached
    assert replays  # the sample reaches the allocator replay


def always_tight(spec, setup, n, interconnect, visible):  # type: ignore[no-untyped-def]
    """train_memory as it was: a capacity-limited replay whenever the device figure is above the GPU."""
    setup = device.per_gpu_setup(setup, n)
    m = device.allocated_memory(spec, setup, n, interconnect)
    m = device.replace(m, fragmentation_bytes=device.fragmentation_bytes(spec, setup, n))
    if m.device_bytes > visible:
        tight = device.fragmentation_bytes(spec, setup, n, visible - m.overhead_bytes)
        if tight >= 0 and m.allocated_peak_bytes + tight + m.overhead_bytes <= visible:
            m = device.replace(m, fragmentation_bytes=tight)
    return m


@pytest.mark.parametrize(("model", "method", "seq", "gpus"), SAMPLE)
def test_no_tight_replay_under_an_allocated_peak_above_the_gpu(
    model: str, method: str, seq: int, gpus: tuple[str, ...]
) -> None:
    spec, job = catalog_spec(model), ts.TrainSetup(method=method, seq_tokens=seq)
    for gpu in load_gpus():
        for n in (1, 2, 8):
            got = device.train_memory(spec, job, n, gpu.interconnect, gpu.visible_bytes)
            assert got == always_tight(spec, job, n, gpu.interconnect, gpu.visible_bytes)


def test_a_job_above_the_gpu_on_its_allocated_peak_is_not_replayed_at_capacity(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    spec, job, gpu = catalog_spec("Qwen3-8B"), ts.TrainSetup(method="full", seq_tokens=131072), find_gpu("L4")
    capacities: list[int | None] = []
    plain = device._replay

    def counted(spec, setup, num_gpus, capacity=None):  # type: ignore[no-untyped-def]
        capacities.append(capacity)
        return plain(spec, setup, num_gpus, capacity)

    monkeypatch.setattr(device, "_replay", counted)
    mem = device.train_memory(spec, job, 1, gpu.interconnect, gpu.visible_bytes)
    assert mem.allocated_peak_bytes > gpu.visible_bytes
    assert capacities == [None]


def bisected(need: Callable[[int], int], limit: int, budget: int) -> int:
    """The searches' bisection, probing `need` afresh."""
    lo, hi = 0, limit
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if need(mid) <= budget else (lo, mid - 1)
    return lo


def probes(spec: ModelSpec, job: ts.TrainSetup, n: int, link: str) -> tuple[Callable[[int], int], ...]:
    """The figures the searches probe (by sequence on the device, allocated; by micro-batch)."""

    def by_seq(s: int) -> int:
        return device._device(spec, device.replace(job, seq_tokens=s), n, link, job)

    def allocated(s: int) -> int:
        trial = device.replace(job, seq_tokens=s)
        return device.peak_terms(spec, trial, n).allocated_peak_bytes + device.overhead_bytes(n, link)

    def by_batch(b: int) -> int:
        return device._device(spec, device.replace(job, batch=b), n, link, job)

    return by_seq, allocated, by_batch


@pytest.mark.parametrize(("model", "method", "seq", "gpus"), SAMPLE)
def test_the_searches_remembered_probes_give_each_budget_its_own_bisection(
    model: str, method: str, seq: int, gpus: tuple[str, ...]
) -> None:
    spec, setup = catalog_spec(model), ts.TrainSetup(method=method, seq_tokens=seq)
    device._probes.cache_clear()
    for n in (1, 8):
        for gpu in load_gpus():
            budget, link = gpu.visible_bytes, gpu.interconnect
            by_seq, allocated, by_batch = probes(spec, device.per_gpu_setup(setup, n), n, link)
            assert device.largest_seq(spec, setup, n, budget, seq, interconnect=link) == bisected(
                by_seq, seq, budget
            )
            assert device.largest_seq(spec, setup, n, budget, seq, "allocated", link) == bisected(
                allocated, seq, budget
            )
            assert device.largest_batch(spec, setup, n, budget, link) == bisected(by_batch, 4096, budget)
