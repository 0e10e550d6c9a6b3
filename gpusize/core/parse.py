"""parse_config: a Hugging Face config.json dict -> ModelSpec (pure).

Every variant spelling (`n_head`, `n_layer`, `num_kv_heads`, `multi_query`, nested `text_config`,
`layer_types`, `block_configs`, ...) is resolved here, through `core.fields` (typed, bounded reads
whose errors name the field), so nothing downstream reads raw dicts. Architecture defaults a config
may omit (a Gemma config without `vocab_size`) come from `core.families`. Each structure is read from
the config's own fields, never from a model name, so a new model of a known family needs no code.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, cast

from gpusize.core import vision as vision_towers
from gpusize.core.families import FAMILIES, TEXT_FAMILY_OF, Family, family_for
from gpusize.core.fields import BOUNDS, Fields, echo
from gpusize.core.params import count_params
from gpusize.core.spec import (
    Ffn,
    LayerSpec,
    LinearAttentionSpec,
    MambaSpec,
    Mixer,
    MLASpec,
    ModelSpec,
    MoESpec,
    QuantSpec,
    VisionSpec,
)
from gpusize.errors import ConfigError
from gpusize.units import DTYPE_ALIASES

__all__ = ["parse_config", "text_config", "with_rope_scaling"]

_COMPOSITE_ONLY = {
    "text_config",
    "llm_config",
    "language_config",
    "vision_config",
    "model_type",
    "architectures",
}
#: Fields a Llama-style reading of an unknown architecture needs (any spelling of each).
_STANDARD_FIELDS = (
    ("hidden_size", "n_embd", "d_model"),
    ("num_hidden_layers", "n_layer", "num_layers"),
    ("num_attention_heads", "n_head"),
    ("vocab_size", "padded_vocab_size"),
)
_POSITIONS = ("max_position_embeddings", "n_positions", "seq_length", "max_sequence_length")


def text_config(config: dict[str, Any]) -> dict[str, Any]:
    """The language-model part of a config: nested `text_config`/`llm_config` or the config itself.

    Top-level keys the nested config lacks (torch_dtype, quantization_config, tie flags) are
    inherited, as Transformers composite configs do."""
    nested = next(
        (config[k] for k in ("text_config", "llm_config", "language_config") if config.get(k)), None
    )
    if nested is None:
        return config
    if not isinstance(nested, dict):
        raise ConfigError(f"config.json: 'text_config' must be an object, got {echo(nested)}")
    inherited = {k: v for k, v in config.items() if k not in nested and k not in _COMPOSITE_ONLY}
    return {**inherited, **nested}


def parse_config(config: Any, best_effort: bool = False, where: str = "config.json") -> ModelSpec:
    """Parse a config.json dict into a ModelSpec; ConfigError names the field that is missing or bad.

    An unknown model_type is an error unless `best_effort`: then the config is read as a plain
    Llama-style decoder from its standard fields and the spec records that it is an estimate."""
    if not isinstance(config, dict) or not config:
        raise ConfigError(f"{where}: expected a non-empty JSON object")
    text = text_config(config)
    unknown = None
    try:
        family = _family(config, text, where)
    except ConfigError:
        model_type = text.get("model_type") or config.get("model_type")
        if not best_effort or not isinstance(model_type, str):
            raise
        unknown, family = model_type[:80], "llama"
    rules = family_for(family)
    f = Fields({**rules.defaults, **{k: v for k, v in text.items() if v is not None}}, where)
    spec = _spec(config, text, f, family, rules)
    spec = replace(spec, best_effort_from=unknown)
    return replace(spec, params=count_params(spec))


def _spec(config: dict[str, Any], text: dict[str, Any], f: Fields, family: str, rules: Family) -> ModelSpec:
    hidden = f.integer("hidden_size", "n_embd", "d_model", kind="width")
    layers_n = f.integer("num_hidden_layers", "n_layer", "num_layers", kind="layers")
    heads = f.integer("num_attention_heads", "n_head", kind="heads")
    kv_heads = _kv_heads(f, heads)
    head_dim = f.optional_integer("head_dim", "attention_head_dim", "kv_channels", kind="width")
    if head_dim is None:
        head_dim = hidden // heads
        if head_dim < 1:
            raise ConfigError(f"{f.where}: hidden_size {hidden} is smaller than num_attention_heads {heads}")
    if heads % kv_heads:
        raise ConfigError(
            f"{f.where}: num_attention_heads ({heads}) is not a multiple of num_key_value_heads ({kv_heads})"
        )
    if heads * head_dim > BOUNDS["attention"]:
        raise ConfigError(
            f"{f.where}: {heads} attention heads of {head_dim} make an attention {heads * head_dim:,} wide, "
            f"beyond any model (at most {BOUNDS['attention']:,})"
        )
    intermediate = f.integer(
        "intermediate_size",
        "n_inner",
        "ffn_hidden_size",
        kind="width",
        default=rules.default_mlp_ratio * hidden,
    )
    vocab = f.integer("vocab_size", "padded_vocab_size", kind="vocab")
    model_type = f.string("model_type") or family
    moe = _moe(f, model_type)
    layers = _layers(f, family, layers_n, heads, kv_heads, intermediate, moe)
    linear, mamba = _linear_attention(f), _mamba(f)
    _check_mixers(f, layers, linear, mamba)
    positions = f.optional_integer(*_POSITIONS, kind="positions")
    top = Fields(config, f.where)
    return ModelSpec(
        model_type=str(text.get("model_type") or config.get("model_type") or family)[:80],
        architecture=_architecture(top, family),
        family=family,
        hidden_size=hidden,
        num_hidden_layers=layers_n,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        head_dim=head_dim,
        intermediate_size=intermediate,
        vocab_size=vocab,
        tie_word_embeddings=f.boolean("tie_word_embeddings", default=rules.tie_default),
        max_position_embeddings=positions,
        torch_dtype=_torch_dtype(config, text),
        layers=layers,
        mla=_mla(f),
        moe=moe,
        linear_attention=linear,
        mamba=mamba,
        vision=_vision(top, hidden),
        quantization=_quant(config, text, f.where),
        num_nextn_predict_layers=f.integer("num_nextn_predict_layers", kind="small", default=0, minimum=0),
        max_context=_max_context(f, positions),
        rope_scaling=_rope(f),
        **_anatomy(f, rules, family, positions),
    )


def with_rope_scaling(spec: ModelSpec, kind: str, factor: float, original: int | None) -> ModelSpec:
    """The spec with a user-given rope scaling (e.g. YaRN x4 over 32,768 positions): the maximum
    context becomes original x factor, as vLLM derives max_model_len from `rope_scaling`."""
    base = original or (spec.rope_scaling[2] if spec.rope_scaling else None) or spec.max_position_embeddings
    if not base:
        raise ConfigError(
            "--rope-scaling needs the original context: the config has no max_position_embeddings"
        )
    return replace(
        spec, rope_scaling=(kind, factor, base), max_context=int(base * factor), rope_overridden=True
    )


# --------------------------------------------------------------------------- family and basics


def _family(config: dict[str, Any], text: dict[str, Any], where: str) -> str:
    """The family key for a config: its text model_type, else its top-level model_type."""
    top_type, text_type = config.get("model_type"), text.get("model_type")
    composite = TEXT_FAMILY_OF.get(top_type) if isinstance(top_type, str) else None
    for candidate in (text_type, composite, top_type):
        if isinstance(candidate, str) and candidate in FAMILIES:
            return candidate
    model_type = text_type or top_type
    if not model_type:
        raise ConfigError(f"{where}: missing 'model_type'; is this a Hugging Face config.json?")
    if not isinstance(model_type, str):
        raise ConfigError(f"{where}: 'model_type' must be a string, got {echo(model_type)}")
    missing = [names[0] for names in _STANDARD_FIELDS if not any(n in text for n in names)]
    lacking = f"; missing standard fields: {', '.join(missing)}" if missing else ""
    raise ConfigError(
        f"{where}: unsupported model_type {echo(model_type)}{lacking}",
        hint="pass --best-effort for an estimate read as a Llama-style decoder, flagged as such"
        if not missing
        else f"gpusize knows: {', '.join(sorted(FAMILIES))}",
    )


def _architecture(top: Fields, family: str) -> str:
    _, value = top.first("architectures")
    if value is None:
        return family
    if not isinstance(value, list) or not value or not isinstance(value[0], str):
        raise top.fail("architectures", "must be a list of class names", value)
    return value[0][:80]


def _kv_heads(f: Fields, heads: int) -> int:
    if f.boolean("multi_query", default=False) and not f.boolean("new_decoder_architecture", default=False):
        return 1
    return f.integer(
        "num_key_value_heads",
        "num_kv_heads",
        "n_head_kv",
        "multi_query_group_num",
        kind="heads",
        default=heads,
    )


def _torch_dtype(config: dict[str, Any], text: dict[str, Any]) -> str:
    raw = next(
        (c[k] for c in (text, config) for k in ("torch_dtype", "dtype") if isinstance(c.get(k), str)), "bf16"
    )
    return DTYPE_ALIASES.get(str(raw).lower().removeprefix("torch."), "bf16")


def _rope(f: Fields) -> tuple[str, float, int] | None:
    rope = f.sub("rope_scaling")
    if not rope.raw:
        return None
    kind = rope.string("rope_type", "type", default="default") or "default"
    factor = rope.number("factor", default=1.0)
    if factor > 1024:
        raise rope.fail("factor", "must be at most 1024", factor)
    original = rope.optional_integer("original_max_position_embeddings", kind="positions")
    return (kind, factor, original or 0)


def _max_context(f: Fields, positions: int | None) -> int | None:
    rope = _rope(f)
    if positions is None:
        return None
    if rope and rope[0] in ("yarn", "dynamic") and rope[2]:
        return max(positions, int(rope[2] * rope[1]))
    return positions


def _anatomy(f: Fields, rules: Family, family: str, positions: int | None) -> dict[str, Any]:
    """Norms, biases and MLP shape: config keys first, then the family's defaults."""
    qk_norm = rules.qk_norm
    if rules.qk_norm_key and f.boolean(rules.qk_norm_key, default=False):
        qk_norm = "per_head_full" if family in ("cohere", "stablelm") else "head"
    return {
        "norm": rules.norm,
        "norms_per_layer": _norms_per_layer(f, rules, family),
        "qkv_bias": rules.qkv_bias.resolve(f.raw),
        "o_bias": rules.o_bias.resolve(f.raw),
        "mlp_bias": rules.mlp_bias.resolve(f.raw),
        "gated_mlp": rules.gated_mlp,
        "qk_norm": qk_norm,
        "learned_position_embeddings": (positions or 0) if rules.learned_positions else 0,
        "attention_sinks": rules.attention_sinks,
        "attention_output_gate": family == "qwen3_next",
    }


