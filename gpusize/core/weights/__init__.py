"""Weight formats and weight bytes per GPU, in integer bytes (pure).

A WeightFormat (`formats`) says how an engine stores the weights: the checkpoint's own quantization
(`checkpoint`) or the `--dtype` the user asked for (`dtype`); `weights_bytes` (`per_gpu`) applies it
to the parameter counts by role, with the tensor-parallel sharding and replication rules of vLLM's
linear layers. Exact, from the config. Every name is importable from `gpusize.core.weights`.
"""

from __future__ import annotations

from gpusize.core.weights.checkpoint import CHECKPOINT_TOLERANCE, checkpoint_agreement
from gpusize.core.weights.dtype import gguf_weight_format, weight_format
from gpusize.core.weights.formats import (
    BPW_RANGE,
    FP4_EXPERT_BYTES,
    FP8_CHANNEL_SCALE_BYTES,
    INT4_GROUP_SIZE,
    MXFP4_EXPERT_PAD,
    NVFP4_GROUP,
    WeightFormat,
    activation_dtype,
    bits_per_weight,
)
from gpusize.core.weights.per_gpu import (
    StoredLayers,
    data_parallel_weights_bytes,
    estimated_layers,
    linear_bytes_per_gpu,
    rope_cache_bytes,
    routed_expert_bytes,
    weights_bytes,
)

__all__ = [
    "BPW_RANGE",
    "CHECKPOINT_TOLERANCE",
    "FP4_EXPERT_BYTES",
    "FP8_CHANNEL_SCALE_BYTES",
    "INT4_GROUP_SIZE",
    "MXFP4_EXPERT_PAD",
    "NVFP4_GROUP",
    "StoredLayers",
    "WeightFormat",
    "activation_dtype",
    "bits_per_weight",
    "checkpoint_agreement",
    "data_parallel_weights_bytes",
    "estimated_layers",
    "gguf_weight_format",
    "linear_bytes_per_gpu",
    "rope_cache_bytes",
    "routed_expert_bytes",
    "weight_format",
    "weights_bytes",
]
