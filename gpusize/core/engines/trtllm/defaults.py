"""TensorRT-LLM's defaults for the settings gpusize reads (pure), as the 1.x releases declare them."""

from __future__ import annotations

from gpusize.core.workload import Workload

__all__ = [
    "CUDA_GRAPH_MAX_BATCH_SIZE",
    "FREE_GPU_MEMORY_FRACTION",
    "MAX_BATCH_SIZE",
    "MAX_NUM_TOKENS",
    "MIN_COMPUTE_CAPABILITY",
    "THIN_MARGIN",
    "TOKENS_PER_BLOCK",
    "cuda_graph_batch_sizes",
    "free_fraction",
    "max_batch_size",
    "max_num_tokens",
    "tokens_per_block",
]

#: KvCacheConfig.free_gpu_memory_fraction default (tensorrt_llm/llmapi/llm_args.py; trtllm-serve's
#: --kv_cache_free_gpu_memory_fraction default, tensorrt_llm/commands/serve.py): 0.9 in every 1.x release.
FREE_GPU_MEMORY_FRACTION = 0.9
#: BuildConfig.max_batch_size and max_num_tokens defaults (tensorrt_llm/builder.py), the defaults of
#: trtllm-serve's --max_batch_size and --max_num_tokens in every 1.x release.
MAX_BATCH_SIZE = 2048
MAX_NUM_TOKENS = 8192
#: KvCacheConfig.tokens_per_block default (llm_args.py): 32 tokens per KV block.
TOKENS_PER_BLOCK = 32
#: CudaGraphConfig: graphs are on by default (cuda_graph_config = CudaGraphConfig()), for generation
#: batch sizes up to max_batch_size 0 -> 128 (llm_args.py CudaGraphConfig.validate, capped by the
#: engine's max_batch_size).
CUDA_GRAPH_MAX_BATCH_SIZE = 128

#: The oldest compute capability TensorRT-LLM develops and tests for: Ampere (SM80), with Ada, Hopper
#: and Blackwell (https://nvidia.github.io/TensorRT-LLM/supported-hardware.html; the 0.18 support
#: matrix: "Ampere (SM80, SM86)"); NVIDIA GPUs only (CUDA, no ROCm build).
MIN_COMPUTE_CAPABILITY = (8, 0)
#: The margin below which a fit is flagged thin: gpusize's error on the public logs it is calibrated on
#: (within 3 %), as for vLLM and SGLang.
THIN_MARGIN = 0.03


def free_fraction(work: Workload) -> float:
    """The kv_cache_free_gpu_memory_fraction the plan runs with (the user's, else 0.9)."""
    return work.engine.kv_cache_free_gpu_memory_fraction or FREE_GPU_MEMORY_FRACTION


def max_batch_size(work: Workload) -> int:
    return work.engine.max_batch_size or MAX_BATCH_SIZE


def max_num_tokens(work: Workload) -> int:
    return work.engine.max_num_tokens or MAX_NUM_TOKENS


def tokens_per_block(work: Workload) -> int:
    return work.engine.tokens_per_block or TOKENS_PER_BLOCK


def cuda_graph_batch_sizes(max_batch_size: int) -> tuple[int, ...]:
    """The generation batch sizes captured as CUDA graphs by default (llm_args.py
    CudaGraphConfig._generate_cuda_graph_batch_sizes without padding: 1..31, 32, 64, 128, then powers of
    two, those <= the graph maximum, which is min(128, max_batch_size)); a batch between two sizes runs
    eagerly unless cuda_graph_config.enable_padding rounds it up."""
    top = min(CUDA_GRAPH_MAX_BATCH_SIZE, max_batch_size)
    sizes = sorted(s for s in (*range(1, 32), 32, 64, 128) if s <= top)
    return tuple(sizes if sizes[-1] == top else [*sizes, top])