def _norms_per_layer(f: Fields, rules: Family, family: str) -> int:
    if family == "falcon":
        if f.boolean("new_decoder_architecture", default=False):
            return f.integer("num_ln_in_parallel_attn", kind="small", default=2)
        return 1 if f.boolean("parallel_attn", default=True) else 2
    if family == "stablelm" and f.boolean("use_parallel_residual", default=False):
        return 1
    return rules.norms_per_layer


# --------------------------------------------------------------------------- MoE, MLA, recurrent mixers


def _moe(f: Fields, model_type: str) -> MoESpec | None:
    experts = f.optional_integer(
        "num_experts", "num_local_experts", "n_routed_experts", "moe_num_experts", kind="experts", minimum=0
    )
    if not experts:
        return None
    top_k = f.integer("num_experts_per_tok", "experts_per_token", "moe_top_k", "top_k", kind="experts")
    if top_k > experts:
        raise ConfigError(f"{f.where}: num_experts_per_tok ({top_k}) exceeds the {experts} experts")
    width = f.integer("moe_intermediate_size", "intermediate_size", kind="width")
    shared_n = f.integer("n_shared_experts", kind="experts", default=0, minimum=0)
    shared_width = f.integer("shared_expert_intermediate_size", kind="width", default=0, minimum=0)
    if shared_n:
        shared = shared_n * width
    elif shared_width:
        shared = shared_width
    else:
        shared = width if model_type == "llama4_text" else 0  # Llama-4: one shared expert per MoE layer
    return MoESpec(
        num_experts=experts,
        num_experts_per_tok=top_k,
        moe_intermediate_size=width,
        shared_intermediate_size=shared,
        shared_expert_gate=bool(shared_width),
        router_bias=model_type == "gpt_oss",
        score_correction_bias=f.string("topk_method") == "noaux_tc"
        or model_type == "glm4_moe"
        or (model_type == "minimax_m2" and f.boolean("use_routing_bias", default=True)),
        expert_bias=model_type == "gpt_oss",
    )


