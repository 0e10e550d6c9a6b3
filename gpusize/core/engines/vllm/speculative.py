"""vLLM speculative decoding (`--speculative-config`, core/speculative.py): what the drafter holds.

vLLM v1 loads the drafter into the same worker before it profiles memory, so its weights and buffers
are taken from the budget ahead of the KV cache (two reserves), and it registers the drafter's
attention layers with the same KV cache manager as the target's (vllm/v1/spec_decode/eagle.py: "we
assume all eagle layers belong to the same KV cache group"; vllm/v1/worker/gpu_model_runner.py
get_kv_cache_spec walks every attention layer of the forward context, the drafter's included): every
KV block then holds the draft's layers too, so the KV bytes per token grow by the draft's and the pool
holds fewer tokens (`draft_layout`). ngram proposes on the CPU from the prompt: nothing on the GPU.
"""

from __future__ import annotations

from dataclasses import replace

from gpusize.core import kvcache
from gpusize.core.engines.vllm.behaviour import behaviour_of
from gpusize.core.engines.vllm.scheduler import scheduler_limits
from gpusize.core.gpu import GpuSpec
from gpusize.core.reserves import Reserve
from gpusize.core.spec import ModelSpec
from gpusize.core.speculative import (
    Speculation,
    draft_format,
    draft_weights_bytes,
    mtp_weights_bytes,
    speculation,
)
from gpusize.core.weights import activation_dtype
from gpusize.core.workload import Workload
from gpusize.units import DTYPE_BYTES

__all__ = ["draft_buffers", "draft_kv_bytes_per_token", "draft_layout", "draft_tp", "draft_weights"]

#: Bytes per token of the drafter's index buffers (vllm/v1/spec_decode/eagle.py EagleProposer.__init__):
#: input_ids int32 + positions int64 + arange int32, each max_num_batched_tokens long.
_INDEX_BYTES_PER_TOKEN = 4 + 8 + 4


def draft_tp(spec_: Speculation, tp: int) -> int:
    """The draft's tensor-parallel size: draft_tensor_parallel_size, else the target's. vLLM accepts
    1 or the target's (config/speculative.py _verify_and_get_draft_tp); 1 puts the whole draft on
    every GPU."""
    return spec_.draft_tp if spec_.draft_tp in (1, tp) and spec_.draft_tp is not None else tp


def draft_weights(spec: ModelSpec, gpu: GpuSpec, tp: int, work: Workload) -> Reserve | None:
    """The draft's weights on one GPU (core/speculative.py draft_weights_bytes); for mtp the
    checkpoint's MTP layers, unless --mtp already counts them in the weights."""
    s = speculation(work.engine, spec)
    if s is None or s.method == "ngram" or (s.method == "mtp" and work.include_mtp):
        return None
    if s.method == "mtp":
        held = mtp_weights_bytes(spec, work.weights, tp)
        layers = spec.num_nextn_predict_layers
        how = f"{layers} MTP layer(s) of the checkpoint (as --mtp), at {work.weight_dtype}"
        return Reserve("draft_weights", held, how)
    assert work.draft is not None  # resolve() refuses a method that needs a draft without one
    fmt = draft_format(spec, work.draft.spec)
    n = draft_tp(s, tp)
    held = draft_weights_bytes(spec, work.draft, s.method, fmt, n)
    shared = "" if s.method == "draft_model" else ", embeddings shared with the target"
    how = f"{s.method} draft {work.draft.reference[:60]} at {fmt.name}, TP={n}{shared}"
    return Reserve("draft_weights", held, how, estimate=s.method != "draft_model")


def draft_buffers(spec: ModelSpec, gpu: GpuSpec, tp: int, work: Workload) -> Reserve | None:
    """The drafter's persistent input buffers (EagleProposer.__init__; DraftModelProposer and the MTP
    proposer share it): hidden_states and inputs_embeds of max_num_batched_tokens x the draft's hidden
    size in the model dtype, and the int index buffers."""
    s = speculation(work.engine, spec)
    if s is None or s.method == "ngram":
        return None
    tokens = scheduler_limits(gpu, work, behaviour_of(work, spec)).max_num_batched_tokens
    hidden = work.draft.spec.hidden_size if work.draft is not None else spec.hidden_size
    act = DTYPE_BYTES[activation_dtype(spec)]
    held = int(tokens * (2 * hidden * act + _INDEX_BYTES_PER_TOKEN))
    how = f"drafter buffers: {tokens:,} tokens x 2 x {hidden:,} hidden (vllm/v1/spec_decode/eagle.py)"
    return Reserve("draft_buffers", held, how)


def draft_kv_bytes_per_token(spec: ModelSpec, work: Workload, tp: int) -> int:
    """KV bytes per token the draft's attention layers add on one GPU: the draft's own layers at its
    TP (eagle, eagle3, draft_model), the checkpoint's MTP layers (mtp; each MTP module is a decoder
    layer with attention), nothing for ngram."""
    s = speculation(work.engine, spec)
    if s is None or s.method == "ngram":
        return 0
    if s.method == "mtp":
        return spec.num_nextn_predict_layers * kvcache.kv_bytes_per_token_per_layer(spec, work.kv_bytes, tp)
    assert work.draft is not None
    return kvcache.kv_cache_bytes_per_token(work.draft.spec, work.kv_bytes, draft_tp(s, tp))


def draft_layout(layout: kvcache.KvLayout, spec: ModelSpec, work: Workload, tp: int) -> kvcache.KvLayout:
    """The KV layout with the draft's layers in every block: a block of `block_size` tokens also
    holds the draft's K and V for them (one KV cache group, as vLLM allocates EAGLE and MTP layers)."""
    extra = draft_kv_bytes_per_token(spec, work, tp)
    if not extra:
        return layout
    return replace(layout, draft_page_bytes=layout.block_size * extra)
