"""Weight bytes per GPU, in integer bytes (pure): a WeightFormat applied to the parameter counts by
role, with the tensor-parallel sharding and replication rules of vLLM's linear layers; and the bytes
of each stored block (what llama.cpp's `--n-gpu-layers` moves). Exact, from the config.
"""

from __future__ import annotations

import functools
import math

from gpusize.core.gguf_tensors import gguf_layer_bytes
from gpusize.core.kinds.attention import head_width, value_width
from gpusize.core.params import layer_params, moe_layers
from gpusize.core.spec import LayerSpec, ModelSpec, ParamCounts
from gpusize.core.weights.formats import WeightFormat
from gpusize.dataclass import dataclass

__all__ = [
    "StoredLayers",
    "data_parallel_weights_bytes",
    "estimated_layers",
    "linear_bytes_per_gpu",
    "rope_cache_bytes",
    "routed_expert_bytes",
    "weights_bytes",
]


def rope_cache_bytes(spec: ModelSpec, fmt: WeightFormat) -> int:
    """vLLM keeps a cos/sin table of max_position_embeddings x rotary dim in the model dtype on
    every rank (Llama-3.1-8B: 131072 x 128 x 2 B = 32 MiB, the gap between 2 x params = 14.96 GiB
    and the logged 14.99 GiB; Llama-4-Scout's 10M positions make it 2.5 GiB per GPU)."""
    if spec.mla or not spec.max_position_embeddings or spec.learned_position_embeddings:
        return 0
    return int(spec.max_position_embeddings * spec.head_dim * fmt.other_bytes)


#: Cached (a few models x formats x TP sizes; an int each): every plan of every engine reads it, a fit
#: a dozen times and a batch on every row (bench/RESULTS.md).
@functools.lru_cache(maxsize=512)
def weights_bytes(
    spec: ModelSpec, fmt: WeightFormat, tp: int = 1, include_mtp: bool = False, expert_parallel: bool = False
) -> int:
    """Weight bytes held by ONE GPU at tensor-parallel size `tp` (tp=1: the whole model).

    Sharded: attention projections, MLPs, experts, embeddings and lm_head (vocab-parallel).
    Replicated on every rank: norms and biases, routers, MLA down-projections, k/v projections
    when tp exceeds the KV heads (vLLM QKVParallelLinear replicas), and the rope table.
    MTP layers count only with `include_mtp` (engines load them for speculative decoding only).
    With `expert_parallel` the routed experts are not sliced: each of the `tp` ranks holds whole
    experts at full width, the fullest rank ceil(experts / tp) of them (vLLM determine_expert_map).
    """
    counts = spec.params
    quant = {role: fmt.role_bytes(role) for role in ("attention", "mlp", "experts", "shared_experts")}
    experts = _routed_experts(spec, fmt, tp, expert_parallel)  # / tp below
    sharded = (
        (counts.attention - counts.replicated_attention) * quant["attention"]
        + counts.mlp * quant["mlp"]
        + experts
        + (counts.shared_experts - _latent_projections(spec)) * quant["shared_experts"]
        + counts.embedding * _per_embedding(fmt)
        + counts.lm_head * _per_lm_head(fmt)
        + counts.vision * fmt.other_bytes
    )
    replicated = (
        counts.replicated_attention * quant["attention"]
        + _latent_projections(spec) * quant["shared_experts"]
        + _vectors_bytes(counts, fmt)
    )
    extra_kv = _replicated_kv_weights(spec, tp) * quant["attention"]
    # MTP modules (speculative decoding) are decoder layers quantized like the others.
    mtp = counts.mtp * fmt.linear_bytes / tp if include_mtp else 0
    stored = (sharded / tp + replicated + extra_kv + mtp) * fmt.checkpoint_scale
    return int(stored) + rope_cache_bytes(spec, fmt)


