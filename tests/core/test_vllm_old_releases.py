"""vLLM 0.7.0-0.9.2 and the V0 engine: each rule read from the releases' wheels
(core/engines/vllm/behaviour.py, scheduler.py, overhead.py, pool.py), one test per rule."""

from __future__ import annotations

import pytest

from gpusize.core import runtime
from gpusize.core.engines import vllm
from gpusize.core.releases import VLLM, parse_version
from gpusize.errors import InputError
from gpusize.serving.launch import vllm_command
from gpusize.sources.catalog import find_gpu
from tests.helpers import catalog_spec, workload

QWEN = catalog_spec("Qwen2.5-14B")


def _version(text: str) -> object:
    version = parse_version(text)
    assert version is not None
    return version


def test_the_range_starts_at_0_7_0() -> None:
    assert VLLM.span.startswith("0.7.0-")
    assert VLLM.resolve("0.8.5").label == "vLLM 0.8.5"
    with pytest.raises(InputError, match="supported 0.7.0 to"):
        VLLM.resolve("0.6.6")


@pytest.mark.parametrize(
    "release, v1", [("0.7.0", False), ("0.7.3", False), ("0.8.0", True), ("0.9.2", True), ("0.10.2", True)]
)
def test_the_default_engine_is_v0_up_to_0_7_3(release: str, v1: bool) -> None:
    """vllm/envs.py: VLLM_USE_V1 defaults to "0" up to 0.7.3, "1" from 0.8.0."""
    work = workload(QWEN, 8192, version=release)
    assert vllm.behaviour_of(work).v1 is v1


def test_v0_can_be_chosen_up_to_0_10_2_and_is_refused_after() -> None:
    assert not vllm.behaviour_of(workload(QWEN, 8192, version="0.10.2", vllm_use_v1=False)).v1
    assert vllm.behaviour_of(workload(QWEN, 8192, version="0.7.2", vllm_use_v1=True)).v1
    with pytest.raises(InputError, match=r"no V0 engine .* --engine-version 0\.10\.2"):
        workload(QWEN, 8192, version="0.11.0", vllm_use_v1=False)


@pytest.mark.parametrize("release, inside", [("0.7.2", True), ("0.9.0.1", True), ("0.9.1", False)])
def test_v1_counts_the_cuda_context_inside_the_budget_up_to_0_9_0_1(release: str, inside: bool) -> None:
    """gpu_worker.py determine_available_memory: total - free - torch allocated (the CUDA context with
    it) up to 0.9.0.1; memory_profiling's increase since the snapshot from 0.9.1."""
    gpu = find_gpu("H100-SXM")
    work = workload(QWEN, 8192, version=release, vllm_use_v1=True)
    per_gpu = vllm.evaluate(QWEN, gpu, 1, work).per_gpu
    assert per_gpu is not None
    limits = vllm.scheduler_limits(gpu, work)
    graphs = 0  # outside the budget before 0.20
    base = vllm.non_torch_bytes(gpu, 1, vllm.behaviour_of(work, QWEN)) + graphs
    assert per_gpu.overhead_bytes == base + (runtime.CUDA_CONTEXT_TP1 if inside else 0)
    assert limits.max_num_seqs == 1024


@pytest.mark.parametrize(
    "release, gpu, expected",
    [
        ("0.7.2", "A100-80GB", (1024, 2048)),  # H100/H200 by name only; 1024 sequences everywhere
        ("0.7.2", "H100-SXM", (1024, 8192)),
        ("0.8.3", "RTX4090", (1024, 2048)),
        ("0.8.4", "RTX4090", (256, 2048)),  # 256 off the H100/H200 names from 0.8.4
        ("0.8.4", "A100-80GB", (256, 2048)),
        ("0.8.5", "A100-80GB", (1024, 8192)),  # >= 70 GiB, A100 included
        ("0.9.0", "A100-80GB", (256, 2048)),  # A100 excepted from 0.9.0
        ("0.9.0", "H200-SXM", (1024, 8192)),
    ],
)
def test_v1_batch_defaults_per_release(release: str, gpu: str, expected: tuple[int, int]) -> None:
    """engine/arg_utils.py _override_v1_engine_args / _set_default_args_v1 of each wheel."""
    work = workload(QWEN, 32768, version=release, vllm_use_v1=True)
    limits = vllm.scheduler_limits(find_gpu(gpu), work)
    assert (limits.max_num_seqs, limits.max_num_batched_tokens) == expected


