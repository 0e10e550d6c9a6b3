"""Invariants of the planner, checked with hypothesis over catalog models and GPUs.

Every draw is a valid question (a context the model allows, a split its heads allow), so each
property asserts something on every example instead of skipping most of them.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from gpusize.core.engines import engine
from gpusize.core.plan import TP_SIZES, Candidate, smallest_fit, split_problem
from gpusize.core.spec import ModelSpec
from gpusize.sources.catalog import find_gpu
from tests.helpers import catalog_spec, workload

MODELS = [
    "Llama-3.1-8B",
    "Qwen3-32B",
    "gemma-3-27b-it",
    "gpt-oss-20b",
    "DeepSeek-V3",
    "Qwen3-30B-A3B",
    "Qwen3-Next-80B-A3B-Instruct",
    "Mistral-7B-v0.1",
    "phi-4",
    "Llama-4-Scout-17B-16E-Instruct",
    "Nemotron-H-56B-Base-8K",
]
GPUS = ["H100", "RTX4090", "L40S", "A100-80GB", "B200", "H200"]
SPECS = {name: catalog_spec(name) for name in MODELS}
VLLM = engine("vllm").evaluate


def _valid_tps(spec: ModelSpec) -> list[int]:
    block = spec.quantization.block_size if spec.quantization else None
    return [tp for tp in TP_SIZES if split_problem(spec, tp, block) is None]


@st.composite
def questions(draw: st.DrawFn) -> tuple[str, str, int, int, int, int]:
    """(model, gpu, valid tp, context a, context b, batch), contexts within the model's maximum."""
    model = draw(st.sampled_from(MODELS))
    spec = SPECS[model]
    limit = min(spec.max_context or 262_144, 262_144)
    a = draw(st.integers(1, limit))
    b = draw(st.integers(1, limit))
    return (
        model,
        draw(st.sampled_from(GPUS)),
        draw(st.sampled_from(_valid_tps(spec))),
        a,
        b,
        draw(st.integers(1, 64)),
    )


def _eval(model: str, gpu: str, tp: int, ctx: int, batch: int) -> Candidate:
    spec = SPECS[model]
    return VLLM(spec, find_gpu(gpu), tp, workload(spec, ctx, batch))


@settings(max_examples=150, deadline=None)
@given(questions())
def test_more_context_never_needs_less(q: tuple[str, str, int, int, int, int]) -> None:
    model, gpu, tp, a, b, batch = q
    lo, hi = sorted((a, b))
    small, large = _eval(model, gpu, tp, lo, batch), _eval(model, gpu, tp, hi, batch)
    assert small.per_gpu is not None and large.per_gpu is not None
    assert large.per_gpu.total_bytes >= small.per_gpu.total_bytes
    assert not (large.fits and not small.fits)


@settings(max_examples=150, deadline=None)
@given(questions(), st.integers(1, 64))
def test_more_batch_never_needs_less(q: tuple[str, str, int, int, int, int], other: int) -> None:
    model, gpu, tp, ctx, _, batch = q
    lo, hi = sorted((batch, other))
    small, large = _eval(model, gpu, tp, ctx, lo), _eval(model, gpu, tp, ctx, hi)
    assert small.per_gpu is not None and large.per_gpu is not None
    assert large.per_gpu.total_bytes >= small.per_gpu.total_bytes
    assert not (large.fits and not small.fits)


@settings(max_examples=100, deadline=None)
@given(questions())
def test_per_gpu_memory_never_grows_with_tp(q: tuple[str, str, int, int, int, int]) -> None:
    model, gpu, _, ctx, _, _ = q
    valid = [_eval(model, gpu, tp, ctx, 1) for tp in _valid_tps(SPECS[model])]
    for small, large in zip(valid, valid[1:], strict=False):
        assert large.per_gpu is not None and small.per_gpu is not None
        assert (
            large.per_gpu.weights_bytes + large.per_gpu.kv_cache_bytes
            <= small.per_gpu.weights_bytes + small.per_gpu.kv_cache_bytes
        )


@settings(max_examples=100, deadline=None)
@given(questions())
def test_smallest_fit_is_the_smallest_split_that_fits(q: tuple[str, str, int, int, int, int]) -> None:
    """Brute force over every size, evaluated on its own, against the planner's answer; and a fitting
    candidate's memory is within its budget."""
    model, gpu, _, ctx, _, batch = q
    spec, device = SPECS[model], find_gpu(gpu)
    work = workload(spec, ctx, batch)
    each = {tp: VLLM(spec, device, tp, work) for tp in TP_SIZES}
    fitting = [tp for tp in TP_SIZES if each[tp].fits]
    best = smallest_fit(spec, device, work, VLLM)[-1]
    assert best.fits == bool(fitting)
    if fitting:
        assert best.num_gpus == min(fitting)
        assert best.per_gpu is not None and best.per_gpu.total_bytes <= best.per_gpu.usable_bytes
    for c in each.values():
        if c.fits:
            assert c.per_gpu is not None and c.per_gpu.total_bytes <= c.per_gpu.usable_bytes


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(MODELS), st.sampled_from(GPUS), st.sampled_from(TP_SIZES))
def test_a_split_never_uses_a_tp_size_that_does_not_divide_the_heads(model: str, gpu: str, tp: int) -> None:
    spec = SPECS[model]
    candidate = _eval(model, gpu, tp, 4096, 1)
    divides = spec.num_attention_heads % tp == 0 and (
        spec.mla is not None or spec.num_key_value_heads % tp == 0 or tp % spec.num_key_value_heads == 0
    )
    if not divides:
        assert not candidate.fits and candidate.per_gpu is None and candidate.reason
