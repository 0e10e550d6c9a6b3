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


def _catalog_specs() -> list[tuple[str, object]]:
    from gpusize.core.parse import parse_config
    from gpusize.sources.catalog import Catalogs

    specs = []
    for entry in Catalogs.with_env().models():
        try:
            specs.append((entry.name, parse_config(entry.config)))
        except InputError:  # a config the parser refuses says so elsewhere (tests/sources)
            continue
    return specs


@pytest.mark.parametrize("dtype", ["auto", "fp8"])
def test_the_layers_embeddings_and_head_are_the_whole_weights(dtype: str) -> None:
    """The per-layer bytes that `--cpu-offload-gb` (and llama.cpp's `-ngl`) move are the weights' own
    accounting, role by role: with the token embedding and the output head they sum to
    `weights_bytes` (less the vision tower and the rope table, which no layer holds) for every bundled
    model, mixed formats included (FP4 experts beside FP8 attention, NVFP4 heads, MXFP4 padding)."""
    from gpusize.core.weights import weights_bytes
    from gpusize.core.weights.per_gpu import rope_cache_bytes

    checked = 0
    for name, spec in _catalog_specs():
        try:
            work = workload(spec, 1024, dtype=dtype)
        except InputError:  # a dtype this model's checkpoint cannot take, or a context it refuses
            continue
        fmt = work.weights
        stored = estimated_layers(spec, fmt)
        parts = (
            sum(stored.layer_bytes)
            + stored.token_embd_bytes
            + (stored.output_bytes if spec.params.lm_head else 0)
        )
        whole = (
            weights_bytes(spec, fmt, 1) - spec.params.vision * fmt.other_bytes - rope_cache_bytes(spec, fmt)
        )
        assert parts == pytest.approx(whole, rel=1e-4, abs=1024), (name, fmt.name)
        checked += 1
    assert checked > 150


def test_offloading_everything_leaves_the_embeddings_and_head() -> None:
    """DeepSeek-V4-Flash (FP8 attention, FP4 experts) with 200 GiB offloaded on one RTX4090: every
    decoder layer moves, the embeddings and head stay. One `linear_bytes` for every role made its
    layers 1.5x its FP4 experts, and the GPU's weights came out at -54.1 GiB."""
    spec = catalog_spec("DeepSeek-V4-Flash")
    work = workload(spec, 8192, cpu_offload_gb=200)
    gpu = find_gpu("RTX4090")
    fit = engine("vllm").evaluate(spec, gpu, 1, work)
    stored = estimated_layers(spec, work.weights)
    assert offloaded_bytes(spec, work, 1) == sum(stored.layer_bytes) < 200 * GIB
    from gpusize.core.weights import weights_bytes

    left = weights_bytes(spec, work.weights, 1) - sum(stored.layer_bytes)
    assert fit.fits and fit.per_gpu.weights_bytes == left >= stored.token_embd_bytes + stored.output_bytes
