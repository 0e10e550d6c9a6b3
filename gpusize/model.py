"""ModelSpec: the architecture facts of a model, parsed once from a Hugging Face config.json (pure).

Every variant spelling (`n_head`, `n_layer`, `num_kv_heads`, `multi_query`, nested `text_config`,
`layer_types`, `block_configs`, ...) is resolved here; nothing downstream reads raw dicts. Field names
follow the Transformers config names so anyone can check them against a file. Architecture defaults
that a config may omit (a Gemma config without `vocab_size`, a Qwen2 config without `attention_bias`)
come from `families.FAMILIES`, which mirrors the Transformers config classes.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from gpusize.errors import ConfigError
from gpusize.families import Family, family_for
from gpusize.units import DTYPE_ALIASES

Mixer = Literal["attention", "linear_attention", "mamba", "none"]
Ffn = Literal["dense", "moe", "none"]


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class LayerSpec(Frozen):
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


class MLASpec(Frozen):
    """DeepSeek multi-head latent attention (V2/V3/R1, Kimi-K2)."""

    q_lora_rank: int | None
    kv_lora_rank: int
    qk_nope_head_dim: int
    qk_rope_head_dim: int
    v_head_dim: int


class MoESpec(Frozen):
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


class LinearAttentionSpec(Frozen):
    """Qwen3-Next Gated DeltaNet layers: constant recurrent state per sequence, no per-token KV."""

    num_key_heads: int
    num_value_heads: int
    key_head_dim: int
    value_head_dim: int
    conv_kernel: int


class MambaSpec(Frozen):
    """Mamba-2 layers (Nemotron-H): SSM state + conv state per sequence."""

    num_heads: int
    head_dim: int
    state_size: int
    n_groups: int
    conv_kernel: int
    proj_bias: bool
    conv_bias: bool


class VisionSpec(Frozen):
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


class QuantSpec(Frozen):
    """What a checkpoint's quantization_config says is stored, and what it leaves unquantized."""

    method: str  # fp8 | mxfp4 | gptq | awq | compressed-tensors | bitsandbytes ...
    weight_bits: int
    group_size: int | None = None
    block_size: tuple[int, int] | None = None
    #: Module name patterns kept in the activation dtype (from modules_to_not_convert / ignore).
    not_converted: tuple[str, ...] = ()
    label: str


class ModelSpec(Frozen):
    """Architecture facts for sizing. All integers come from the config (or its family defaults)."""

    model_type: str
    architecture: str
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
    mla: MLASpec | None = None
    moe: MoESpec | None = None
    linear_attention: LinearAttentionSpec | None = None
    mamba: MambaSpec | None = None
    vision: VisionSpec | None = None
    quantization: QuantSpec | None = None
    #: Multi-token-prediction layers stored in the checkpoint (DeepSeek-V3, GLM-4.5, Qwen3-Next).
    num_nextn_predict_layers: int = 0
    family: str
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

    @property
    def attention_layers(self) -> tuple[LayerSpec, ...]:
        return tuple(layer for layer in self.layers if layer.mixer == "attention")

    @property
    def rules(self) -> Family:
        return family_for(self.family)


# --------------------------------------------------------------------------- parsing helpers


def _first(cfg: dict[str, Any], *keys: str, default: Any = None) -> Any:
    for key in keys:
        if key in cfg and cfg[key] is not None:
            return cfg[key]
    return default


def _positive_int(cfg: dict[str, Any], what: str, *keys: str, default: Any = None) -> int:
    value = _first(cfg, *keys, default=default)
    if value is None:
        raise ConfigError(f"config.json: missing '{keys[0]}' ({what})")
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ConfigError(f"config.json: '{keys[0]}' must be a positive integer, got {value!r}")
    return value


