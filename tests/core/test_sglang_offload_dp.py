"""SGLang `--cpu-offload-gb` (the field vLLM's shares), and the PCIe copy it costs every step.

Rule (sgl-project/sglang python/sglang/srt/utils/offloader.py, `create_offloader`: cpu_offload_gb > 0
gives `OffloaderV1(cpu_offload_max_bytes=int(cpu_offload_gb * 1024**3))`, whose `wrap_modules` runs
`maybe_offload_to_cpu` over the decoder layers `make_layers` builds): parameters move to pinned CPU
memory, layer after layer, until the bytes moved reach the budget; the forward pass copies them to
the GPU (`v.to(device, non_blocking=True)` then `functional_call`) every time."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from gpusize.core import kvcache
from gpusize.core.engines import engine
from gpusize.core.plan import Candidate
from gpusize.core.releases import SGLANG
from gpusize.core.workload import Workload
from gpusize.errors import InputError
from gpusize.serving.throughput import PCIE_GBPS, decode_step, host_copy_s
from gpusize.sources.catalog import find_gpu
from gpusize.units import GIB
from tests.helpers import catalog_spec, run_in_process, workload

MODEL = "Llama-3.3-70B"


def test_sglang_moves_the_offloaded_weights_off_each_gpu_into_its_kv_pool() -> None:
    """Worked example: Llama-3.3-70B bf16 on 4x H100 SXM, --cpu-offload-gb 20: each GPU holds 20 GiB
    fewer weights, the static pool (mem_fraction_static x free memory, a fixed budget) gives those
    20 GiB to the KV cache (profile_max_num_token: rest = budget - weights), and the host holds 4 x 20."""
    spec, h100 = catalog_spec(MODEL), find_gpu("H100")
    plain = engine("sglang").evaluate(spec, h100, 4, workload(spec, 8192, engine_name="sglang"))
    work = workload(spec, 8192, engine_name="sglang", cpu_offload_gb=20)
    moved = engine("sglang").evaluate(spec, h100, 4, work)
    assert plain.per_gpu and moved.per_gpu
    assert plain.per_gpu.weights_bytes - moved.per_gpu.weights_bytes == 20 * GIB
    assert moved.per_gpu.usable_bytes == plain.per_gpu.usable_bytes  # the budget does not move
    assert moved.host_bytes == 80 * GIB and plain.host_bytes is None
    assert plain.fits and (plain.kv_cache_capacity_tokens or 0) > 0
    cell = 80 * 2 * 8 // 4 * 128 * 2  # layers x (K, V) x kv heads / TP x head_dim x bf16
    gained = (moved.kv_cache_capacity_tokens or 0) - (plain.kv_cache_capacity_tokens or 0)
    assert abs(gained - 20 * GIB // cell) <= 1


def test_sglang_takes_whole_gib_only() -> None:
    spec, h100 = catalog_spec(MODEL), find_gpu("H100")
    work = workload(spec, 8192, engine_name="sglang", cpu_offload_gb=2.5)
    with pytest.raises(InputError, match="whole number"):
        engine("sglang").evaluate(spec, h100, 2, work)


@pytest.mark.parametrize("engine_name", ["vllm", "sglang"])
def test_decode_pays_the_offloaded_bytes_over_pcie_every_step(engine_name: str) -> None:
    """H100 SXM is PCIe gen 5 x16 (64 GB/s one way): 20 GiB per GPU adds 20 x 2^30 / 64e9 = 0.336 s
    to every decode step, which then is bound by the host link."""
    spec, h100 = catalog_spec(MODEL), find_gpu("H100")
    plain = workload(spec, 8192, engine_name=engine_name)
    work = workload(spec, 8192, engine_name=engine_name, cpu_offload_gb=20)
    expected = 20 * GIB / (PCIE_GBPS[5] * 1e9)
    assert host_copy_s(spec, work, h100, 2) == pytest.approx(expected) == pytest.approx(0.3355, abs=1e-4)
    before, after = decode_step(spec, plain, h100, 2, 8, 4096), decode_step(spec, work, h100, 2, 8, 4096)
    assert before and after
    assert after.step_s - before.step_s == pytest.approx(expected)
    assert after.bound == "host link" and before.bound != "host link"
    assert host_copy_s(spec, plain, h100, 2) == 0.0


def test_serve_with_sglang_offload_prints_the_flag_and_no_untold_speed_note() -> None:
    result = run_in_process(
        "serve", MODEL, "--gpu", "H100", "--gpus", "2", "--engine", "sglang", "--cpu-offload-gb", "20",
        "--users", "4", "--json",
    )  # fmt: skip
    assert result.code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["workload"]["engine"]["cpu_offload_gb"] == 20.0
    assert "--cpu-offload-gb 20 " in data["launch"]["sglang"]["command"] + " "
    assert "do not count" not in result.stdout
    refused = run_in_process("fit", MODEL, "--engine", "sglang", "--cpu-offload-gb", "2.5")
    assert refused.code == 2 and refused.stderr.count("\n") == 1 and "--cpu-offload-gb" in refused.stderr


# --- data-parallel attention (--enable-dp-attention --dp-size N) -------------------------------------

DEEPSEEK = "DeepSeek-V3"


def _dp(tp: int = 8, batch: int = 16, **settings: object) -> tuple[Candidate, Workload]:
    spec, h200 = catalog_spec(DEEPSEEK), find_gpu("H200")
    work = workload(spec, 32768, batch, engine_name="sglang", **settings)
    return engine("sglang").evaluate(spec, h200, tp, work), work


def test_dp_attention_replicates_attention_and_embedding_and_multiplies_the_kv_pools() -> None:
    """Worked example, DeepSeek-V3 FP8 on 8x H200, --enable-dp-attention --dp-size 8 (attn_tp 1):
    each GPU holds all 10.49 B sharded attention parameters (FP8, 1 byte) instead of 1/8 of them,
    and the whole bf16 input embedding (0.927 B x 2 bytes) instead of 1/8: + 10.06 GiB. Each of the
    8 groups has its own KV pool (an MLA latent per token, whole on each GPU: 61 layers x 576 x 2
    bytes), so the instance holds 8 pools' tokens."""
    spec = catalog_spec(DEEPSEEK)
    plain, _ = _dp()
    dp8, work = _dp(enable_dp_attention=True, dp_size=8)
    assert plain.per_gpu and dp8.per_gpu and plain.fits and dp8.fits
    counts = spec.params
    extra = ((counts.attention - counts.replicated_attention) * 1 + counts.embedding * 2) * (1 - 1 / 8)
    shift = dp8.per_gpu.weights_bytes - plain.per_gpu.weights_bytes
    assert shift == pytest.approx(extra, rel=1e-3) and shift / GIB == pytest.approx(10.06, abs=0.01)
    cell = kvcache.kv_cache_bytes_per_token(spec, work.kv_bytes, 1)
    assert cell == 61 * 576 * 2
    pool = dp8.per_gpu.usable_bytes - dp8.per_gpu.weights_bytes
    assert dp8.kv_cache_capacity_tokens == 8 * (pool // cell)
    assert dp8.max_concurrency == pytest.approx(8 * (pool // cell) / 32768, abs=0.01)


def test_dp_attention_reserves_more_in_the_default_fraction() -> None:
    """0.5.3+ formula: reserved += cuda_graph_max_bs x dp x 3 MiB, + x 1.5 above 300 (H200: graph 512):
    512 x 8 x 4.5 = 18,432 MiB more than without DP attention on 143,771 MiB: -0.128."""
    spec, h200 = catalog_spec(DEEPSEEK), find_gpu("H200")
    plain = engine("sglang").effective_settings(spec, h200, 8, workload(spec, 4096, engine_name="sglang"))
    work = workload(spec, 4096, engine_name="sglang", enable_dp_attention=True, dp_size=8)
    dp8 = engine("sglang").effective_settings(spec, h200, 8, work)
    assert dp8["cuda_graph_max_bs"] == 512 and (dp8["dp_size"], dp8["attn_tp_size"]) == (8, 1)
    drop = float(plain["mem_fraction_static"]) - float(dp8["mem_fraction_static"])
    assert drop == pytest.approx(512 * 8 * 4.5 / h200.memory_mib, abs=0.001)


def test_each_group_holds_its_share_of_the_requests() -> None:
    """17 requests over 2 groups: the fuller group holds ceil(17 / 2) = 9 of them."""
    spec = catalog_spec(DEEPSEEK)
    dp2, work = _dp(batch=17, enable_dp_attention=True, dp_size=2)
    assert dp2.per_gpu
    cell = kvcache.kv_cache_bytes_per_token(spec, work.kv_bytes, 4)
    assert dp2.per_gpu.kv_cache_bytes == 9 * 32768 * cell


def test_dp_size_must_divide_tp_and_needs_the_switch() -> None:
    small, _ = _dp(tp=4, enable_dp_attention=True, dp_size=8)
    assert not small.fits and "tp_size must be divisible by dp_size" in str(small.reason)
    with pytest.raises(InputError, match="must divide"):
        _dp(enable_dp_attention=True, dp_size=3)
    with pytest.raises(InputError, match="without --enable-dp-attention"):
        _dp(dp_size=8)


def test_dp_attention_on_the_command_line() -> None:
    args = ("fit", DEEPSEEK, "--gpu", "H200", "--gpus", "8", "--engine", "sglang", "--ctx", "32k")
    result = run_in_process(*args, "--enable-dp-attention", "--dp-size", "8", "--json")
    assert result.code == 0, result.stderr
    data = json.loads(result.stdout)
    engine_keys = data["workload"]["engine"]
    assert engine_keys["enable_dp_attention"] is True and engine_keys["dp_size"] == 8
    assert any("--enable-dp-attention" in note for note in data["assumptions"]["notes"])
    refused = run_in_process(*args, "--enable-dp-attention", "--dp-size", "3")
    assert refused.code == 2 and refused.stderr.count("\n") == 1 and "--dp-size" in refused.stderr
    assert refused.stdout == ""
    serve = run_in_process(
        "serve", DEEPSEEK, "--gpu", "H200", "--gpus", "8", "--engine", "sglang", "--enable-dp-attention",
        "--dp-size", "8", "--users", "16", "--json",
    )  # fmt: skip
    command = json.loads(serve.stdout)["launch"]["sglang"]["command"]
    assert "--enable-dp-attention" in command and "--dp-size 8" in command


def test_dp_attention_before_the_modelled_formula_is_refused() -> None:
    spec = catalog_spec(DEEPSEEK)
    work = workload(spec, 4096, engine_name="sglang", enable_dp_attention=True, dp_size=8)
    old = replace(work, release=SGLANG.resolve("0.4.6"))
    with pytest.raises(InputError, match="modelled from SGLang 0.5.3"):
        engine("sglang").evaluate(spec, find_gpu("H200"), 8, old)