def _mla(f: Fields) -> MLASpec | None:
    if not f.optional_integer("kv_lora_rank", kind="width", minimum=0):
        return None
    return MLASpec(
        q_lora_rank=f.optional_integer("q_lora_rank", kind="width", minimum=0) or None,
        kv_lora_rank=f.integer("kv_lora_rank", kind="width"),
        qk_nope_head_dim=f.integer("qk_nope_head_dim", kind="width"),
        qk_rope_head_dim=f.integer("qk_rope_head_dim", kind="width"),
        v_head_dim=f.integer("v_head_dim", kind="width"),
    )


def _linear_attention(f: Fields) -> LinearAttentionSpec | None:
    if not f.has("linear_num_value_heads"):
        return None
    return LinearAttentionSpec(
        num_key_heads=f.integer("linear_num_key_heads", kind="heads"),
        num_value_heads=f.integer("linear_num_value_heads", kind="heads"),
        key_head_dim=f.integer("linear_key_head_dim", kind="width"),
        value_head_dim=f.integer("linear_value_head_dim", kind="width"),
        conv_kernel=f.integer("linear_conv_kernel_dim", kind="small", default=4),
    )


def _mamba(f: Fields) -> MambaSpec | None:
    if not f.has("mamba_num_heads"):
        return None
    return MambaSpec(
        num_heads=f.integer("mamba_num_heads", kind="heads"),
        head_dim=f.integer("mamba_head_dim", kind="width"),
        state_size=f.integer("ssm_state_size", kind="width"),
        n_groups=f.integer("n_groups", kind="heads", default=1),
        conv_kernel=f.integer("conv_kernel", kind="small", default=4),
        proj_bias=f.boolean("mamba_proj_bias", default=False),
        conv_bias=f.boolean("use_conv_bias", default=True),
    )