def text_config(config: dict[str, Any]) -> dict[str, Any]:
    """The language-model part of a config: nested `text_config`/`llm_config` or the config itself.

    Top-level keys the nested config lacks (torch_dtype, quantization_config, tie flags) are
    inherited, as Transformers composite configs do.
    """
    nested = _first(config, "text_config", "llm_config", "language_config")
    if not isinstance(nested, dict):
        return config
    inherited = {k: v for k, v in config.items() if k not in nested and k not in _COMPOSITE_ONLY}
    return {**inherited, **nested}


_COMPOSITE_ONLY = {
    "text_config",
    "llm_config",
    "language_config",
    "vision_config",
    "model_type",
    "architectures",
}


def _torch_dtype(config: dict[str, Any], text: dict[str, Any]) -> str:
    raw = _first(text, "torch_dtype", "dtype") or _first(config, "torch_dtype", "dtype") or "bf16"
    name = str(raw).lower().removeprefix("torch.")
    return DTYPE_ALIASES.get(name, "bf16")


def parse_config(config: Any, best_effort: bool = False) -> ModelSpec:
    """Parse a config.json dict into a ModelSpec; ConfigError says which field is missing or bad.

    An unknown model_type is an error unless `best_effort`: then the config is read as a plain
    Llama-style decoder from its standard fields and the spec records that it is an estimate."""
    if not isinstance(config, dict) or not config:
        raise ConfigError("config.json: expected a non-empty JSON object")
    text = text_config(config)
    unknown = None
    try:
        family = family_for_config(config, text)
    except ConfigError:
        if not best_effort or not (text.get("model_type") or config.get("model_type")):
            raise
        unknown, family = str(text.get("model_type") or config.get("model_type")), "llama"
    rules = family_for(family)
    cfg = {**rules.defaults, **{k: v for k, v in text.items() if v is not None}}

    hidden = _positive_int(cfg, "hidden size", "hidden_size", "n_embd", "d_model")
    layers_n = _positive_int(cfg, "layer count", "num_hidden_layers", "n_layer", "num_layers")
    heads = _positive_int(cfg, "attention heads", "num_attention_heads", "n_head")
    kv_heads = _kv_heads(cfg, heads)
    head_dim = _first(cfg, "head_dim", "attention_head_dim", "kv_channels") or hidden // heads
    if not isinstance(head_dim, int) or head_dim <= 0:
        raise ConfigError(f"config.json: 'head_dim' must be a positive integer, got {head_dim!r}")
    if heads % kv_heads:
        raise ConfigError(
            f"config.json: num_attention_heads ({heads}) is not a multiple of "
            f"num_key_value_heads ({kv_heads})"
        )
    intermediate = _first(cfg, "intermediate_size", "n_inner", "ffn_hidden_size")
    if intermediate is None:
        intermediate = rules.default_mlp_ratio * hidden
    vocab = _positive_int(cfg, "vocabulary size", "vocab_size", "padded_vocab_size")

    from gpusize import architectures  # local import: keeps module import light

    cfg.setdefault("model_type", family)
    moe = architectures.moe_spec(cfg)
    layers = architectures.layer_specs(cfg, family, layers_n, heads, kv_heads, intermediate, moe)
    return ModelSpec(
        model_type=str(text.get("model_type") or config.get("model_type") or family),
        architecture=str((config.get("architectures") or [family])[0]),
        hidden_size=hidden,
        num_hidden_layers=layers_n,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        head_dim=head_dim,
        intermediate_size=int(intermediate),
        vocab_size=vocab,
        tie_word_embeddings=bool(_first(cfg, "tie_word_embeddings", default=rules.tie_default)),
        max_position_embeddings=_first(
            cfg, "max_position_embeddings", "n_positions", "seq_length", "max_sequence_length"
        ),
        torch_dtype=_torch_dtype(config, text),
        layers=layers,
        mla=architectures.mla_spec(cfg),
        moe=moe,
        linear_attention=architectures.linear_attention_spec(cfg),
        mamba=architectures.mamba_spec(cfg),
        vision=architectures.vision_spec(config),
        quantization=architectures.quant_spec(config, text),
        num_nextn_predict_layers=int(_first(cfg, "num_nextn_predict_layers", default=0)),
        family=family,
        best_effort_from=unknown,
        max_context=_max_context(cfg),
        **_anatomy(cfg, rules, family),
    )


