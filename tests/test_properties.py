"""Invariants of the planner, checked with hypothesis over catalog models and GPUs."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from gpusize import plan
from gpusize.catalog import find_gpu, load_models
from gpusize.model import parse_config
from gpusize.params import count_params

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
SPECS = {e.name: parse_config(e.config) for e in load_models() if e.name in MODELS}
COUNTS = {name: count_params(spec) for name, spec in SPECS.items()}

models = st.sampled_from(sorted(SPECS))
gpus = st.sampled_from(GPUS)
contexts = st.integers(min_value=1, max_value=262_144)
batches = st.integers(min_value=1, max_value=64)
tps = st.sampled_from(plan.TP_SIZES)


def _eval(model: str, gpu: str, tp: int, ctx: int, batch: int) -> plan.Candidate:
    return plan.evaluate(
        SPECS[model], COUNTS[model], find_gpu(gpu), tp, plan.Workload(ctx, batch, "auto", "auto")
    )


@settings(max_examples=150, deadline=None)
@given(models, gpus, tps, contexts, contexts, batches)
def test_more_context_never_needs_less(model: str, gpu: str, tp: int, a: int, b: int, batch: int) -> None:
    lo, hi = sorted((a, b))
    small, large = _eval(model, gpu, tp, lo, batch), _eval(model, gpu, tp, hi, batch)
    if small.per_gpu and large.per_gpu:
        assert large.per_gpu.total_bytes >= small.per_gpu.total_bytes
        assert not (large.fits and not small.fits)


@settings(max_examples=150, deadline=None)
@given(models, gpus, tps, contexts, batches, batches)
def test_more_batch_never_needs_less(model: str, gpu: str, tp: int, ctx: int, a: int, b: int) -> None:
    lo, hi = sorted((a, b))
    small, large = _eval(model, gpu, tp, ctx, lo), _eval(model, gpu, tp, ctx, hi)
    if small.per_gpu and large.per_gpu:
        assert large.per_gpu.total_bytes >= small.per_gpu.total_bytes


@settings(max_examples=100, deadline=None)
@given(models, gpus, contexts)
def test_per_gpu_memory_never_grows_with_tp(model: str, gpu: str, ctx: int) -> None:
    valid = [c for c in (_eval(model, gpu, tp, ctx, 1) for tp in plan.TP_SIZES) if c.per_gpu]
    for small, large in zip(valid, valid[1:], strict=False):
        assert large.per_gpu is not None and small.per_gpu is not None
        assert (
            large.per_gpu.weights_bytes + large.per_gpu.kv_cache_bytes
            <= small.per_gpu.weights_bytes + small.per_gpu.kv_cache_bytes
        )


@settings(max_examples=100, deadline=None)
@given(models, gpus, contexts, batches)
def test_returned_plan_fits_and_no_smaller_split_fits(model: str, gpu: str, ctx: int, batch: int) -> None:
    tried = plan.smallest_fit(
        SPECS[model], COUNTS[model], find_gpu(gpu), plan.Workload(ctx, batch, "auto", "auto")
    )
    best = tried[-1]
    if best.fits:
        assert best.per_gpu is not None
        assert best.per_gpu.total_bytes <= best.per_gpu.usable_bytes
    assert not any(c.fits for c in tried[:-1])


@settings(max_examples=100, deadline=None)
@given(models, gpus, tps)
def test_tp_satisfies_head_rules(model: str, gpu: str, tp: int) -> None:
    spec = SPECS[model]
    candidate = _eval(model, gpu, tp, 4096, 1)
    if candidate.per_gpu is not None:  # evaluated: the split is valid
        assert spec.num_attention_heads % tp == 0
        kv = spec.num_key_value_heads
        assert spec.mla or kv % tp == 0 or tp % kv == 0