@pytest.mark.parametrize("ctx, tokens", [(1000, 2048), (10000, 10000), (32768, 32768), (131072, 2048)])
def test_v0_batch_defaults(ctx: int, tokens: int) -> None:
    """V0: 256 sequences; max(max_model_len, 2048) batched tokens, 2048 above 32K (chunked prefill on
    by default for a text model)."""
    work = workload(QWEN, ctx, version="0.7.2")
    limits = vllm.scheduler_limits(find_gpu("H100-SXM"), work)
    assert (limits.max_num_seqs, limits.max_num_batched_tokens) == (256, tokens)


def test_v0_multimodal_batches_at_least_5120_tokens() -> None:
    spec = catalog_spec("Qwen2-VL-7B-Instruct")  # a multimodal family 0.7.2 runs
    assert spec.vision is not None
    work = workload(spec, 4096, version="0.7.2")
    assert vllm.scheduler_limits(find_gpu("H100-SXM"), work, spec=spec).max_num_batched_tokens == 5120


def test_v0_keeps_long_prompts_whole_for_sliding_windows_and_lora() -> None:
    """Above 32K of context V0 chunks prefill (2048 tokens) unless the model has sliding windows or
    the server LoRA or speculative decoding: then max_model_len tokens per step."""
    gpu = find_gpu("H100-SXM")
    plain = workload(QWEN, 65536, version="0.7.2")
    assert vllm.scheduler_limits(gpu, plain, spec=QWEN).max_num_batched_tokens == 2048
    lora = workload(QWEN, 65536, version="0.7.2", enable_lora=True)
    assert vllm.scheduler_limits(gpu, lora, spec=QWEN).max_num_batched_tokens == 65536
    windowed = catalog_spec("gemma-2-9b-it")
    assert vllm.scheduler_limits(gpu, plain, spec=windowed).max_num_batched_tokens == 65536


def test_v0_peak_is_the_larger_of_forward_and_sampler() -> None:
    """V0 profile_run: the eager forward over the batched tokens, then the driver's sampler."""
    beh = vllm.behaviour(_version("0.7.2"), QWEN)  # type: ignore[arg-type]
    long = vllm.activation_bytes(QWEN, vllm.SchedulerLimits(256, 32768), 2, beh=beh)
    short = vllm.activation_bytes(QWEN, vllm.SchedulerLimits(256, 2048), 2, beh=beh)
    sampler = (vllm.SAMPLER_LOGITS_COPIES + vllm.SORT_SAMPLER_EXTRA_COPIES) * 256 * QWEN.vocab_size * 4
    assert short == int(sampler)  # 2048 tokens: the sampler sets the peak
    width = 3 * QWEN.intermediate_size / 2 + 3 * QWEN.hidden_size
    assert long == int(32768 * width * 2)  # 32K tokens: the forward does


def test_v1_0_7_profiles_16_bit_logits_of_every_token_and_no_sampler() -> None:
    beh = vllm.behaviour(_version("0.7.2"), QWEN, v1=True)  # type: ignore[arg-type]
    got = vllm.activation_bytes(QWEN, vllm.SchedulerLimits(1024, 2048), 1, beh=beh)
    hidden = vllm.HIDDEN_STATE_COPIES * 2048 * QWEN.hidden_size * 2
    assert got == int(2048 * QWEN.vocab_size * 2 + hidden)


def test_v0_graphs_are_outside_the_budget() -> None:
    work = workload(QWEN, 8192, version="0.7.2")
    assert vllm.effective_settings(QWEN, find_gpu("H100-SXM"), 1, work)["cuda_graphs"] == "outside the budget"
    assert vllm.effective_settings(QWEN, find_gpu("H100-SXM"), 1, work)["engine"] == "V0 (VLLM_USE_V1=0)"


def test_the_launch_command_sets_vllm_use_v1_when_given() -> None:
    gpu = find_gpu("H100-SXM")
    given = workload(QWEN, 8192, version="0.10.2", vllm_use_v1=False)
    command = vllm_command("Qwen/Qwen2.5-14B", None, 1, given, 0.9, QWEN, gpu).command
    assert command is not None and command.startswith("VLLM_USE_V1=0 vllm serve ")
    default = workload(QWEN, 8192, version="0.10.2")
    command = vllm_command("Qwen/Qwen2.5-14B", None, 1, default, 0.9, QWEN, gpu).command
    assert command is not None and command.startswith("vllm serve ")


