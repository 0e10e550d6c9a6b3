"""ModelSpec: the architecture facts of a model, and its parameter counts by role (pure values).

`core.parse.parse_config` builds a ModelSpec from a Hugging Face config.json; every variant spelling
is resolved there and nothing downstream reads raw dicts. Field names follow the Transformers config
names so anyone can check them against a file.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from functools import cached_property
from operator import attrgetter
from typing import Literal

__all__ = [
    "KV_MIXERS",
    "CompressedAttentionSpec",
    "Ffn",
    "KimiDeltaSpec",
    "LayerSpec",
    "LinearAttentionSpec",
    "IndexerSpec",
    "MLASpec",
    "MambaSpec",
    "Mixer",
    "ModelSpec",
    "MoESpec",
    "ParamCounts",
    "QuantSpec",
    "VisionSpec",
    "astuple_counts",
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


@dataclass(frozen=True, kw_only=True)
class MoESpec:
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


@dataclass(frozen=True, kw_only=True)
class VisionSpec:
    """A ViT-style vision tower (SigLIP, Llama-4, Pixtral, MoonViT) and its projector."""

    model_type: str
    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_channels: int
    patch_size: int
    image_size: int
    params: int
    #: True when the count follows an exact layer-by-layer formula for this tower type.
    exact: bool
    #: Qwen-VL towers (dynamic resolution): frames per 3-D patch, patches merged per side into one
    #: token, the merged output width and the deepstack mergers (len(deepstack_visual_indexes)).
    temporal_patch_size: int = 1
    spatial_merge_size: int = 1
    out_hidden_size: int = 0
    deepstack_layers: int = 0


@dataclass(frozen=True, kw_only=True)
class QuantSpec:
    """What a checkpoint's quantization_config says is stored, and what it leaves unquantized."""

    method: str  # fp8 | mxfp4 | nvfp4 | modelopt-mixed | gptq | awq | compressed-tensors | bitsandbytes
    weight_bits: int
    label: str
    group_size: int | None = None
    block_size: tuple[int, int] | None = None
    #: Module name patterns kept in the activation dtype (from modules_to_not_convert / ignore).
    not_converted: tuple[str, ...] = ()
    #: The routed experts' own storage when the config says so beside the quantization_config
    #: (DeepSeek-V4 `expert_dtype: fp4`), else None.
    expert_format: str | None = None
    #: FP8 with one fp32 scale per tensor (ModelOpt FP8), not per output channel.
    per_tensor: bool = False
    #: ModelOpt MIXED_PRECISION: (role, quant_algo, group) per linear role it quantizes (attention,
    #: mlp, experts, shared_experts, lm_head); a role not listed stays in the activation dtype.
    mixed: tuple[tuple[str, str, int], ...] = ()
    #: Written by NVIDIA ModelOpt: its module names map onto roles (core/modelopt.py).
    modelopt: bool = False
    #: Bytes of one group scale (fp16 by default; compressed-tensors `scale_dtype` torch.uint8, the e8m0
    #: scale of Kimi-K3's mxfp4-pack-quantized experts, is 1).
    scale_bytes: int = 2


@dataclass(frozen=True)
class ParamCounts:
    """Parameters by role, so that quantization and tensor-parallel sharding treat each group as the
    engine does (see `core.params`)."""

    embedding: int = 0
    lm_head: int = 0
    attention: int = 0  # linear weights of attention / linear-attention / Mamba mixers
    mlp: int = 0  # dense MLP linear weights
    experts: int = 0  # routed expert linear weights (all experts)
    shared_experts: int = 0
    router: int = 0
    small: int = 0  # norms, biases, sinks, conv filters, SSM vectors
    vision: int = 0
    #: Active routed-expert weights per token (top-k of each MoE layer).
    experts_active: int = 0
    #: Biases of routed experts (gpt-oss), all experts and the top-k read per token; part of small.
    expert_biases: int = 0
    expert_biases_active: int = 0
    mtp: int = 0  # not part of total: loaded only with speculative decoding
    #: Attention weights an engine replicates on every TP rank (MLA down-projections).
    replicated_attention: int = 0
    #: Embedding rows looked up, not read whole, per token (untied input table, learned positions).
    lookup_only: int = 0

    @property
    def total(self) -> int:
        return (
            self.embedding
            + self.lm_head
            + self.attention
            + self.mlp
            + self.experts
            + self.shared_experts
            + self.router
            + self.small
            + self.vision
        )

    @property
    def active(self) -> int:
        """Weights read per generated token: everything but inactive experts and the input
        lookup tables (one row of those is read). A tied table is read whole as the output
        head, so it counts. This is OpenAI's convention for gpt-oss (20b: 3.61B active)."""
        return (
            self.total
            - self.experts
            + self.experts_active
            - self.expert_biases
            + self.expert_biases_active
            - self.lookup_only
        )

    @property
    def linear(self) -> int:
        """Weights a weight-only quantization converts (decoder linear layers)."""
        return self.attention + self.mlp + self.experts + self.shared_experts

    def __add__(self, other: ParamCounts) -> ParamCounts:
        return ParamCounts(*(a + b for a, b in zip(astuple_counts(self), astuple_counts(other), strict=True)))

    def __mul__(self, times: int) -> ParamCounts:
        return ParamCounts(*(a * times for a in astuple_counts(self)))


