"""An engine's fit test keeps its answers (core/engines on_device): the same arguments give the very
answer computed the first time, equal to a fresh evaluation; an argument that cannot be hashed is
evaluated and not kept; at most EVALUATIONS_KEPT answers are held."""

from __future__ import annotations

import importlib
from dataclasses import replace

import pytest

import gpusize.core.engines as engines
from gpusize.core.engines import engine
from gpusize.core.registry import ENGINE_MODULES
from gpusize.sources.catalog import find_gpu
from tests.helpers import catalog_spec, workload


@pytest.mark.parametrize("name", ["vllm", "sglang", "llamacpp"])
def test_the_same_arguments_get_the_kept_answer_equal_to_a_fresh_one(name: str) -> None:
    spec, gpu = catalog_spec("Qwen3-8B"), find_gpu("L40S")
    work = workload(spec, 8192, 2, engine_name=name)
    first = engine(name).evaluate(spec, gpu, 2, work)
    again = engine(name).evaluate(spec, replace(gpu), 2, replace(work))  # equal, not the same objects
    assert again is first
    fresh = importlib.import_module(f"gpusize.core.engines.{ENGINE_MODULES[name]}").ENGINE.evaluate
    assert fresh(spec, gpu, 2, work) == first
    assert engine(name).evaluate(spec, gpu, 2, replace(work, context_tokens=4096)) != first


def test_an_argument_that_cannot_be_hashed_is_evaluated_not_kept() -> None:
    spec = catalog_spec("Qwen3-8B")
    gpu = replace(find_gpu("H100"), engines=["vllm", "sglang"])  # a list: no hash
    work = workload(spec, 8192)
    first = engine("vllm").evaluate(spec, gpu, 1, work)
    again = engine("vllm").evaluate(spec, gpu, 1, work)
    assert first == again and first is not again and first.fits


def test_at_most_evaluations_kept_are_held(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(engines, "EVALUATIONS_KEPT", 2)
    spec, gpu = catalog_spec("Qwen3-8B"), find_gpu("A100-80GB")
    works = [workload(spec, ctx) for ctx in (1000, 2000, 3000)]
    first = engine("vllm").evaluate(spec, gpu, 1, works[0])
    engine("vllm").evaluate(spec, gpu, 1, works[1])
    engine("vllm").evaluate(spec, gpu, 1, works[2])  # the third: the kept ones are let go
    assert engine("vllm").evaluate(spec, gpu, 1, works[0]) is not first


def test_a_gpu_of_other_free_memory_is_evaluated_again() -> None:
    """`--gpu local`'s free memory is left out of GpuSpec's equality, not out of the kept answers: the
    vLLM pool subtracts what other processes hold."""
    spec, gpu = catalog_spec("Qwen3-8B"), find_gpu("H100")
    work = workload(spec, 8192)
    whole = engine("vllm").evaluate(spec, gpu, 1, work)
    busy = replace(gpu, free_mib=40_000)
    assert busy == gpu
    held = engine("vllm").evaluate(spec, busy, 1, work)
    assert held != whole
    fresh = importlib.import_module("gpusize.core.engines.vllm").ENGINE.evaluate
    assert held == fresh(spec, busy, 1, work)


def test_a_gpu_keeps_its_hash() -> None:
    """GpuSpec hashes its compared fields once (kept beside them); a copy computes its own."""
    gpu = replace(find_gpu("L4"))
    assert hash(gpu) == hash(replace(gpu)) == hash(gpu)
    assert gpu.__dict__["_hash"] == hash(gpu)
    assert hash(replace(gpu, memory_mib=gpu.memory_mib + 1)) != hash(gpu)