def _routed_experts(spec: ModelSpec, fmt: WeightFormat, tp: int, expert_parallel: bool) -> float:
    """The routed experts' bytes over `tp` GPUs, times tp (before the checkpoint's scale): sliced by tp
    with the kernel's padding, or, with `expert_parallel`, whole experts, the fullest rank holding
    ceil(experts / tp) of them (vLLM determine_expert_map)."""
    sliced = 1 if expert_parallel else tp
    experts = spec.params.experts * _expert_padding(spec, fmt, sliced) * fmt.role_bytes("experts")
    if expert_parallel and spec.moe:
        experts *= tp * math.ceil(spec.moe.num_experts / tp) / spec.moe.num_experts
    return experts


def routed_expert_bytes(spec: ModelSpec, fmt: WeightFormat, tp: int, expert_parallel: bool = False) -> float:
    """Bytes of the routed experts one GPU holds at `tp` (the part of `weights_bytes` they are)."""
    return _routed_experts(spec, fmt, tp, expert_parallel) / tp * fmt.checkpoint_scale


def data_parallel_weights_bytes(
    spec: ModelSpec, fmt: WeightFormat, tp: int, world: int, include_mtp: bool, expert_parallel: bool
) -> int:
    """Weight bytes per GPU where every layer but the routed experts is held per data-parallel rank
    at tensor parallel `tp`, and the routed experts are spread over all `world` GPUs of the ranks
    (sliced, or whole with `expert_parallel`): vLLM's --data-parallel-size (world = dp x tp), and
    data-parallel attention x expert parallel over servers (tp 1)."""
    rank = weights_bytes(spec, fmt, tp, include_mtp)
    if spec.moe is None:
        return rank
    moved = routed_expert_bytes(spec, fmt, world, expert_parallel) - routed_expert_bytes(spec, fmt, tp)
    return int(rank + moved)


def _latent_projections(spec: ModelSpec) -> int:
    """The latent MoE's hidden <-> latent projections of every MoE layer (part of shared_experts in
    `core.params`): vLLM builds them as ReplicatedLinear (Nemotron-3 fc1/fc2_latent_proj, Kimi-K3
    routed_expert_down_proj/up_proj), whole on every TP rank."""
    if spec.moe is None or not spec.moe.latent_size:
        return 0
    return moe_layers(spec) * 2 * spec.hidden_size * spec.moe.latent_size


def _or(value: float | None, default: float) -> float:
    return default if value is None else value


def _per_embedding(fmt: WeightFormat) -> float:
    """Bytes per weight of the token embedding (a GGUF type's own, else the unquantized width)."""
    return _or(fmt.embedding_bytes, fmt.other_bytes)


def _per_lm_head(fmt: WeightFormat) -> float:
    """Bytes per weight of the output head (a GGUF type's or an NVFP4 head's own, else unquantized)."""
    return _or(fmt.lm_head_bytes, fmt.other_bytes)


def _expert_padding(spec: ModelSpec, fmt: WeightFormat, tp: int) -> float:
    """Stored / logical size of each expert's matrices after the kernel's padding."""
    if spec.moe is None or fmt.expert_pad == (1, 1):
        return 1.0
    hidden_pad, inter_pad = fmt.expert_pad
    hidden, width = spec.moe.latent_size or spec.hidden_size, spec.moe.moe_intermediate_size // tp
    return (math.ceil(hidden / hidden_pad) * hidden_pad / hidden) * (
        math.ceil(width / inter_pad) * inter_pad / width
    )


def _replicated_kv_weights(spec: ModelSpec, tp: int) -> float:
    """Extra k/v projection weights per GPU where tp exceeds a layer's KV heads: each rank holds a
    whole head. Per layer, with the layer's own KV heads and widths (Gemma 4's global layers have 4
    KV heads of 512 beside sliding layers of 16 x 256; a K-equals-V layer has no v_proj)."""
    if spec.mla:
        return 0.0
    # No layer with fewer KV heads than tp (most plans): nothing to add, found over each distinct
    # layer once rather than every layer (the sum below keeps its per-layer order, so its rounding).
    if not any(
        layer.num_key_value_heads and tp > layer.num_key_value_heads
        for layer, _ in spec.attention_layer_counts
    ):
        return 0.0
    extra = 0.0
    for layer in spec.attention_layers:
        kv = layer.num_key_value_heads
        if kv and tp > kv:
            width = head_width(spec, layer) + (0 if layer.k_eq_v else value_width(spec, layer))
            extra += spec.hidden_size * width * (1 - kv / tp)
    return extra


