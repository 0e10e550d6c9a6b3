"""TensorRT-LLM attention data parallel (`enable_attention_dp: true` in --extra_llm_api_options), pure.

Layout (tensorrt_llm/mapping.py, llm_args.py `enable_attention_dp`): every one of the tp_size GPUs
runs attention for its own requests, so
- attention weights are whole on every GPU (attention TP size 1), and so are the input embedding
  and, unless `enable_lm_head_tp_in_adp` (default False), the LM head ("replicated bf16 lm_head");
- MoE and dense MLP layers stay tensor or expert parallel over all tp GPUs (--ep_size);
- the KV cache of a request lives on one GPU with every KV head (resource_manager.py
  get_cache_size_per_token: `tp_size = 1 if mapping.enable_attention_dp`), each GPU keeping its own
  pool: the instance holds tp_size pools, and max_batch_size is per GPU;
- the profiling pass runs max_num_tokens of dummy requests on every GPU (`requests * tp_size`).
"""

from __future__ import annotations

from gpusize.core.engines.sglang_dp import attention_extra_bytes, dp_weight_extra_bytes
from gpusize.core.spec import ModelSpec
from gpusize.core.weights import WeightFormat
from gpusize.core.workload import Workload

__all__ = ["adp_weight_extra_bytes", "attention_dp", "attention_groups"]


def attention_groups(work: Workload, tp: int) -> int:
    """GPUs that each attend to their own requests: tp with attention DP, else 1 (one group of tp)."""
    return tp if work.engine.enable_attention_dp else 1


def attention_dp(spec: ModelSpec, work: Workload, tp: int) -> tuple[int, float]:
    """(groups, weight bytes per GPU a decode step reads beyond tensor parallel's): with attention DP,
    tp groups of one GPU reading the whole attention projections and the whole LM head
    (`_replicated_head_bytes`); else (1, 0.0)."""
    groups = attention_groups(work, tp)
    if groups <= 1:
        return 1, 0.0
    extra = attention_extra_bytes(spec, work.weights, tp, tp) + _replicated_head_bytes(spec, work.weights, tp)
    return groups, extra


def _replicated_head_bytes(spec: ModelSpec, fmt: WeightFormat, tp: int) -> float:
    """The LM head beyond its 1 / tp slice: whole on every GPU under attention DP."""
    return spec.params.lm_head * fmt.other_bytes * (1 - 1 / tp) * fmt.checkpoint_scale


def adp_weight_extra_bytes(spec: ModelSpec, fmt: WeightFormat, tp: int) -> int:
    """Bytes per GPU attention DP adds to the tensor-parallel weights: attention projections and the
    input embedding whole (as SGLang's DP attention at dp = tp), and the LM head whole."""
    if tp <= 1:
        return 0
    return dp_weight_extra_bytes(spec, fmt, tp, tp) + int(_replicated_head_bytes(spec, fmt, tp))
