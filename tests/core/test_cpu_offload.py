"""vLLM (and SGLang) `--cpu-offload-gb`: a setting added by its declaration (core/settings/) and
its use in the engine (core/engines/vllm/pool.py) alone; the option, the range check, the JSON key
and the launch flag follow from the declaration.

Rule (vllm/model_executor/models/utils.py, `maybe_offload_to_cpu`, called by `make_layers` for each
decoder layer): each GPU worker moves decoder-layer parameters, one by one in model order, to pinned
CPU memory until the bytes moved reach cpu_offload_gb GiB (per parameter, not whole layers)."""

from __future__ import annotations

import json

import pytest

from gpusize.core.engines import engine
from gpusize.core.engines.vllm.pool import offloaded_bytes
from gpusize.core.weights import estimated_layers
from gpusize.errors import InputError
from gpusize.sources.catalog import find_gpu
from gpusize.units import GIB
from tests.helpers import catalog_spec, run_in_process, workload

MODEL = "Llama-3.3-70B"


@pytest.mark.parametrize("tp", [1, 2, 4])
@pytest.mark.parametrize("gib", [0.5, 20, 40])
def test_parameters_move_until_the_budget_is_reached(tp: int, gib: float) -> None:
    """Per-parameter, not whole layers ("one module might have some parameters offloaded and some
    not"): the budget itself, unless the decoder layers hold less."""
    spec = catalog_spec(MODEL)
    work = workload(spec, 8192, cpu_offload_gb=gib)
    layers = estimated_layers(spec, work.weights).layer_bytes
    every = sum(layer // tp for layer in layers)
    moved = offloaded_bytes(spec, work, tp)
    # only decoder layers move (make_layers); never the embeddings
    assert moved == min(int(gib * GIB), every)


def test_offloaded_weights_leave_the_gpu_and_are_held_by_the_host() -> None:
    spec, h100 = catalog_spec(MODEL), find_gpu("H100")
    plain = engine("vllm").evaluate(spec, h100, 2, workload(spec, 8192))
    moved = engine("vllm").evaluate(spec, h100, 2, workload(spec, 8192, cpu_offload_gb=20))
    assert plain.per_gpu and moved.per_gpu
    shift = plain.per_gpu.weights_bytes - moved.per_gpu.weights_bytes
    assert shift == offloaded_bytes(spec, workload(spec, 8192, cpu_offload_gb=20), 2) == 20 * GIB
    assert moved.host_bytes == 2 * shift and plain.host_bytes is None
    assert (moved.kv_cache_capacity_tokens or 0) > (plain.kv_cache_capacity_tokens or 0)


def test_no_offload_moves_nothing() -> None:
    spec = catalog_spec(MODEL)
    assert offloaded_bytes(spec, workload(spec, 8192), 1) == 0
    assert offloaded_bytes(spec, workload(spec, 8192, cpu_offload_gb=0.0), 1) == 0


def test_it_is_a_setting_of_vllm_and_sglang_only() -> None:
    spec = catalog_spec(MODEL)
    assert workload(spec, 8192, engine_name="sglang", cpu_offload_gb=4).engine.cpu_offload_gb == 4
    with pytest.raises(InputError, match="--cpu-offload-gb is a setting of --engine vllm or sglang"):
        workload(spec, 8192, engine_name="llamacpp", cpu_offload_gb=4)


def test_the_command_line_json_and_launch_flag_follow_the_declaration() -> None:
    result = run_in_process(
        "serve", MODEL, "--gpu", "H100", "--gpus", "2", "--cpu-offload-gb", "20", "--users", "4", "--json"
    )
    data = json.loads(result.stdout)
    assert result.code == 0 and data["workload"]["engine"]["cpu_offload_gb"] == 20.0
    assert "--cpu-offload-gb 20" in data["launch"]["vllm"]["command"]
    refused = run_in_process("fit", MODEL, "--cpu-offload-gb", "-1")
    assert refused.code == 2 and "--cpu-offload-gb" in refused.stderr
