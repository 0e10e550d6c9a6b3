"""SGLang `--cpu-offload-gb` (the field vLLM's shares), and the PCIe copy it costs every step.

Rule (sgl-project/sglang python/sglang/srt/utils/offloader.py, `create_offloader`: cpu_offload_gb > 0
gives `OffloaderV1(cpu_offload_max_bytes=int(cpu_offload_gb * 1024**3))`, whose `wrap_modules` runs
`maybe_offload_to_cpu` over the decoder layers `make_layers` builds): parameters move to pinned CPU
memory, layer after layer, until the bytes moved reach the budget; the forward pass copies them to
the GPU (`v.to(device, non_blocking=True)` then `functional_call`) every time."""

from __future__ import annotations

import json

import pytest

from gpusize.core.engines import engine
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