def astuple_counts(counts: ParamCounts) -> tuple[int, ...]:
    counted: tuple[int, ...] = _COUNTS_OF(counts)
    return counted


_COUNT_FIELDS = tuple(f.name for f in fields(ParamCounts))
#: The counts in field order, read in one C call (parsing sums these per layer type of every model).
_COUNTS_OF = attrgetter(*_COUNT_FIELDS)


@dataclass(frozen=True, kw_only=True)
class ModelSpec:
    """Architecture facts for sizing. All integers come from the config (or its family defaults);
    `params` is counted from them once, when the spec is parsed."""

    model_type: str
    architecture: str
    family: str
    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    intermediate_size: int
    vocab_size: int
    tie_word_embeddings: bool
    max_position_embeddings: int | None
    torch_dtype: str
    layers: tuple[LayerSpec, ...]
    params: ParamCounts = ParamCounts()
    mla: MLASpec | None = None
    moe: MoESpec | None = None
    linear_attention: LinearAttentionSpec | None = None
    mamba: MambaSpec | None = None
    kimi_delta: KimiDeltaSpec | None = None
    #: Kimi-K3 attention residuals (`attn_res_block_size`, layers per block; 0 = plain residuals): each
    #: layer mixes the earlier blocks' outputs with learned pseudo-queries (`core.params`).
    attn_res_block_size: int = 0
    #: The recurrent-state dtype the config declares (Qwen3.5 `mamba_ssm_dtype`, Nemotron-H
    #: `mamba_ssm_cache_dtype`), as a gpusize dtype name; None when it declares none.
    ssm_state_dtype: str | None = None
    compressed: CompressedAttentionSpec | None = None
    vision: VisionSpec | None = None
    quantization: QuantSpec | None = None
    #: Multi-token-prediction layers stored in the checkpoint (DeepSeek-V3, GLM-4.5, Qwen3-Next).
    num_nextn_predict_layers: int = 0
    # Layer anatomy, resolved from the config and its family defaults.
    norm: str = "rms"
    norms_per_layer: int = 2
    qkv_bias: bool = False
    o_bias: bool = False
    mlp_bias: bool = False
    gated_mlp: bool = True
    qk_norm: str = "none"
    #: Rows of a learned absolute position table (gpt_bigcode `wpe`); 0 for RoPE models.
    learned_position_embeddings: int = 0
    attention_sinks: bool = False
    #: Qwen3-Next gated attention: q_proj also emits a per-head output gate.
    attention_output_gate: bool = False
    #: The unsupported model_type read as a Llama-style decoder with --best-effort (else None).
    best_effort_from: str | None = None
    #: Longest context the config allows: max_position_embeddings, or original x factor for a
    #: YaRN / dynamic rope_scaling that extends it (vLLM's derived max_model_len).
    max_context: int | None = None
    #: The rope_scaling the config declares, as (type, factor, original max); None when absent.
    rope_scaling: tuple[str, float, int] | None = None
    #: True when rope_scaling came from the user (--rope-scaling), not the config: the launch command
    #: must then carry it, and the engine's maximum follows it.
    rope_overridden: bool = False

    def __hash__(self) -> int:
        """The hash of the compared fields, computed once per spec (kept in its __dict__ beside the
        cached properties): a spec keys the training model's caches, and hashing its layers again on
        every lookup was a third of `train --seq 128k` (bench/RESULTS.md). Equal specs hash equal."""
        known: int | None = self.__dict__.get("_hash")
        if known is None:
            known = hash(tuple(getattr(self, name) for name in _HASHED))
            object.__setattr__(self, "_hash", known)
        return known

    @cached_property
    def attention_layers(self) -> tuple[LayerSpec, ...]:
        return tuple(layer for layer in self.layers if layer.mixer in KV_MIXERS)

    @cached_property
    def layer_counts(self) -> tuple[tuple[LayerSpec, int], ...]:
        """Each distinct layer once, in model order, with how many layers of the model are that one
        (the parser makes one object per layer kind; sums over layers run over these)."""
        counts: dict[LayerSpec, int] = {}
        for layer in self.layers:
            counts[layer] = counts.get(layer, 0) + 1
        return tuple(counts.items())

    @cached_property
    def attention_layer_counts(self) -> tuple[tuple[LayerSpec, int], ...]:
        """`layer_counts` of the layers that keep a per-token KV cache."""
        return tuple((layer, n) for layer, n in self.layer_counts if layer.mixer in KV_MIXERS)

    @cached_property
    def attention_kinds(self) -> tuple[tuple[tuple[str, int | None], int], ...]:
        """((kind, window), layer count) of the attention layers, in first-seen order: kind is full,
        sliding or chunked (the KV groups an engine forms; computed once per model)."""
        counts: dict[tuple[str, int | None], int] = {}
        for layer in self.attention_layers:
            key = (
                ("full", None)
                if layer.window is None
                else ("chunked" if layer.chunked else "sliding", layer.window)
            )
            counts[key] = counts.get(key, 0) + 1
        return tuple(counts.items())

    @cached_property
    def uniform_kv_heads(self) -> bool:
        """Every attention layer has the same number of KV heads (DeciLM block_configs may not)."""
        return len({layer.num_key_value_heads for layer in self.attention_layers}) <= 1


#: The fields ModelSpec's hash covers (compare=True where hash is unset, or hash=True), listed once.
_HASHED = tuple(f.name for f in fields(ModelSpec) if (f.compare if f.hash is None else f.hash))