def _max_context(cfg: dict[str, Any]) -> int | None:
    base = _first(cfg, "max_position_embeddings", "n_positions", "seq_length", "max_sequence_length")
    if not isinstance(base, int) or base <= 0:
        return None
    rope = cfg.get("rope_scaling") or {}
    kind = rope.get("rope_type") or rope.get("type")
    original, factor = rope.get("original_max_position_embeddings"), rope.get("factor")
    if kind in ("yarn", "dynamic") and original and factor:
        return max(base, int(original * factor))
    return base


def _anatomy(cfg: dict[str, Any], rules: Family, family: str) -> dict[str, Any]:
    """Norms, biases and MLP shape: config keys first, then the family's defaults."""
    qk_norm = rules.qk_norm
    if rules.qk_norm_key and cfg.get(rules.qk_norm_key):
        qk_norm = "per_head_full" if family in ("cohere", "stablelm") else "head"
    learned = 0
    if rules.learned_positions:
        learned = int(_first(cfg, "n_positions", "max_position_embeddings", default=0))
    return {
        "norm": rules.norm,
        "norms_per_layer": _norms_per_layer(cfg, rules, family),
        "qkv_bias": rules.qkv_bias.resolve(cfg),
        "o_bias": rules.o_bias.resolve(cfg),
        "mlp_bias": rules.mlp_bias.resolve(cfg),
        "gated_mlp": rules.gated_mlp,
        "qk_norm": qk_norm,
        "learned_position_embeddings": learned,
        "attention_sinks": rules.attention_sinks,
        "attention_output_gate": family == "qwen3_next",
    }


def _norms_per_layer(cfg: dict[str, Any], rules: Family, family: str) -> int:
    if family == "falcon":
        if cfg.get("new_decoder_architecture"):
            return int(cfg.get("num_ln_in_parallel_attn") or 2)
        return 1 if cfg.get("parallel_attn", True) else 2
    if family == "stablelm" and cfg.get("use_parallel_residual"):
        return 1
    return rules.norms_per_layer


def _kv_heads(cfg: dict[str, Any], heads: int) -> int:
    if cfg.get("multi_query") and not cfg.get("new_decoder_architecture"):
        return 1
    value = _first(
        cfg, "num_key_value_heads", "num_kv_heads", "n_head_kv", "multi_query_group_num", default=heads
    )
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ConfigError(f"config.json: 'num_key_value_heads' must be a positive integer, got {value!r}")
    return value


def family_for_config(config: dict[str, Any], text: dict[str, Any]) -> str:
    """The family key for a config: its text model_type, else its top-level model_type."""
    from gpusize.families import FAMILIES, TEXT_FAMILY_OF

    composite = TEXT_FAMILY_OF.get(str(config.get("model_type")))
    for candidate in (text.get("model_type"), composite, config.get("model_type")):
        if isinstance(candidate, str) and candidate in FAMILIES:
            return candidate
    model_type = text.get("model_type") or config.get("model_type")
    if not model_type:
        raise ConfigError("config.json: missing 'model_type'; is this a Hugging Face config.json?")
    missing = [names[0] for names in _STANDARD_FIELDS if not any(n in text for n in names)]
    lacking = f"; missing standard fields: {', '.join(missing)}" if missing else ""
    raise ConfigError(
        f"config.json: unsupported model_type '{model_type}'{lacking}",
        hint="pass --best-effort for an estimate read as a Llama-style decoder, flagged as such"
        if not missing
        else f"gpusize knows: {', '.join(sorted(FAMILIES))}",
    )


#: Fields a Llama-style reading of an unknown architecture needs (any spelling of each).
_STANDARD_FIELDS = (
    ("hidden_size", "n_embd", "d_model"),
    ("num_hidden_layers", "n_layer", "num_layers"),
    ("num_attention_heads", "n_head"),
    ("vocab_size", "padded_vocab_size"),
)
