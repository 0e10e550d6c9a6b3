"""LayerSpec: one decoder layer, its token-mixer kind and its feed-forward block, and the specs of
the mixer and FFN kinds a model's layers share (MLA, DeepSeek-V4 compressed attention, MoE, Gated
DeltaNet, Kimi Delta, Mamba-2). Pure values; field names follow the Transformers config names.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Literal

from gpusize.dataclass import dataclass

__all__ = [
    "KV_MIXERS",
    "CompressedAttentionSpec",
    "Ffn",
    "IndexerSpec",
    "KimiDeltaSpec",
    "LayerSpec",
    "LinearAttentionSpec",
    "MLASpec",
    "MambaSpec",
    "Mixer",
    "MoESpec",
]

Mixer = Literal["attention", "linear_attention", "mamba", "attention_mamba", "kimi_delta", "none"]
#: The mixer kinds that keep K/V per token in the engine's paged cache (every other kind keeps a
#: constant state or nothing). Each kind answers for itself in `core.kinds`; tests/core/test_kinds.py
#: checks this set against the kinds' own `per_token_kv`.
KV_MIXERS: frozenset[str] = frozenset({"attention", "attention_mamba"})
Ffn = Literal["dense", "moe", "none"]


@dataclass(frozen=True, kw_only=True)
class LayerSpec:
    """One decoder layer: its token mixer and its feed-forward block."""

    mixer: Mixer
    #: Sliding-window length in tokens for local attention layers; None = attends to the whole context.
    window: int | None = None
    #: Llama-4 chunked local attention: KV kept for the current chunk only (like a window).
    chunked: bool = False
    num_attention_heads: int = 0
    num_key_value_heads: int = 0
    ffn: Ffn = "dense"
    intermediate_size: int = 0
    #: DeepSeek-V4: tokens merged into one compressed KV entry (4 with an indexer, 128), or 0 for a
    #: layer that keeps its sliding window only (`compress_ratios`).
    compress_ratio: int = 0
    #: GLM-5.2 IndexCache (`indexer_types` "shared"): the layer reuses the previous full layer's
    #: top-k and owns no indexer weights or indexer key cache.
    shares_indexer: bool = False
    #: Width of one query/key head in this layer; 0 = the model's `head_dim` (Gemma 4's global
    #: layers use `global_head_dim`, MiMo-V2-Flash's sliding layers `swa_head_dim`).
    head_dim: int = 0
    #: Width of one value head; 0 = the layer's key width (MiMo-V2-Flash: K 192, V 128).
    v_head_dim: int = 0
    #: Gemma 4 `attention_k_eq_v`: the layer has no v_proj and uses its keys as values; vLLM still
    #: caches both K and V (the K weights are loaded into both slots of qkv_proj).
    k_eq_v: bool = False
    #: One learned attention-sink logit per head in this layer (gpt-oss every layer; MiMo-V2-Flash
    #: its sliding layers only); the model's `attention_sinks` also applies to every layer.
    sinks: bool = False
    #: Step-3.x `use_head_wise_attn_gate`: a g_proj of hidden x heads gates each head's output.
    head_gate: bool = False
    #: Block-sparse attention's indexer (MiniMax-M3 `sparse_attention_config`): query heads and head
    #: width of the index projection; the layer also projects one index key of `index_head_dim` per
    #: token, which the engine caches beside K and V (0 = no indexer).
    index_heads: int = 0
    index_head_dim: int = 0
    #: Extra weight vectors of hidden_size in this layer beyond the model's norms (Gemma 4's MoE
    #: block: three more norms and the router's scale).
    extra_vectors: int = 0

    def __hash__(self) -> int:
        """The hash of the fields, computed once per layer (kept in its __dict__, as ModelSpec's):
        `ModelSpec.layer_counts` hashes every layer of a model, 10,000 hashes of one object per kind
        for `which` over the catalog (bench/RESULTS.md, issue 24). Equal layers hash equal."""
        known: int | None = self.__dict__.get("_hash")
        if known is None:
            known = hash(tuple(getattr(self, name) for name in _LAYER_FIELDS))
            object.__setattr__(self, "_hash", known)
        return known


#: The fields LayerSpec's hash covers (all of them are compared), listed once.
_LAYER_FIELDS = tuple(f.name for f in fields(LayerSpec))


@dataclass(frozen=True, kw_only=True)
class IndexerSpec:
    """The DeepSeek Sparse Attention lightning indexer (DeepSeek-V3.2, GLM-5): its own query heads
    over the q latent and one shared key per token, cached per layer (`core.kinds.mla_indexer`)."""

    n_heads: int
    head_dim: int
    topk: int


@dataclass(frozen=True, kw_only=True)
class MLASpec:
    """DeepSeek multi-head latent attention (V2/V3/R1, Kimi-K2); with a sparse-attention `indexer`
    for DeepSeek-V3.2 and GLM-5 (`index_n_heads`, `index_head_dim`, `index_topk`)."""

    q_lora_rank: int | None
    kv_lora_rank: int
    qk_nope_head_dim: int
    qk_rope_head_dim: int
    v_head_dim: int
    indexer: IndexerSpec | None = None
    #: Kimi-K3 `mla_use_output_gate`: a g_proj of hidden -> heads x v_head_dim whose sigmoid gates the
    #: attention output before o_proj (vLLM vllm/models/kimi_k3 MultiHeadLatentAttention: a
    #: ColumnParallelLinear, sharded over the heads like q_b_proj).
    output_gate: bool = False


@dataclass(frozen=True, kw_only=True)
class CompressedAttentionSpec:
    """DeepSeek-V4 attention (`core.kinds.compressed_mla`): one shared KV head of `head_dim` (rope
    part `rope_head_dim`), a low-rank q, a grouped low-rank output, a sliding window on every layer,
    per-layer compression (LayerSpec.compress_ratio) with an indexer on ratio-4 layers, and
    hyper-connections (`hc_mult` residual streams)."""

    head_dim: int
    rope_head_dim: int
    q_lora_rank: int
    o_lora_rank: int
    o_groups: int
    window: int
    index_n_heads: int
    index_head_dim: int
    hc_mult: int
    #: Compressed entries each query of a ratio-4 layer attends to, as its indexer selects them
    #: (`index_topk`, 512 in DeepSeek-V4-Flash's config); 0: every entry.
    index_topk: int = 0


@dataclass(frozen=True, kw_only=True)
class MoESpec:
    """A mixture-of-experts FFN: routed experts (count, per token, width), the shared expert and the
    router's extras, as the config declares them."""

    num_experts: int
    num_experts_per_tok: int
    moe_intermediate_size: int
    #: Total intermediate width of the always-on shared expert(s) (0 = none).
    shared_intermediate_size: int = 0
    #: Qwen2-MoE / Qwen3-Next style sigmoid gate on the shared expert (hidden -> 1).
    shared_expert_gate: bool = False
    router_bias: bool = False
    #: DeepSeek noaux_tc routing keeps a per-expert score-correction bias.
    score_correction_bias: bool = False
    #: gpt-oss experts carry biases on gate_up and down.
    expert_bias: bool = False
    #: False for Nemotron-H's relu2 experts (up and down only, no gate; the shared expert too).
    gated: bool = True
    #: Nemotron-3 latent MoE: routed experts work in a `moe_latent_size` space, entered and left by
    #: two replicated projections (fc1/fc2_latent_proj, hidden <-> latent); 0 = the hidden size.
    latent_size: int = 0
    #: Kimi-K3 `latent_moe_use_norm`: an RMSNorm of `latent_size` over the routed experts' output
    #: before the up-projection (routed_expert_norm).
    latent_norm: bool = False


@dataclass(frozen=True, kw_only=True)
class LinearAttentionSpec:
    """Qwen3-Next Gated DeltaNet layers: constant recurrent state per sequence, no per-token KV."""

    num_key_heads: int
    num_value_heads: int
    key_head_dim: int
    value_head_dim: int
    conv_kernel: int


@dataclass(frozen=True, kw_only=True)
class KimiDeltaSpec:
    """Kimi Delta Attention layers (Kimi-Linear `linear_attn_config`): heads of one width for q, k, v."""

    num_heads: int
    head_dim: int
    conv_kernel: int
    #: Kimi-K3 `use_full_rank_gate`: the output gate is one g_proj of hidden -> heads x head_dim, not
    #: the low-rank g_a / g_b pair.
    full_rank_gate: bool = False


@dataclass(frozen=True, kw_only=True)
class MambaSpec:
    """Mamba-2 layers (Nemotron-H): SSM state + conv state per sequence."""

    num_heads: int
    head_dim: int
    state_size: int
    n_groups: int
    conv_kernel: int
    proj_bias: bool
    conv_bias: bool
    #: The gated RMSNorm over the inner width before out_proj (Falcon-H1 `mamba_rms_norm`, false there
    #: by default; Nemotron-H and Granite always have it).
    gated_norm: bool = True