# --------------------------------------------------------------------------- layer layout


def _check_mixers(
    f: Fields, layers: tuple[LayerSpec, ...], linear: LinearAttentionSpec | None, mamba: MambaSpec | None
) -> None:
    """Layers of a recurrent kind need that kind's dimensions (a layout naming linear-attention or
    Mamba layers in a config without their fields cannot be sized)."""
    mixers = {layer.mixer for layer in layers}
    if "linear_attention" in mixers and linear is None:
        raise ConfigError(
            f"{f.where}: the layers use linear attention but 'linear_num_value_heads' is missing"
        )
    if "mamba" in mixers and mamba is None:
        raise ConfigError(f"{f.where}: the layers use Mamba blocks but 'mamba_num_heads' is missing")


def _layers(
    f: Fields, family: str, n: int, heads: int, kv_heads: int, intermediate: int, moe: MoESpec | None
) -> tuple[LayerSpec, ...]:
    """One LayerSpec per decoder layer, from the config's own layout fields."""
    if f.has("hybrid_override_pattern"):
        return _pattern_layers(f, n, heads, kv_heads, intermediate)
    if f.has("block_configs"):
        return _block_config_layers(f, n, heads)
    types = _layer_types(f, n)
    mixers = _mixers(f, n, types)
    windows = _windows(f, family, n, types)
    dense_width = f.integer("intermediate_size_mlp", "intermediate_size", kind="width", default=intermediate)
    ffns = _ffns(f, n, moe)
    made: dict[tuple[str, int | None, bool, str], LayerSpec] = {}  # one object per distinct layer kind

    def layer(i: int) -> LayerSpec:
        key = (mixers[i], windows[i][0], windows[i][1], ffns[i])
        if key not in made:
            made[key] = LayerSpec(
                mixer=cast(Mixer, mixers[i]),
                window=windows[i][0],
                chunked=windows[i][1],
                num_attention_heads=heads,
                num_key_value_heads=kv_heads,
                ffn=cast(Ffn, ffns[i]),
                intermediate_size=moe.moe_intermediate_size if ffns[i] == "moe" and moe else dense_width,
            )
        return made[key]

    return tuple(layer(i) for i in range(n))


def _layer_types(f: Fields, n: int) -> list[str] | None:
    key, value = f.first("layer_types")
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(t, str) for t in value):
        raise f.fail(key, "must be a list of layer type names", value)
    if len(value) != n:
        raise f.fail(key, f"must list {n} layer types (num_hidden_layers); it has {len(value)}")
    return value


