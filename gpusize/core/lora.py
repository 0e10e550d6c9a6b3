"""The linear modules a LoRA adapter slot covers in each decoder layer, with their full (unsharded)
shapes (pure). vLLM and SGLang preallocate, per layer, per module and per adapter slot, an A matrix
(rank x input) and a B matrix (output x rank) for each packed slice; how they shard those under
tensor parallelism is each engine's (core/engines/vllm/lora.py, core/engines/sglang_lora.py).

The modules are the four every engine wraps in a Llama-style layer: qkv_proj (column-parallel,
slices q, k, v), o_proj (row-parallel), gate_up_proj (column-parallel, slices gate, up; up_proj alone
for an ungated MLP) and down_proj (row-parallel). Attention projections are those the layer's kind
has (`kinds.has_attention_projections`: Falcon-H1's attention half too); mixers or feed-forwards that
are something else (MLA, linear attention, Mamba) are not counted, and the answer says so
(`complete`); a MoE layer's
shared expert is an MLP here, its routed experts are the engine's to count (`moe_layers`).
"""

from __future__ import annotations

from typing import NamedTuple

from gpusize.core.kinds import has_attention_projections, mixer_parts
from gpusize.core.params import moe_layers
from gpusize.core.spec import LayerSpec, ModelSpec

__all__ = ["LoraModule", "lora_modules", "moe_layers"]


class LoraModule(NamedTuple):  # a NamedTuple for start-up (core/settings.Setting)
    """One wrapped linear module of one layer: its input width, its packed output slices (full
    widths) and whether the engine splits it by rows (row-parallel: the input is sharded)."""

    name: str
    input_size: int
    output_sizes: tuple[int, ...]
    row_parallel: bool
    #: KV heads of a qkv_proj (its k and v slices replicate when TP exceeds them); 0 otherwise.
    kv_heads: int = 0
    head_dim: int = 0


def lora_modules(spec: ModelSpec) -> tuple[tuple[LoraModule, ...], bool]:
    """(every wrapped module of every layer, True when each layer's mixer and dense MLP or shared
    expert are covered; routed experts are left to the engine)."""
    out: list[LoraModule] = []
    complete = spec.mla is None and not spec.attention_output_gate
    for layer in spec.layers:
        for part in mixer_parts(spec, layer):  # Falcon-H1: its attention, then its Mamba mixer
            if has_attention_projections(spec, part):
                out += _attention(spec, part)
            elif part.mixer != "none":
                complete = False
        if layer.ffn == "dense":
            out += _mlp(spec, layer.intermediate_size or spec.intermediate_size)
        elif layer.ffn == "moe" and spec.moe is not None:
            out += _mlp(spec, spec.moe.shared_intermediate_size)  # routed experts: `moe_layers`
        elif layer.ffn != "none":
            complete = False
    return tuple(out), complete


def _attention(spec: ModelSpec, layer: LayerSpec) -> list[LoraModule]:
    heads = layer.num_attention_heads or spec.num_attention_heads
    kv_heads = layer.num_key_value_heads or spec.num_key_value_heads
    q, kv = heads * spec.head_dim, kv_heads * spec.head_dim
    return [
        LoraModule("qkv_proj", spec.hidden_size, (q, kv, kv), False, kv_heads, spec.head_dim),
        LoraModule("o_proj", q, (spec.hidden_size,), True),
    ]


def _mlp(spec: ModelSpec, width: int) -> list[LoraModule]:
    """A dense MLP (or a MoE layer's shared expert) of `width`; nothing for width 0."""
    if not width:
        return []
    up = (width, width) if spec.gated_mlp else (width,)
    return [
        LoraModule("gate_up_proj" if spec.gated_mlp else "up_proj", spec.hidden_size, up, False),
        LoraModule("down_proj", width, (spec.hidden_size,), True),
    ]
