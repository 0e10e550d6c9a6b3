"""TensorRT-LLM's engine settings under trtllm-serve's own flag names (pure); those without a flag are
written to the --extra_llm_api_options YAML (core/engines/trtllm/)."""

from __future__ import annotations

from gpusize.core.settings.declaration import setting, settings_part

__all__ = ["TrtllmSettings"]


@settings_part
class TrtllmSettings:
    """TensorRT-LLM's settings (fields of `EngineSettings`)."""

    #: TensorRT-LLM (core/engines/trtllm.py), under trtllm-serve's own flag names
    #: (tensorrt_llm/commands/serve.py, the same spellings in every 1.x release).
    kv_cache_free_gpu_memory_fraction: float | None = setting(
        default=None,
        flag="--kv_cache_free_gpu_memory_fraction",
        engines=("trtllm",),
        help="fraction of the memory free after the profiling pass that the KV cache takes (default 0.9).",
        low=0,
        high=1,
    )
    max_batch_size: int | None = setting(
        default=None,
        flag="--max_batch_size",
        engines=("trtllm",),
        help="most requests scheduled at once (default 2048).",
        low=1,
        high=1 << 20,
        launch="--max_batch_size",
    )
    max_num_tokens: int | None = setting(
        default=None,
        flag="--max_num_tokens",
        engines=("trtllm",),
        help="most batched tokens per step, the profiling pass's size (default 8192).",
        low=1,
        high=1 << 24,
        launch="--max_num_tokens",
    )
    pp_size: int | None = setting(
        default=None,
        flag="--pp_size",
        engines=("trtllm",),
        help="pipeline stages (must divide --gpus; tp_size = GPUs / pp_size).",
        low=1,
        high=64,
        launch="--pp_size",
    )
    ep_size: int | None = setting(
        default=None,
        flag="--ep_size",
        engines=("trtllm",),
        help="expert-parallel ranks of an MoE inside the TP group (must divide tp_size and the experts).",
        low=1,
        high=1024,
        launch="--ep_size",
    )
    #: No trtllm-serve flag: enable_attention_dp in the --extra_llm_api_options YAML (engines/trtllm/dp.py).
    enable_attention_dp: bool = setting(
        default=False,
        flag="--enable_attention_dp",
        engines=("trtllm",),
        help="attention data parallel (enable_attention_dp in the extra options YAML): each GPU attends to "
        "its own requests with its own KV pool; MoE and MLP stay tensor or expert parallel.",
    )
    #: No trtllm-serve flag: kv_cache_config.tokens_per_block in the --extra_llm_api_options YAML.
    tokens_per_block: int | None = setting(
        default=None,
        flag="--tokens_per_block",
        engines=("trtllm",),
        help="tokens per KV block (default 32; kv_cache_config.tokens_per_block in the extra options YAML).",
        low=1,
        high=1024,
    )