def _mixers(f: Fields, n: int, types: list[str] | None) -> list[str]:
    if types is not None:
        return ["linear_attention" if t == "linear_attention" else "attention" for t in types]
    interval = f.optional_integer("full_attention_interval", kind="layers")
    if interval:
        return ["attention" if (i + 1) % interval == 0 else "linear_attention" for i in range(n)]
    return ["attention"] * n


def _windows(f: Fields, family: str, n: int, types: list[str] | None) -> list[tuple[int | None, bool]]:
    """(window, chunked) per layer; window None = global attention over the whole context."""
    window = f.optional_integer("sliding_window", kind="positions")
    chunk = f.optional_integer("attention_chunk_size", kind="positions")
    if types is not None:
        if "sliding_attention" in types and not window:
            raise ConfigError(
                f"{f.where}: layer_types names sliding_attention but 'sliding_window' is missing"
            )
        return [_window_of_type(t, window, chunk) for t in types]
    if chunk and family == "llama4_text":
        listed = f.int_list("no_rope_layers", kind="small")
        if listed and len(listed) != n:
            raise ConfigError(
                f"{f.where}: 'no_rope_layers' must list {n} values (one per layer); it has {len(listed)}"
            )
        no_rope = listed or [int((i + 1) % 4 != 0) for i in range(n)]  # an empty list means the default
        return [(chunk, True) if no_rope[i] else (None, False) for i in range(n)]
    if not window or not f.boolean("use_sliding_window", default=True):
        return [(None, False)] * n
    if family == "gemma2":
        return [(window, False) if i % 2 == 0 else (None, False) for i in range(n)]
    pattern = f.optional_integer("sliding_window_pattern", kind="layers")
    if family == "gemma3_text" and pattern:
        return [(None, False) if (i + 1) % pattern == 0 else (window, False) for i in range(n)]
    return [(window, False)] * n


def _window_of_type(kind: str, window: int | None, chunk: int | None) -> tuple[int | None, bool]:
    if kind == "sliding_attention":
        return (window, False)
    if kind == "chunked_attention" and chunk:
        return (chunk, True)
    return (None, False)


def _ffns(f: Fields, n: int, moe: MoESpec | None) -> list[str]:
    if moe is None:
        return ["dense"] * n
    first_dense = f.integer("first_k_dense_replace", kind="layers", default=0, minimum=0)
    dense_layers = set(f.int_list("mlp_only_layers", kind="layers") or [])
    step = f.integer(
        "interleave_moe_layer_step", "decoder_sparse_step", "moe_layer_freq", kind="layers", default=1
    )
    return [
        "dense" if i < first_dense or i in dense_layers or (i + 1) % step != 0 else "moe" for i in range(n)
    ]


def _pattern_layers(f: Fields, n: int, heads: int, kv_heads: int, intermediate: int) -> tuple[LayerSpec, ...]:
    """Nemotron-H: one block per character; M = Mamba-2, * = attention, - = MLP."""
    pattern = f.string("hybrid_override_pattern") or ""
    kinds = {"M": ("mamba", "none"), "*": ("attention", "none"), "-": ("none", "dense")}
    bad = next((c for c in pattern if c not in kinds), None)
    if bad is not None:
        raise ConfigError(f"{f.where}: unknown block {echo(bad)} in hybrid_override_pattern (use M, * or -)")
    if len(pattern) != n:
        raise ConfigError(f"{f.where}: hybrid_override_pattern has {len(pattern)} blocks for {n} layers")
    return tuple(
        LayerSpec(
            mixer=cast(Mixer, kinds[c][0]),
            num_attention_heads=heads,
            num_key_value_heads=kv_heads,
            ffn=cast(Ffn, kinds[c][1]),
            intermediate_size=intermediate if kinds[c][1] == "dense" else 0,
        )
        for c in pattern
    )


def _block_config_layers(f: Fields, n: int, heads: int) -> tuple[LayerSpec, ...]:
    """DeciLM / Llama-Nemotron-NAS: per-layer attention groups and FFN multipliers."""
    key, blocks = f.first("block_configs")
    if not isinstance(blocks, list) or len(blocks) != n:
        raise f.fail(key, f"must be a list of {n} blocks (num_hidden_layers)", blocks)
    hidden = f.integer("hidden_size", kind="width")
    return tuple(
        _block_layer(
            Fields(b if isinstance(b, dict) else {}, f"{f.where}: block_configs[{i}]"), b, heads, hidden
        )
        for i, b in enumerate(blocks)
    )