def test_flags_older_releases_lack_are_refused() -> None:
    """--enable-expert-parallel first in 0.8.0, --speculative-config in 0.8.2 (arg_utils.py)."""
    with pytest.raises(InputError, match="--enable-expert-parallel does not exist in vLLM 0.7.3"):
        workload(QWEN, 8192, version="0.7.3", enable_expert_parallel=True)
    workload(QWEN, 8192, version="0.8.0", enable_expert_parallel=True)


@pytest.mark.parametrize(
    "release, v1, hybrid", [("0.9.0", True, False), ("0.9.1", True, True), ("0.10.2", False, False)]
)
def test_sliding_layers_keep_the_context_without_the_hybrid_allocator(
    release: str, v1: bool, hybrid: bool
) -> None:
    """V1 from 0.9.1 groups sliding and full layers (kv_cache_utils.py, uniform page size); before it
    and in V0 unify_hybrid_kv_cache_specs makes every layer full."""
    from gpusize.core import kvcache

    spec = catalog_spec("gemma-2-9b-it")
    gpu = find_gpu("H100-SXM")
    work = workload(spec, 8192, version=release, vllm_use_v1=v1, max_num_batched_tokens=1024)
    got = vllm.evaluate(spec, gpu, 1, work)
    per_gpu = got.per_gpu
    assert per_gpu is not None and got.kv_cache_capacity_tokens is not None
    per_token_all_full = kvcache.kv_cache_bytes_per_token(spec, work.kv_bytes, 1)
    full_request = 8192 * per_token_all_full
    assert (per_gpu.kv_cache_bytes < full_request) is hybrid
    notes = " ".join(vllm.model_notes(spec, work))
    assert ("no hybrid KV allocator" in notes) is not hybrid


def _with_reserved(release: str, v1: bool | None, reserved_gib: float) -> object:
    from dataclasses import replace

    work = workload(QWEN, 8192, version=release, vllm_use_v1=v1)
    return vllm.evaluate(
        QWEN, find_gpu("H100-SXM"), 1, replace(work, reserved_bytes=int(reserved_gib * 2**30))
    )


def test_other_processes_memory_by_release() -> None:
    """V1 from 0.9.1 refuses to start below utilization x total free; V1 before it counts the other
    processes' memory inside the budget (a smaller pool, it starts); V0 sizes the pool for the whole
    budget and runs out of memory allocating it (gpu_worker.py / worker.py of each wheel)."""
    refuses = _with_reserved("0.9.1", True, 20)
    assert not refuses.fits and "refuses to start: free memory" in (refuses.reason or "")  # type: ignore[attr-defined]
    smaller, alone = _with_reserved("0.9.0", True, 20), _with_reserved("0.9.0", True, 0)
    assert smaller.fits  # type: ignore[attr-defined]
    lost = alone.kv_cache_capacity_tokens - smaller.kv_cache_capacity_tokens  # type: ignore[attr-defined]
    per_token = 2 * QWEN.num_hidden_layers * QWEN.num_key_value_heads * QWEN.head_dim * 2
    assert abs(lost * per_token - 20 * 2**30) <= 16 * per_token
    v0 = _with_reserved("0.7.2", None, 20)
    assert not v0.fits and "runs out of memory allocating it" in (v0.reason or "")  # type: ignore[attr-defined]


@pytest.mark.parametrize("release, both", [("0.7.0", True), ("0.8.1", True), ("0.8.2", False)])
def test_bitsandbytes_needs_the_load_format_before_0_8_2(release: str, both: bool) -> None:
    """Up to 0.8.1 EngineArgs refuses --quantization bitsandbytes without --load-format bitsandbytes
    ("BitsAndBytes quantization and QLoRA adapter only support 'bitsandbytes' load format"); from
    0.8.2 it sets the load format itself."""
    from dataclasses import replace

    work = replace(workload(QWEN, 8192, dtype="int4", version=release), load_quantization="bitsandbytes")
    command = vllm_command("Qwen/Qwen2.5-14B", None, 1, work, 0.9, QWEN, find_gpu("H100-SXM")).command
    assert command is not None and "--quantization bitsandbytes" in command
    assert ("--load-format bitsandbytes" in command) is both
