"""Fix suggestions: computed by the engine model, cheapest first, and each one's flags reproduce a plan
that fits."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusize.core.engines import engine, prepare
from gpusize.core.engines.vllm import evaluate_nodes
from gpusize.core.plan import yarn_flag
from gpusize.core.suggest import Scope, Suggestion, fewer_gpus, fixes
from gpusize.core.workload import EngineSettings, Request
from gpusize.sources.catalog import find_gpu, load_gpus
from tests.helpers import catalog_spec, workload


def replay(name: str, request: Request, gpu: str, n: int, s: Suggestion) -> bool:
    """Apply a suggestion's flags to the request, as a person would on the command line, and ask the
    engine model again."""
    spec = catalog_spec(name)
    engine_settings, nodes = request.engine, 0
    for c in s.changes:
        if c.flag in ("--dtype", "--quantization"):  # --quantization fp8 means fp8 weights
            request = replace(request, dtype=c.value)
        elif c.flag == "--kv-cache-dtype":
            request = replace(request, kv_dtype=c.value)
        elif c.flag in ("--max-model-len", "--context-length", "--ctx"):
            request = replace(request, context_tokens=int(c.value))
        elif c.flag == "--gpu-memory-utilization":
            engine_settings = replace(engine_settings, gpu_memory_utilization=float(c.value))
        elif c.flag == "--batch":
            request = replace(request, batch=int(c.value))
        elif c.flag == "--n-gpu-layers":
            engine_settings = replace(engine_settings, n_gpu_layers=int(c.value))
        elif c.flag == "--max-num-seqs":
            engine_settings = replace(engine_settings, max_num_seqs=int(c.value))
        elif c.flag in ("--tensor-parallel-size", "--gpus"):
            n = int(c.value)
        elif c.flag == "--gpu":
            gpu = c.value
        elif c.flag == "--nodes":
            nodes = int(c.value)
        else:
            raise AssertionError(f"unexpected flag {c.flag}")
    request = replace(request, engine=engine_settings)
    work = prepare(spec, request)
    if nodes:
        return evaluate_nodes(spec, find_gpu(gpu), nodes, work).fits
    return engine(request.engine.name).evaluate(spec, find_gpu(gpu), n, work).fits


def test_70b_on_two_3090s_suggests_int4_and_more_cards_cheapest_first() -> None:
    spec = catalog_spec("Llama-3.3-70B")
    work = workload(spec, 8192)
    scope = Scope(gpus=(find_gpu("RTX3090"),), others=load_gpus(), count=2)
    found = fixes(spec, work, engine("vllm"), scope)
    flags = [{(c.flag, c.value) for c in s.changes} for s in found]
    assert {("--dtype", "int4")} in flags  # int4 on the same two cards
    assert any(("--tensor-parallel-size", "4") in f for f in flags)  # FP8 weights on 4 cards
    assert {("--tensor-parallel-size", "8")} in flags  # the model as it is on 8 cards
    prices = [s.usd_per_hour for s in found if s.usd_per_hour is not None]
    assert prices == sorted(prices)
    int4 = next(s for s in found if ("--dtype", "int4") in {(c.flag, c.value) for c in s.changes})
    assert int4.note and "pre-quantized" in int4.note
    request = Request(context_tokens=8192)
    assert all(replay("Llama-3.3-70B", request, "RTX3090", 2, s) for s in found)


def test_a_plan_that_fits_has_no_fixes_to_suggest_but_h100_scheduler_defaults_are_explained() -> None:
    # vLLM 0.19: an A100 80GB fits Qwen3-32B at 32k on one GPU, an H100 needs two at its defaults.
    spec = catalog_spec("Qwen3-32B")
    work = workload(spec, 32768, version="0.19.1")
    vllm = engine("vllm")
    assert fewer_gpus(spec, work, vllm, find_gpu("H100"), 2) is not None
    saving = fewer_gpus(spec, work, vllm, find_gpu("H100"), 2)
    assert saving is not None and saving.num_gpus == 1
    assert saving.changes[0].flag in ("--max-num-seqs", "--gpu-memory-utilization")
    if saving.changes[0].flag == "--max-num-seqs":
        assert saving.note and "1024 sequences" in saving.note and "256" in saving.note
    request = Request(context_tokens=32768, engine=EngineSettings(version="0.19.1"))
    assert replay("Qwen3-32B", request, "H100", 2, saving)
    assert fewer_gpus(spec, work, vllm, find_gpu("A100-80GB"), 1) is None


def test_llamacpp_suggests_the_most_layers_that_fit_on_the_gpus() -> None:
    spec = catalog_spec("Llama-3.3-70B")
    request = Request(context_tokens=8192, engine=EngineSettings(name="llamacpp"))
    scope = Scope(gpus=(find_gpu("RTX3090"),), others=load_gpus(), count=2)
    found = fixes(spec, prepare(spec, request), engine("llamacpp"), scope)
    offload = next(s for s in found if s.changes[0].flag == "--n-gpu-layers")
    assert offload.num_gpus == 2 and offload.note and "system RAM" in offload.note
    assert replay("Llama-3.3-70B", request, "RTX3090", 2, offload)
    one_more = replace(
        offload, changes=(offload.changes[0]._replace(value=str(int(offload.changes[0].value) + 1)),)
    )
    assert not replay("Llama-3.3-70B", request, "RTX3090", 2, one_more)  # the most that fit
    assert all(replay("Llama-3.3-70B", request, "RTX3090", 2, s) for s in found)


def test_yarn_flag_for_a_context_beyond_the_maximum() -> None:
    qwen = catalog_spec("Qwen3-235B-A22B")  # max_position_embeddings 40,960, no rope scaling
    assert yarn_flag(qwen, 131072) == "--rope-scaling yarn:4:32768"
    assert yarn_flag(qwen, 65536) == "--rope-scaling yarn:2:32768"
    assert yarn_flag(catalog_spec("Llama-3.1-8B"), 262144) is None  # llama3 rope scaling already set


@settings(max_examples=25, deadline=None)
@given(
    name=st.sampled_from(
        [
            "Llama-3.3-70B",
            "Qwen3-32B",
            "Qwen3-8B",
            "gpt-oss-120b",
            "Mixtral-8x7B-Instruct-v0.1",
            "DeepSeek-V3",
        ]
    ),
    gpu=st.sampled_from(["RTX3090", "RTX4090", "L4", "A100-40GB", "H100"]),
    count=st.sampled_from([1, 2]),
    ctx=st.sampled_from([8192, 32768, 131072]),
    batch=st.sampled_from([1, 4, 32]),
)
def test_every_suggestion_fits_when_its_flags_are_applied(
    name: str, gpu: str, count: int, ctx: int, batch: int
) -> None:
    spec = catalog_spec(name)
    if spec.max_context and ctx > spec.max_context:
        return
    request = Request(context_tokens=ctx, batch=batch)
    work = prepare(spec, request)
    vllm = engine("vllm")
    if vllm.evaluate(spec, find_gpu(gpu), count, work).fits:
        return
    found = fixes(spec, work, vllm, Scope(gpus=(find_gpu(gpu),), others=load_gpus(), count=count))
    for s in found:
        assert s.fits and replay(name, request, gpu, count, s), s


@pytest.mark.parametrize(
    ("name", "ctx", "batch"),
    [("Llama-3.1-405B-Instruct", 131072, 64), ("DeepSeek-V3", 131072, 64), ("Llama-3.3-70B", 131072, 64)],
)
def test_every_suggestion_over_all_gpu_types_names_its_gpu_and_fits(name: str, ctx: int, batch: int) -> None:
    spec = catalog_spec(name)
    request = Request(context_tokens=ctx, batch=batch)
    work = prepare(spec, request)
    vllm = engine("vllm")
    gpus = load_gpus()
    assert not any(vllm.evaluate(spec, g, 8, work).fits for g in gpus)  # no server of 8 holds it
    found = fixes(spec, work, vllm, Scope(gpus=gpus))
    assert found
    for s in found:
        assert s.changes[0].flag == "--gpu" and replay(name, request, "", 1, s), s
