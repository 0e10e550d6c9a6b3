"""Layer anatomy for training (pure): the linear layers of each decoder layer, LoRA adapter sizes and
the trainable parameter count.
"""

from __future__ import annotations

import functools

from gpusize.core.kinds import has_attention_projections, mixer_parts
from gpusize.core.spec import LayerSpec, ModelSpec
from gpusize.dataclass import dataclass
from gpusize.training.setup import ALL_LINEAR, TrainSetup

__all__ = [
    "Linear",
    "largest_layer_params",
    "largest_linear_params",
    "layer_linears",
    "lora_params",
    "mixer_linears",
    "mlp_linears",
    "trainable_params",
]

# --------------------------------------------------------------------------- layer anatomy


@dataclass(frozen=True)
class Linear:
    """One weight matrix of a decoder layer (fan_in x fan_out), tagged with its LoRA module name."""

    module: str  # q k v o gate up down
    fan_in: int
    fan_out: int
    count: int = 1  # routed experts: one per expert


def layer_linears(spec: ModelSpec, layer: LayerSpec) -> tuple[Linear, ...]:
    """The linear layers of one decoder layer (Transformers modeling code), routers excluded."""
    return mixer_linears(spec, layer) + _ffn_linears(spec, layer)


def mixer_linears(spec: ModelSpec, layer: LayerSpec) -> tuple[Linear, ...]:
    """Attention (GQA, optional output gate), MLA (low-rank q, shared kv latent), Gated DeltaNet and
    Mamba-2 projections, with the shapes params.py spec.params; a parallel hybrid layer (Falcon-H1)
    has those of each of its parts (`kinds.mixer_parts`)."""
    parts = mixer_parts(spec, layer)
    if len(parts) > 1:  # Falcon-H1: the attention half's projections, then the Mamba half's
        return tuple(lin for part in parts for lin in mixer_linears(spec, part))
    h = spec.hidden_size
    if layer.mixer == "attention" and spec.compressed:  # the kind's rule (`kinds.mixer_kind`)
        return _compressed_linears(spec, layer)
    if layer.mixer == "attention" and spec.mla:
        m, heads = spec.mla, layer.num_attention_heads
        qk = heads * (m.qk_nope_head_dim + m.qk_rope_head_dim)
        q = (
            (Linear("q", h, m.q_lora_rank), Linear("q", m.q_lora_rank, qk))
            if m.q_lora_rank
            else (Linear("q", h, qk),)
        )
        return q + (
            Linear("k", h, m.kv_lora_rank + m.qk_rope_head_dim),
            Linear("v", m.kv_lora_rank, heads * (m.qk_nope_head_dim + m.v_head_dim)),
            Linear("o", heads * m.v_head_dim, h),
        )
    if has_attention_projections(spec, layer):
        q_dim, kv_dim = layer.num_attention_heads * spec.head_dim, layer.num_key_value_heads * spec.head_dim
        q_out = 2 * q_dim if spec.attention_output_gate else q_dim
        return (Linear("q", h, q_out), Linear("k", h, kv_dim), Linear("v", h, kv_dim), Linear("o", q_dim, h))
    if layer.mixer == "linear_attention" and spec.linear_attention:
        la = spec.linear_attention
        key, value = la.num_key_heads * la.key_head_dim, la.num_value_heads * la.value_head_dim
        return (
            Linear("q", h, 2 * key + 2 * value),
            Linear("k", h, 2 * la.num_value_heads),
            Linear("o", value, h),
        )
    if layer.mixer == "mamba" and spec.mamba:
        mb = spec.mamba
        inner = mb.num_heads * mb.head_dim
        return (
            Linear("q", h, 2 * inner + 2 * mb.n_groups * mb.state_size + mb.num_heads),
            Linear("o", inner, h),
        )
    return ()


def _compressed_linears(spec: ModelSpec, layer: LayerSpec) -> tuple[Linear, ...]:
    """DeepSeek-V4 attention (`core.kinds.compressed_mla`, vLLM DeepseekV4Attention): fused_wqa_wkv
    h -> q_lora_rank + head_dim (the q down-projection and the one shared KV head), wq_b q_lora_rank
    -> heads x head_dim, wo_a heads x head_dim -> o_lora_rank in o_groups blocks and wo_b o_groups x
    o_lora_rank -> h. The compressor and indexer projections (under 1% of the layer) are left out."""
    c, h, heads = spec.compressed, spec.hidden_size, layer.num_attention_heads
    assert c is not None
    return (
        Linear("q", h, c.q_lora_rank + c.head_dim),
        Linear("q", c.q_lora_rank, heads * c.head_dim),
        Linear("o", heads * c.head_dim, c.o_lora_rank),
        Linear("o", c.o_groups * c.o_lora_rank, h),
    )


def mlp_linears(spec: ModelSpec, width: int, count: int = 1) -> tuple[Linear, ...]:
    h = spec.hidden_size
    if spec.gated_mlp:
        return (
            Linear("gate", h, width, count),
            Linear("up", h, width, count),
            Linear("down", width, h, count),
        )
    return (Linear("up", h, width, count), Linear("down", width, h, count))


def _ffn_linears(spec: ModelSpec, layer: LayerSpec) -> tuple[Linear, ...]:
    if layer.ffn == "dense":
        return mlp_linears(spec, layer.intermediate_size)
    if layer.ffn == "moe" and spec.moe:
        shared = (
            mlp_linears(spec, spec.moe.shared_intermediate_size) if spec.moe.shared_intermediate_size else ()
        )
        return mlp_linears(spec, spec.moe.moe_intermediate_size, spec.moe.num_experts) + shared
    return ()


def lora_params(spec: ModelSpec, rank: int, modules: tuple[str, ...] = ALL_LINEAR) -> int:
    """Adapter parameters: rank x (fan_in + fan_out) for every targeted linear (A: r x in, B: out x r;
    Hu et al. 2021, LoRA, section 4.1). Llama-3.1-8B, rank 16, all-linear: 41,943,040."""
    return _lora_params(spec, rank, tuple(modules))


@functools.lru_cache(maxsize=1024)  # every memory figure of a LoRA job asks it
def _lora_params(spec: ModelSpec, rank: int, modules: tuple[str, ...]) -> int:
    return sum(
        rank * (lin.fan_in + lin.fan_out) * lin.count * times
        for layer, times in spec.layer_counts
        for lin in layer_linears(spec, layer)
        if lin.module in modules
    )


def trainable_params(spec: ModelSpec, setup: TrainSetup) -> int:
    """Parameters that receive gradients: all of them (full), or the LoRA adapters."""
    if setup.method == "full":
        return spec.params.total
    return lora_params(spec, setup.lora_rank, setup.lora_modules)


def _layer_params(spec: ModelSpec, layer: LayerSpec) -> int:
    return sum(lin.fan_in * lin.fan_out * lin.count for lin in layer_linears(spec, layer))


@functools.lru_cache(maxsize=256)  # of the spec alone, read by every memory figure of a job
def largest_layer_params(spec: ModelSpec) -> int:
    """Linear weights of the biggest decoder layer: the unit FSDP / ZeRO-3 gathers at once."""
    return max((_layer_params(spec, layer) for layer, _ in spec.layer_counts), default=0)


@functools.lru_cache(maxsize=256)
def largest_linear_params(spec: ModelSpec) -> int:
    """The biggest single weight matrix of the decoder (what a 4-bit kernel dequantizes at once)."""
    return max(
        (lin.fan_in * lin.fan_out for layer, _ in spec.layer_counts for lin in layer_linears(spec, layer)),
        default=0,
    )
