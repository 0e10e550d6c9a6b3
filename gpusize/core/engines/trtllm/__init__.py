"""TensorRT-LLM's memory model (pure): the PyTorch backend of `trtllm-serve` and the LLM API, releases
`core.releases.TRTLLM` (1.0.0 to 1.2.1, every 1.x wheel on PyPI).

How the engine sizes its KV pool, read from tensorrt_llm/_torch/pyexecutor/_util.py (KvCacheCreator:
`configure_kv_cache_capacity`, `_cal_max_memory`), unchanged in formula from 1.0 to 1.2.1: it loads the
weights, runs a profiling pass of dummy context requests that fill `max_num_tokens` (each at most
max_seq_len - 1 tokens long) with CUDA graphs captured, then measures the peak (torch peak + memory
used outside torch: CUDA context, NCCL, CUDA graphs, workspaces, and whatever other processes hold,
since it reads the device's free memory) and gives the KV cache

    kv_bytes = kv_cache_free_gpu_memory_fraction x (device total - peak)

(the temporary KV blocks of the profiling pass are added back, so they cancel). The fraction is of
what is free after the peak, not of the device: the default 0.9 leaves 10 % of that free. The pool is
`kv_bytes // bytes per token` tokens (resource_manager.py get_cache_size_per_token: layers x 2 x KV
heads / tp x head_dim x dtype bytes; MLA: the latent), rounded up to whole blocks of
`tokens_per_block` (KvCacheConfig, default 32) by the C++ KV cache manager ('primary blocks' x 32 in
the logs). A pool smaller than max_seq_len does not stop the engine: it lowers max_seq_len to the
pool ('Adjusted max_seq_len to ...', resource_manager.py) and starts.

The peak is modelled as weights + the profiling pass's activations + TRTLLM_RUNTIME_BYTES + the CUDA
context (runtime.cuda_context_bytes, NCCL included at TP >= 2); TRTLLM_RUNTIME_BYTES is fitted on the
public start-up logs of tests/data/trtllm_records.yaml. Parallelism (mapping.py, llm_args.py):
`--tp_size` x `--pp_size` GPUs, pipeline stages holding 1/pp of the layers each; `--ep_size` splits the
experts of an MoE among ranks inside the TP group (it must divide tp_size and the expert count), the
rest of the MoE tensor parallel (moe_tp_size = tp_size / ep_size), the same bytes per GPU.
"""

from __future__ import annotations

from gpusize.core.engines.base import EngineModel
from gpusize.core.engines.trtllm.defaults import (
    CUDA_GRAPH_MAX_BATCH_SIZE,
    FREE_GPU_MEMORY_FRACTION,
    MAX_BATCH_SIZE,
    MAX_NUM_TOKENS,
    THIN_MARGIN,
    TOKENS_PER_BLOCK,
    cuda_graph_batch_sizes,
    free_fraction,
    max_batch_size,
    max_num_tokens,
    tokens_per_block,
)
from gpusize.core.engines.trtllm.dp import attention_dp
from gpusize.core.engines.trtllm.pool import (
    ACTIVATION_HIDDEN_COPIES,
    ACTIVATION_MLP_COPIES,
    TRTLLM_RUNTIME_BYTES,
    activation_bytes,
    evaluate,
    hardware_problem,
    kv_pool_bytes,
    parallel_problem,
    pool_tokens,
    recurrent_state,
)
from gpusize.core.gpu import GpuSpec
from gpusize.core.levers import Levers
from gpusize.core.releases import TRTLLM
from gpusize.core.spec import ModelSpec
from gpusize.core.workload import Workload

__all__ = [
    "ACTIVATION_HIDDEN_COPIES",
    "ACTIVATION_MLP_COPIES",
    "CUDA_GRAPH_MAX_BATCH_SIZE",
    "ENGINE",
    "FREE_GPU_MEMORY_FRACTION",
    "LEVERS",
    "MAX_BATCH_SIZE",
    "MAX_NUM_TOKENS",
    "THIN_MARGIN",
    "TOKENS_PER_BLOCK",
    "TRTLLM_RUNTIME_BYTES",
    "activation_bytes",
    "cuda_graph_batch_sizes",
    "effective_settings",
    "evaluate",
    "free_fraction",
    "hardware_problem",
    "kv_pool_bytes",
    "model_notes",
    "parallel_problem",
    "pool_tokens",
    "recurrent_state",
]