def _block_layer(block: Fields, raw: Any, heads: int, hidden: int) -> LayerSpec:
    if not isinstance(raw, dict):
        raise ConfigError(f"{block.where}: must be an object, got {echo(raw)}")
    attn, ffn = block.sub("attention"), block.sub("ffn")
    if attn.boolean("no_op", default=False) or attn.boolean("replace_with_linear", default=False):
        mixer, kv = "none", 0
    else:
        group = attn.integer("n_heads_in_group", kind="heads")
        if heads % group:
            raise attn.fail("n_heads_in_group", f"must divide the {heads} attention heads", group)
        mixer, kv = "attention", heads // group
    if ffn.boolean("no_op", default=False) or ffn.boolean("replace_with_linear", default=False):
        kind, width = "none", 0
    else:
        kind, width = "dense", _ffn_mult_to_width(ffn.number("ffn_mult"), hidden)
    return LayerSpec(
        mixer=cast(Mixer, mixer),
        num_attention_heads=heads,
        num_key_value_heads=kv,
        ffn=cast(Ffn, kind),
        intermediate_size=width,
    )


def _ffn_mult_to_width(mult: float, hidden: int) -> int:
    """DeciLM's `_ffn_mult_to_intermediate_size`: 2/3 of mult x hidden, rounded up to 256."""
    if mult > 64:
        raise ConfigError(f"config.json: block_configs ffn_mult {echo(mult)} is beyond any real model")
    width = int(2 * mult * hidden / 3)
    return width + (-width % 256)


# --------------------------------------------------------------------------- vision and quantization


def _vision(top: Fields, text_hidden: int) -> VisionSpec | None:
    vision = top.sub("vision_config")
    if not vision.raw:
        return None
    tower = vision_towers.Tower(
        model_type=vision.string("model_type", default="vit") or "vit",
        hidden_size=vision.integer("hidden_size", "embed_dim", kind="width"),
        intermediate_size=vision.integer("intermediate_size", kind="width", default=0, minimum=0),
        num_hidden_layers=vision.integer("num_hidden_layers", "depth", kind="layers"),
        num_channels=vision.integer("num_channels", "in_channels", kind="small", default=3),
        patch_size=vision.integer("patch_size", kind="small", default=14),
        image_size=vision.integer("image_size", kind="positions", default=224),
        projector_input_dim=vision.integer("projector_input_dim", kind="width", default=0, minimum=0),
        projector_output_dim=vision.integer("projector_output_dim", kind="width", default=0, minimum=0),
        vision_output_dim=vision.integer("vision_output_dim", kind="width", default=0, minimum=0),
        temporal_patch_size=vision.integer("temporal_patch_size", kind="small", default=1),
        num_position_embeddings=vision.integer(
            "num_position_embeddings", kind="positions", default=0, minimum=0
        ),
        out_hidden_size=vision.integer("out_hidden_size", kind="width", default=0, minimum=0),
        spatial_merge_size=vision.integer("spatial_merge_size", kind="small", default=1),
        deepstack_layers=len(vision.int_list("deepstack_visual_indexes", kind="layers") or ()),
    )
    params, exact = vision_towers.tower_params(tower, top.string("model_type") or "", text_hidden)
    return VisionSpec(
        model_type=tower.model_type,
        hidden_size=tower.hidden_size,
        intermediate_size=tower.intermediate_size,
        num_hidden_layers=tower.num_hidden_layers,
        num_channels=tower.num_channels,
        patch_size=tower.patch_size,
        image_size=tower.image_size,
        params=params,
        exact=exact,
    )


