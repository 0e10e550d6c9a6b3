"""vLLM's own engine settings: memory share, scheduler, graphs, sampler and engine generation (pure).

The LoRA, offload, multimodal and speculative flags vLLM shares with SGLang are in `reserves`."""

from __future__ import annotations

from gpusize.core.settings.declaration import setting, settings_part

__all__ = ["VLLM_DATA_PARALLEL", "VllmSettings"]

#: vLLM's --data-parallel-size / -dp: first in the 0.8.3 wheel's engine/arg_utils.py ("Number of data
#: parallel replicas. MoE layers will be sharded according to the product of the tensor-parallel-size
#: and data-parallel-size"; absent in 0.8.2, where DP was the VLLM_DP_SIZE environment only), served
#: on one node by V1's DPAsyncMPClient, one engine core per rank (v1/engine/core_client.py; read with
#: bench/release_sources.py). Across servers from 0.9.0 (serving.nodes.MULTINODE_SINCE).
VLLM_DATA_PARALLEL = "0.8.3"


@settings_part
class VllmSettings:
    """vLLM's settings (fields of `EngineSettings`)."""

    gpu_memory_utilization: float | None = setting(
        default=None,
        flag="--gpu-memory-utilization",
        engines=("vllm",),
        help="fraction of each GPU the engine may use (default 0.9; 0.92 from 0.20).",
        low=0,
        high=1,
    )
    max_num_seqs: int | None = setting(
        default=None,
        flag="--max-num-seqs",
        engines=("vllm",),
        help="most sequences per step.",
        low=1,
        high=1 << 20,
        launch="--max-num-seqs",
    )
    max_num_batched_tokens: int | None = setting(
        default=None,
        flag="--max-num-batched-tokens",
        engines=("vllm",),
        help="most tokens per step (chunked prefill size).",
        low=1,
        high=1 << 24,
        launch="--max-num-batched-tokens",
    )
    enforce_eager: bool = setting(
        default=False,
        flag="--enforce-eager",
        engines=("vllm",),
        help="no CUDA graphs.",
        launch="--enforce-eager",
    )
    enable_expert_parallel: bool = setting(
        default=False,
        flag="--enable-expert-parallel",
        engines=("vllm",),
        help="whole experts per GPU instead of slicing each by TP.",
        launch="--enable-expert-parallel",
        since="0.8.0",  # the first vLLM wheel whose arg_utils.py declares it
    )
    #: vLLM data parallel on one server (core/engines/vllm/data_parallel.py): dp engine ranks of
    #: --tensor-parallel-size GPUs each, every rank with its own scheduler and KV cache; a MoE model's
    #: routed experts spread over all dp x tp GPUs (sliced, or whole with --enable-expert-parallel).
    #: gpusize's --gpus counts the server's GPUs (dp x tp); the command prints vLLM's own split.
    data_parallel_size: int | None = setting(
        default=None,
        flag="--data-parallel-size",
        engines=("vllm",),
        help="engine ranks on the server's GPUs, each --gpus / DP wide with its own scheduler and KV "
        "cache (a MoE model's experts over all of them; with --enable-expert-parallel, whole).",
        low=1,
        high=8,
        launch="--data-parallel-size",
        since=VLLM_DATA_PARALLEL,
    )
    #: vLLM 0.34.0's extensible KV cache (on by default on CUDA and ROCm: `core/engines/vllm/extensible.py`);
    #: False: the estimate-based sizing of 0.33.0 at its 0.92 default utilization. None: the default.
    enable_extensible_kv_cache: bool | None = setting(
        default=None,
        flag="--enable-extensible-kv-cache",
        engines=("vllm",),
        help="the KV cache sized after warmup from the memory free (default from 0.34.0); with "
        "--no-enable-extensible-kv-cache, the estimate-based sizing at 0.92.",
        launch="--enable-extensible-kv-cache",
        launch_off="--no-enable-extensible-kv-cache",
        since="0.34.0",  # vllm/config/cache.py CacheConfig.enable_extensible_kv_cache, absent in 0.33.0
    )
    #: vLLM samples top-k/top-p with FlashInfer (VLLM_USE_FLASHINFER_SAMPLER=1; up to 0.11.0 whenever
    #: FlashInfer is installed, as in the vllm/vllm-openai image) instead of PyTorch.
    flashinfer_sampler: bool = setting(
        default=False,
        flag="--flashinfer-sampler",
        engines=("vllm",),
        help="top-k/top-p sampled by FlashInfer (VLLM_USE_FLASHINFER_SAMPLER=1; up to 0.11.0 whenever "
        "FlashInfer is installed, as in the vllm/vllm-openai image): a smaller start-up peak before 0.17.",
    )
    #: vLLM's engine: V1 (True) or V0 (False), VLLM_USE_V1 (vllm/envs.py; default V0 up to 0.7.3, V1
    #: from 0.8.0; V0 removed in 0.11.0). None: the release's default.
    vllm_use_v1: bool | None = setting(
        default=None,
        flag="--vllm-use-v1",
        engines=("vllm",),
        help="the V1 engine (VLLM_USE_V1=1, default from 0.8.0) or, with --no-vllm-use-v1, V0 "
        "(VLLM_USE_V1=0, default up to 0.7.3, removed in 0.11.0).",
        env="VLLM_USE_V1",
        env_until="0.11.1",  # vllm/envs.py reads it up to the 0.11.0 wheel, not from 0.11.1 on
    )