def effective_settings(spec: ModelSpec, gpu: GpuSpec, n: int, work: Workload) -> dict[str, float | int | str]:
    pp = work.engine.pp_size or 1
    batch = max_batch_size(work)
    graphs = cuda_graph_batch_sizes(batch)
    out: dict[str, float | int | str] = {
        "tp_size": n // pp,
        "pp_size": pp,
        "kv_cache_free_gpu_memory_fraction": free_fraction(work),
        "max_batch_size": batch,
        "max_num_tokens": max_num_tokens(work),
        "max_seq_len": work.context_tokens,
        "tokens_per_block": tokens_per_block(work),
        "cuda_graphs": f"{len(graphs)} batch sizes, 1-{graphs[-1]}",
    }
    if work.engine.ep_size:
        out["ep_size"] = work.engine.ep_size
    if work.engine.enable_attention_dp:
        out["attention_dp"] = f"on ({n // pp} KV pools)"
    return out


def model_notes(spec: ModelSpec, work: Workload) -> tuple[str, ...]:
    """What TensorRT-LLM does with this model that the answer depends on."""
    notes = [
        "KV pool = kv_cache_free_gpu_memory_fraction x (device total - the profiling pass's peak), in "
        f"{tokens_per_block(work)}-token blocks; a pool shorter than max_seq_len lowers max_seq_len",
    ]
    if work.context_tokens > max_num_tokens(work):
        notes.append(
            f"TensorRT-LLM rejects a prompt longer than --max_num_tokens {max_num_tokens(work):,} unless "
            "chunked prefill is on (llmapi/llm.py _check_arguments): pass enable_chunked_prefill: true in "
            "--extra_llm_api_options, or a larger --max_num_tokens (a larger profiling pass)"
        )
    if work.engine.enable_attention_dp:
        notes.append(
            "enable_attention_dp: attention, the input embedding and the LM head whole on every GPU, MoE "
            "and MLP still over all tp; each GPU keeps its own KV pool (all KV heads) for its own requests "
            "(KV capacity is the instance's, all pools); max_batch_size counts per GPU"
        )
    if any(layer.window for layer in spec.attention_layers):
        notes.append(
            "sliding-window layers are sized as full attention (the KV estimate counts every layer's "
            "tokens; TensorRT-LLM's variable-window pools are not modelled)"
        )
    return tuple(notes)


#: Fix-suggestion levers (core/levers.py) under trtllm-serve's own flag names; TensorRT-LLM does not
#: quantize a 16-bit checkpoint while loading (a ModelOpt FP8/FP4 checkpoint is its way).
LEVERS = Levers(
    count_flag="--tp_size",
    context_flag="--max_seq_len",
    kv_note="trtllm-serve takes it as kv_cache_config: {{dtype: {kind}}} in the --extra_llm_api_options YAML",
    thin_margin=THIN_MARGIN,
)

ENGINE = EngineModel(
    name="trtllm",
    version=f"TensorRT-LLM {TRTLLM.newest}",
    note="TensorRT-LLM (PyTorch backend): KV pool = kv_cache_free_gpu_memory_fraction x (device total - "
    "profiling peak of weights + max_num_tokens activations + CUDA graphs and runtime), 32-token blocks",
    evaluate=evaluate,
    effective_settings=effective_settings,
    releases=TRTLLM,
    levers=LEVERS,
    budget=lambda spec, gpu, n, work: free_fraction(work),
    max_sequences=lambda gpu, work: max_batch_size(work),  # per GPU under attention DP
    prefill_budget=lambda gpu, work: max_num_tokens(work),
    pages_kv=True,
    serves=True,
    notes=model_notes,
    attention_dp=attention_dp,
    prefix_cache="TensorRT-LLM's KV cache block reuse (kv_cache_config.enable_block_reuse, on by default "
    "in the PyTorch backend)",
)
