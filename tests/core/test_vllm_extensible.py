"""vLLM 0.34.0's extensible KV cache (core/engines/vllm/extensible.py), against the rule of its source:
`vllm/v1/worker/extensible_kv_cache.py` measure_kv_cache_bytes and `vllm/v1/worker/utils.py`
request_memory in the 0.34.0 wheel on PyPI, `vllm/config/cache.py` for the defaults. No published
start-up log of 0.34.0 checks the figures yet: these are the rule's cases, synthetic."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpusize.core.engines import prepare
from gpusize.core.engines.vllm import evaluate
from gpusize.core.engines.vllm.behaviour import behaviour, behaviour_of
from gpusize.core.engines.vllm.extensible import MARGIN_FLOOR_BYTES, budget_bytes, margin_bytes
from gpusize.core.engines.vllm.overhead import cuda_graph_estimate_bytes
from gpusize.core.engines.vllm.scheduler import scheduler_limits
from gpusize.core.releases import VLLM, parse_version
from gpusize.core.runtime import cuda_context_bytes
from gpusize.core.workload import EngineSettings, Request
from gpusize.errors import InputError
from gpusize.sources.catalog import find_gpu
from gpusize.units import GIB
from tests.helpers import catalog_spec


def _measure_kv_cache_bytes(
    init_free_memory: int, free_memory: int, requested_memory: int, transient_peak_bytes: int
) -> int:
    """vLLM 0.34.0's measure_kv_cache_bytes with nothing committed yet and no torch reserve growth
    (margin_floor_bytes and margin_fraction at their CUDA defaults), as the wheel writes it."""
    committed_bytes = 0
    non_kv_used = init_free_memory - free_memory - committed_bytes
    headroom = free_memory + committed_bytes
    margin = max(1 << 30, int(transient_peak_bytes * 0.75))
    available = min(requested_memory - non_kv_used, headroom - margin)
    available -= max(transient_peak_bytes, 0)
    return max(available, 0)


@given(
    visible=st.integers(20 * GIB, 300 * GIB),
    before=st.integers(0, 8 * GIB),
    held=st.integers(0, 200 * GIB),
    peak=st.integers(0, 30 * GIB),
    utilization=st.floats(0.5, 1.0),
)
def test_the_budget_less_what_the_engine_holds_is_vllms_pool(
    visible: int, before: int, held: int, peak: int, utilization: float
) -> None:
    """budget_bytes - what the engine holds besides the KV cache - the activation peak is the pool
    measure_kv_cache_bytes gives, whenever the pool is not empty: the device's total `visible`,
    `before` held before the start-up snapshot (context, NCCL, other processes), `held` allocated
    after it (weights, graphs, buffers)."""
    init_free = visible - before
    free = init_free - held
    if free < 0:
        return
    requested = math.ceil(visible * utilization)
    for graphs in (0, min(peak, 2 * GIB)):  # the CUDA-graph estimate is part of the transient peak
        expected = _measure_kv_cache_bytes(init_free, free, requested, peak)
        ours = (
            budget_bytes(visible, utilization, before, peak - graphs, graphs, "NVIDIA")
            - held
            - (peak - graphs)
        )
        assert max(ours, 0) == expected


def test_the_defaults_of_0_34_0() -> None:
    """CacheConfig: utilization 1.0 with the extensible KV cache (resolved_gpu_memory_utilization),
    DEFAULT_BLOCK_SIZE 64 (16 in 0.33.0); the cache is a 0.34.0 feature."""
    new, old = behaviour(parse_version("0.34.0")), behaviour(parse_version("0.33.0"))  # type: ignore[arg-type]
    assert (new.extensible_kv, new.default_utilization, new.default_block_size) == (True, 1.0, 64)
    assert (old.extensible_kv, old.default_utilization, old.default_block_size) == (False, 0.92, 16)


def test_the_margin_is_the_larger_of_its_floor_and_three_quarters_of_the_peak() -> None:
    assert margin_bytes(GIB, "NVIDIA") == MARGIN_FLOOR_BYTES["NVIDIA"]
    assert margin_bytes(4 * GIB, "NVIDIA") == 3 * GIB
    assert margin_bytes(2 * GIB, "AMD") == 3 * GIB  # ROCm's floor (3 GiB): kernel scratch outside torch


def _work(version: str, utilization: float | None = None, reserved_mib: int = 0):  # type: ignore[no-untyped-def]
    spec = catalog_spec("Qwen3-32B")
    settings = EngineSettings(version=version, gpu_memory_utilization=utilization)
    request = Request(context_tokens=32768, engine=settings, reserved_bytes=reserved_mib << 20)
    return spec, prepare(spec, request)


def test_qwen3_32b_on_an_h100_at_the_default() -> None:
    """Qwen3-32B at 32k on one H100 under 0.34.0: the budget is the device less the CUDA context,
    max(1 GiB, 0.75 x the transient peak: activations + the CUDA-graph estimate) and the graph
    estimate (the peak holds it as well); the pool is the budget less weights, activations and
    overhead, in 64-token blocks. Under 0.33.0 the budget is 0.92 of the device."""
    gpu = find_gpu("H100")
    spec, work = _work("0.34.0")
    c = evaluate(spec, gpu, 1, work)
    g = c.per_gpu
    assert g is not None and c.fits
    graphs = cuda_graph_estimate_bytes(spec, scheduler_limits(gpu, work, behaviour_of(work, spec), spec), 1)
    assert graphs > 0  # CUDA graphs on: their estimate is in the transient peak as well
    margin = max(GIB, int(0.75 * (g.activations_bytes + graphs)))
    assert g.usable_bytes == gpu.visible_bytes - cuda_context_bytes(1) - margin - graphs
    available = g.usable_bytes - g.weights_bytes - g.activations_bytes - g.overhead_bytes
    page = 64 * 262_144  # a block of 64 tokens of Qwen3-32B's 262,144 bf16 bytes per token
    assert c.kv_cache_capacity_tokens == available // page * 64
    _, old_work = _work("0.33.0")
    old = evaluate(spec, gpu, 1, old_work)
    assert old.per_gpu is not None and old.per_gpu.usable_bytes == int(0.92 * gpu.visible_bytes)
    assert c.kv_cache_capacity_tokens > 1.2 * (old.kv_cache_capacity_tokens or 0)


def test_a_utilization_given_caps_the_budget() -> None:
    gpu = find_gpu("H100")
    spec, work = _work("0.34.0", utilization=0.8)
    g = evaluate(spec, gpu, 1, work).per_gpu
    graphs = cuda_graph_estimate_bytes(spec, scheduler_limits(gpu, work, behaviour_of(work, spec), spec), 1)
    assert g is not None and g.usable_bytes == math.ceil(0.8 * gpu.visible_bytes) - graphs


def test_memory_other_processes_hold_shrinks_the_pool_without_a_refusal() -> None:
    """0.33.0 refuses to start when the free memory at start-up is below its budget; 0.34.0's budget is
    a cap, so memory held by others (--reserved-mib) only leaves the pool smaller."""
    gpu = find_gpu("H100")
    spec, old = _work("0.33.0", reserved_mib=8192)
    assert "is less than the utilization budget" in (evaluate(spec, gpu, 1, old).reason or "")
    spec, new = _work("0.34.0", reserved_mib=8192)
    c = evaluate(spec, gpu, 1, new)
    _, free = _work("0.34.0")
    alone = evaluate(spec, gpu, 1, free)
    assert c.per_gpu is not None and alone.per_gpu is not None
    assert alone.per_gpu.usable_bytes - c.per_gpu.usable_bytes == 8192 << 20


def test_0_34_0_is_named_and_0_33_0_stays_the_default() -> None:
    assert str(VLLM.newest) == "0.34.0" and str(VLLM.default_version) == "0.33.0"
    assert str(VLLM.resolve(None).version) == "0.33.0"
    assert str(VLLM.resolve("0.34.0").version) == "0.34.0"
    later = VLLM.resolve("0.34.2")
    assert str(later.version) == "0.34.0" and later.note and "modelled as 0.34.0" in later.note
    with pytest.raises(InputError, match=r"supported 0.7.0 to 0.34.x \(default 0.33.0\)"):
        VLLM.resolve("0.35.0")


def test_the_launch_command_leaves_the_default_utilization_to_vllm() -> None:
    """At 0.34.0's default the command names no --gpu-memory-utilization (the engine's budget member is
    None): vLLM resolves 1.0 with the extensible cache and 0.92 where it falls back to estimate-based
    sizing (a driver without virtual memory management), where a 1.0 on the command line would hold
    the whole device. A utilization the user gave is passed on, as before 0.34.0 the default is."""
    from gpusize.core.engines import engine
    from gpusize.serving.launch import vllm_command

    gpu, model = find_gpu("H100"), engine("vllm")
    assert model.budget is not None

    def command(version: str, utilization: float | None = None) -> str:
        spec, work = _work(version, utilization)
        budget = model.budget(spec, gpu, 1, work)  # type: ignore[misc]
        return vllm_command("Qwen/Qwen3-32B", None, 1, work, budget, spec).command or ""

    assert "--gpu-memory-utilization" not in command("0.34.0")
    assert "--gpu-memory-utilization 0.8" in command("0.34.0", 0.8)
    assert "--gpu-memory-utilization 0.92" in command("0.33.0")


def test_the_switch_turns_the_extensible_cache_off() -> None:
    """--no-enable-extensible-kv-cache (vLLM's BooleanOptionalAction form, 0.34.0 on): the
    estimate-based sizing at CacheConfig.DEFAULT_GPU_MEMORY_UTILIZATION (0.92), in 64-token blocks,
    with the free-memory check back; the launch command carries the switch and the utilization; an
    older release refuses the flag."""
    from gpusize.core.engines import engine
    from gpusize.serving.launch import vllm_command

    gpu, spec = find_gpu("H100"), catalog_spec("Qwen3-32B")
    off = EngineSettings(version="0.34.0", enable_extensible_kv_cache=False)
    work = prepare(spec, Request(context_tokens=32768, engine=off))
    c = evaluate(spec, gpu, 1, work)
    assert c.per_gpu is not None and c.per_gpu.usable_bytes == int(0.92 * gpu.visible_bytes)
    assert c.kv_cache_capacity_tokens is not None and c.kv_cache_capacity_tokens % 64 == 0
    budget = engine("vllm").budget(spec, gpu, 1, work)  # type: ignore[misc]
    command = vllm_command("Qwen/Qwen3-32B", None, 1, work, budget, spec).command or ""
    assert "--gpu-memory-utilization 0.92" in command and "--no-enable-extensible-kv-cache" in command
    held = prepare(spec, Request(context_tokens=32768, engine=off, reserved_bytes=8192 << 20))
    assert "is less than the utilization budget" in (evaluate(spec, gpu, 1, held).reason or "")
    with pytest.raises(InputError, match="does not exist in vLLM 0.33.0"):
        prepare(spec, Request(context_tokens=32768, engine=EngineSettings(enable_extensible_kv_cache=False)))