def _quant(config: dict[str, Any], text: dict[str, Any], where: str) -> QuantSpec | None:
    raw = config.get("quantization_config") or text.get("quantization_config")
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: 'quantization_config' must be an object, got {echo(raw)}")
    q = Fields(raw, f"{where}: quantization_config")
    method = (q.string("quant_method", default="") or "").lower()
    skip = _skip_list(q)
    if method == "fp8":
        block = q.int_list("weight_block_size", kind="width", minimum=1)
        if block is not None and len(block) != 2:
            raise q.fail("weight_block_size", "must be [rows, columns]", block)
        label = f"FP8 {block[0]}x{block[1]} blocks" if block else "FP8 per-tensor"
        return QuantSpec(
            method="fp8",
            weight_bits=8,
            label=label,
            not_converted=skip,
            block_size=(block[0], block[1]) if block else None,
        )
    if method == "mxfp4":
        return QuantSpec(
            method="mxfp4",
            weight_bits=4,
            group_size=32,
            not_converted=skip,
            label="MXFP4 (4-bit + e8m0 scale per 32)",
        )
    if method in ("gptq", "awq", "gptq_marlin", "awq_marlin"):
        return _gptq_awq(q, method, skip)
    if method == "compressed-tensors":
        return _compressed_tensors(q, skip)
    if method == "bitsandbytes":
        four, eight = q.boolean("load_in_4bit", default=False), q.boolean("load_in_8bit", default=False)
        if four and eight:  # transformers' BitsAndBytesConfig.post_init refuses the pair the same way
            raise ConfigError(
                f"{where}: quantization_config: 'load_in_4bit' and 'load_in_8bit' are both true, "
                "but only one can be used: set one of them to false"
            )
        bits = 4 if four else 8
        return QuantSpec(
            method="bitsandbytes",
            weight_bits=bits,
            group_size=64 if bits == 4 else None,
            not_converted=_skip_list(q, "llm_int8_skip_modules"),
            label="bitsandbytes NF4" if bits == 4 else "bitsandbytes int8",
        )
    raise ConfigError(
        f"{where}: unsupported quant_method {echo(method)}",
        hint="supported: fp8, mxfp4, gptq, awq, compressed-tensors, bitsandbytes",
    )


def _skip_list(q: Fields, *keys: str) -> tuple[str, ...]:
    key, value = q.first(*(keys or ("modules_to_not_convert", "ignored_layers", "ignore")))
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise q.fail(key, "must be a list of module names", value)
    return tuple(v[:200] for v in value[:100_000])


def _gptq_awq(q: Fields, method: str, skip: tuple[str, ...]) -> QuantSpec:
    bits = q.integer("bits", "w_bit", kind="small", default=4)
    if bits not in (2, 3, 4, 8):
        raise q.fail("bits", "must be 2, 3, 4 or 8", bits)
    # AutoGPTQ writes group_size -1 for "no grouping": one scale per output channel.
    _, group_raw = q.first("group_size", "q_group_size")
    group = None if group_raw == -1 else q.integer("group_size", "q_group_size", kind="width", default=128)
    tag = f"g{group}" if group else "per-channel"
    return QuantSpec(
        method=method.split("_")[0],
        weight_bits=bits,
        group_size=group,
        not_converted=skip,
        label=f"{method.upper()} int{bits} {tag}",
    )


def _compressed_tensors(q: Fields, skip: tuple[str, ...]) -> QuantSpec:
    groups = q.mapping("config_groups") or {}
    weights_raw = next(
        (g.get("weights") for g in groups.values() if isinstance(g, dict) and g.get("weights")), None
    )
    if not isinstance(weights_raw, dict):
        raise ConfigError(f"{q.where}: compressed-tensors config without weight settings in config_groups")
    w = Fields(weights_raw, f"{q.where}: config_groups weights")
    bits = w.integer("num_bits", kind="small", default=8)
    if bits not in (2, 3, 4, 8, 16):
        raise w.fail("num_bits", "must be 2, 3, 4, 8 or 16", bits)
    kind = "fp" if w.string("type") == "float" else "int"
    strategy = w.string("strategy", default="tensor") or "tensor"
    group = w.integer("group_size", kind="width") if strategy == "group" else None
    block = w.int_list("block_structure", kind="width", minimum=1) if strategy == "block" else None
    if block is not None and len(block) != 2:
        raise w.fail("block_structure", "must be [rows, columns]", block)
    label = f"compressed-tensors {kind}{bits} ({strategy}{f' g{group}' if group else ''})"
    return QuantSpec(
        method="compressed-tensors",
        weight_bits=bits,
        group_size=group,
        block_size=(block[0], block[1]) if block else None,
        not_converted=skip,
        label=label,
    )
