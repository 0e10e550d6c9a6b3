"""SGLang's state pool for recurrent hybrids (core/engines/sglang_mamba.py), worked from SGLang's code:
mamba_utils.py `Mamba2CacheParams.mamba_cache_per_req` (conv bf16 + temporal state float32 by default,
times the recurrent layers) and model_runner.py `handle_max_mamba_cache` (the state pool takes
mamba_full_memory_ratio / (1 + ratio) = 0.9 / 1.9 of the static budget left after the weights)."""

from __future__ import annotations

import json

from gpusize.core.engines import sglang
from gpusize.core.engines.sglang_mamba import mamba_cache_per_req, sglang_mamba_pool
from gpusize.core.parse import parse_config
from gpusize.core.spec import ModelSpec
from gpusize.sources.catalog import find_gpu
from tests.conftest import ROOT
from tests.helpers import workload

CONFIGS = ROOT / "tests" / "data" / "reference" / "configs"
GIB = 1 << 30


def _spec(name: str) -> ModelSpec:
    return parse_config(json.loads((CONFIGS / f"{name}.json").read_text())["config"])


def test_state_slot_per_request_per_gpu() -> None:
    # Qwen3.5-27B: 48 Gated DeltaNet layers, conv (3, 10240 / tp) bf16 + (48 / tp, 128, 128) fp32
    qwen = _spec("Qwen__Qwen3.5-27B")
    assert {tp: mamba_cache_per_req(qwen, tp) for tp in (1, 2, 4, 8)} == {
        tp: 48 * (3 * 10240 // tp * 2 + 48 // tp * 128 * 128 * 4) for tp in (1, 2, 4, 8)
    }
    # Nemotron-3 Nano: 23 Mamba-2 layers, conv (3, (4096 + 2 x 8 x 128) / tp) bf16 + (64 / tp, 64, 128) fp32
    nano = _spec("nvidia__NVIDIA-Nemotron-3-Nano-30B-A3B-BF16")
    assert mamba_cache_per_req(nano, 1) == 23 * (3 * 6144 * 2 + 64 * 64 * 128 * 4) == 23 * 2_134_016


def test_pool_takes_nine_nineteenths_of_the_rest_in_whole_slots() -> None:
    qwen = _spec("Qwen__Qwen3.5-27B")
    (pool,) = sglang_mamba_pool(qwen, 2, 40 * GIB)
    per_req = 48 * 1_603_584  # 76,972,032 B at TP 2
    assert pool.name == "mamba_pool"
    assert pool.bytes == int(40 * GIB * 0.9 / 1.9 // per_req) * per_req == 264 * per_req
    assert "264 slots" in pool.how


def test_attention_models_have_no_state_pool() -> None:
    assert sglang_mamba_pool(_spec("meta-llama__Llama-3.2-1B-Instruct"), 1, 40 * GIB) == ()


def test_sglang_plan_holds_the_pool_before_the_kv_cache() -> None:
    qwen = _spec("Qwen__Qwen3.5-27B")
    work = workload(qwen, 32768, engine_name="sglang")
    got = sglang.evaluate(qwen, find_gpu("H100"), 2, work)
    assert got.per_gpu is not None
    (pool,) = [r for r in got.per_gpu.reserves if r.name == "mamba_pool"]
    rest = got.per_gpu.usable_bytes - got.per_gpu.weights_bytes  # no other reserve here
    assert pool.bytes == int(rest * 0.9 / 1.9 // (48 * 1_603_584)) * 48 * 1_603_584
    # the KV pool is what the state pool leaves
    cell = 16 * 2 * 4 // 2 * 256 * 2  # 16 attention layers, 4 KV heads of 256 over TP 2, bf16
    assert got.kv_cache_capacity_tokens == (rest - pool.bytes) // cell


def test_flags_set_the_slots_and_the_state_dtype() -> None:
    qwen = _spec("Qwen__Qwen3.5-27B")
    work = workload(qwen, 32768, engine_name="sglang", max_mamba_cache_size=64, mamba_ssm_dtype="bfloat16")
    per_req = 48 * (3 * 10240 // 2 * 2 + 48 // 2 * 128 * 128 * 2)  # TP 2, the state in bf16
    assert mamba_cache_per_req(qwen, 2, work) == per_req
    (pool,) = sglang_mamba_pool(qwen, 2, 40 * GIB, work)
    assert pool.bytes == 64 * per_req and "--max-mamba-cache-size" in pool.how