def _layer_bytes(spec: ModelSpec, layer: LayerSpec, fmt: WeightFormat) -> int:
    """Bytes of one decoder layer in `fmt`, each role at its own width as `weights_bytes` counts it (a
    checkpoint with FP4 experts beside FP8 attention, DeepSeek-V4's, stores its experts at half a
    byte: one `linear_bytes` for every role put DeepSeek-V4-Flash's layers above its whole weights, and
    `--cpu-offload-gb 200` then left it negative weights on the GPU). As the file stores them: no
    kernel's padding (vLLM pads gpt-oss's MXFP4 experts after loading, `weights_bytes`)."""
    counts = layer_params(spec, layer)
    return int((_linear_bytes(counts, fmt) + _vectors_bytes(counts, fmt)) * fmt.checkpoint_scale)


def _linear_bytes(counts: ParamCounts, fmt: WeightFormat) -> float:
    """The decoder's linear weights, each role at its own bytes per weight (FP4 experts beside FP8
    attention, an NVFP4 checkpoint's unquantized modules), before the checkpoint's scale."""
    return (
        counts.attention * fmt.role_bytes("attention")
        + counts.mlp * fmt.role_bytes("mlp")
        + counts.experts * fmt.role_bytes("experts")
        + counts.shared_experts * fmt.role_bytes("shared_experts")
    )


def _vectors_bytes(counts: ParamCounts, fmt: WeightFormat) -> float:
    """Norms, biases and routers (never quantized by a weight-only format)."""
    return (counts.small + counts.router) * _or(fmt.small_bytes, fmt.other_bytes)


#: Cached (a spec and a format keep their hash): the fix searches ask it for every lever, GPU type and
#: count they rule out, on every row of a batch.
@functools.lru_cache(maxsize=1024)
def linear_bytes_per_gpu(spec: ModelSpec, fmt: WeightFormat, n: int) -> float:
    """A cheap lower bound of what one of `n` GPUs holds: the linear weights alone, each role at its own
    width (`_linear_bytes`), split n ways. Above a GPU's memory it rules a plan out before sizing it
    (`which`, fix suggestions), so it must never pass `weights_bytes`: one `linear_bytes` for every
    role put DeepSeek-V4-Flash's FP4 experts at FP8 width, 132 GB a GPU of two for its 74 GB."""
    return _linear_bytes(spec.params, fmt) * fmt.checkpoint_scale / n


@dataclass(frozen=True)
class StoredLayers:
    """Bytes of each repeating block, the token embedding and the output head as a file stores them
    (GGUF): what llama.cpp's `--n-gpu-layers` moves between GPU and system RAM."""

    layer_bytes: tuple[int, ...]
    token_embd_bytes: int
    output_bytes: int


#: Cached: llama.cpp's sizing reads it for every candidate and every -ngl tried (a batch: every row).
@functools.lru_cache(maxsize=256)
def estimated_layers(spec: ModelSpec, fmt: WeightFormat) -> StoredLayers:
    """Per-block, embedding and output bytes from config arithmetic (for non-GGUF sources); for a GGUF
    file type, tensor by tensor as llama-quantize types them."""
    if fmt.gguf is not None:
        blocks, embd, output = gguf_layer_bytes(spec, fmt.gguf)
        return StoredLayers(blocks, embd, output)
    sizes: dict[LayerSpec, int] = {}  # identical layers (one object per kind) counted once
    for layer, _ in spec.layer_counts:
        sizes[layer] = _layer_bytes(spec, layer, fmt)
    layers = [sizes[layer] for layer in spec.layers]
    embd = int(spec.params.embedding * _per_embedding(fmt))
    output = int(spec.params.lm_head * _per_lm_head(fmt)) or embd
    return StoredLayers(tuple(layers), embd, output)
