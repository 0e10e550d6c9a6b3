"""ModelSpec: the architecture facts of a model (pure values), with its vision tower and its
checkpoint's quantization; its layers are LayerSpecs (`core.spec.layers`), its parameter counts a
ParamCounts (`core.spec.counts`).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import fields
from functools import cached_property
from itertools import compress
from operator import attrgetter

from gpusize.core.spec.counts import ParamCounts
from gpusize.core.spec.layers import (
    KV_MIXERS,
    CompressedAttentionSpec,
    KimiDeltaSpec,
    LayerSpec,
    LinearAttentionSpec,
    MambaSpec,
    MLASpec,
    MoESpec,
)
from gpusize.dataclass import dataclass

__all__ = ["ModelSpec", "QuantSpec", "VisionSpec"]


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
    #: A ModelOpt checkpoint's roles that `not_converted` keeps unquantized, matched once when parsed
    #: (`core.modelopt.modelopt_skipped`); empty for any other checkpoint.
    modelopt_skipped: tuple[str, ...] = ()
    #: Bytes of one group scale (fp16 by default; compressed-tensors `scale_dtype` torch.uint8, the e8m0
    #: scale of Kimi-K3's mxfp4-pack-quantized experts, is 1).
    scale_bytes: int = 2


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
    #: The decoder layers of one MTP step where the config names them (Nemotron-3
    #: `mtp_hybrid_override_pattern` / `mtp_layers_block_type`); () = one copy of the last layer.
    mtp_layers: tuple[LayerSpec, ...] = ()
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
        every lookup was a third of `train --seq 128k` (bench/RESULTS.md). The layer tuples count by
        their lengths (`_HASHED_VALUES`): equal specs have equal layers, so equal specs hash equal, and
        the first hash of a spec no longer calls every layer's __hash__ (a tenth of `which` over the
        catalog, which hashes each of ~170 specs once, bench/RESULTS.md issue 24)."""
        known: int | None = self.__dict__.get("_hash")
        if known is None:
            known = hash((_HASHED_VALUES(self), len(self.layers), len(self.mtp_layers)))
            object.__setattr__(self, "_hash", known)
        return known

    @cached_property
    def attention_layers(self) -> tuple[LayerSpec, ...]:
        """The layers that keep a per-token KV cache, in model order (filtered at C level: a Python
        loop over every layer of ~170 specs was a twentieth of `which` over the catalog)."""
        kept = map(KV_MIXERS.__contains__, map(_MIXER, self.layers))
        return tuple(compress(self.layers, kept))

    @cached_property
    def layer_counts(self) -> tuple[tuple[LayerSpec, int], ...]:
        """Each distinct layer once, in model order, with how many layers of the model are that one
        (the parser makes one object per layer kind; sums over layers run over these)."""
        # Counted by identity first (a C-level count: the parser, and the stored specs' decoder, share
        # one object per layer kind), then the distinct objects merged by equality, in first-seen
        # order: the same pairs as counting every layer by value, without a __hash__ call a layer.
        by_id = Counter(map(id, self.layers))
        objects = dict(zip(map(id, self.layers), self.layers, strict=True))
        counts: dict[LayerSpec, int] = {}
        for key, n in by_id.items():
            layer = objects[key]
            counts[layer] = counts.get(layer, 0) + n
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
        # over each distinct layer with its count (`attention_layer_counts`, in first-seen order): a
        # key's first layer comes first either way, and the counts add up the same
        for layer, n in self.attention_layer_counts:
            key = (
                ("full", None)
                if layer.window is None
                else ("chunked" if layer.chunked else "sliding", layer.window)
            )
            counts[key] = counts.get(key, 0) + n
        return tuple(counts.items())

    @cached_property
    def uniform_kv_heads(self) -> bool:
        """Every attention layer has the same number of KV heads (DeciLM block_configs may not)."""
        return len({layer.num_key_value_heads for layer, _ in self.attention_layer_counts}) <= 1


#: The fields ModelSpec's hash covers (compare=True where hash is unset, or hash=True), listed once;
#: the layer tuples are left to their lengths (`ModelSpec.__hash__`).
_HASHED = tuple(
    f.name
    for f in fields(ModelSpec)
    if (f.compare if f.hash is None else f.hash) and f.name not in ("layers", "mtp_layers")
)
#: Those fields' values of a spec, as one tuple (a C-level getter).
_HASHED_VALUES = attrgetter(*_HASHED)
#: A layer's mixer (a C-level getter, for `attention_layers`).
_MIXER = attrgetter("mixer")
