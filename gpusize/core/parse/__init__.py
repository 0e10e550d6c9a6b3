"""parse_config: a Hugging Face config.json dict -> ModelSpec (pure).

Every variant spelling (`n_head`, `n_layer`, `num_kv_heads`, `multi_query`, nested `text_config`,
`layer_types`, `block_configs`, ...) is resolved here, through `core.fields` (typed, bounded reads
whose errors name the field), so nothing downstream reads raw dicts. Architecture defaults a config
may omit (a Gemma config without `vocab_size`) come from `core.families`. Each structure is read from
the config's own fields, never from a model name, so a new model of a known family needs no code.

The readers live by section: `basics` (family, heads, dtype, RoPE, context, anatomy), `mixers` (MoE,
MLA, linear attention, Mamba), `layout` (per-layer mixer, window and FFN), `vision` and `quant`.
"""

from __future__ import annotations

import functools
from dataclasses import replace
from typing import Any

from gpusize.core.families import Family, family_for
from gpusize.core.fields import BOUNDS, Fields, echo
from gpusize.core.modelopt import modelopt_skipped
from gpusize.core.params import count_params
from gpusize.core.parse.basics import (
    _anatomy,
    _architecture,
    _family,
    _kv_heads,
    _max_context,
    _rope,
    _torch_dtype,
)
from gpusize.core.parse.layout import _check_mixers, _layers, nemotron_blocks, nemotron_mtp_layers
from gpusize.core.parse.mixers import _compressed, _kimi_delta, _linear_attention, _mamba, _mla, _moe
from gpusize.core.parse.quant import _quant
from gpusize.core.parse.vision import _vision
from gpusize.core.spec import ModelSpec, QuantSpec
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
        _refuse_recurrent_guess(text, where)
        unknown, family = model_type[:80], "llama"
    rules = family_for(family)
    f = Fields({**rules.defaults, **{k: v for k, v in text.items() if v is not None}}, where)
    spec = _spec(config, text, f, family, rules)
    if unknown is not None:  # (a copy of the spec costs; `which` parses every catalog model)
        spec = replace(spec, best_effort_from=unknown)
    return _shared(replace(spec, params=count_params(spec)))


#: Specs kept by `_first_equal` (bounded: more models than one process sizes at a time; a batch
#: names a few).
SPECS_SHARED = 64


def _shared(spec: ModelSpec) -> ModelSpec:
    """The first spec parsed equal to `spec` and written alike (its repr: 4 and 4.0 are equal, not
    alike), else `spec`: a model parsed again (each `gpusize batch` run in one process, the API) gives
    the same object, so the caches keyed on a spec (the engine's evaluations, llama.cpp's layer
    caches) find it by identity instead of comparing every field and layer (bench/RESULTS.md, batch,
    all-distinct rows). Specs are frozen, so sharing one is safe."""
    first = _first_equal(spec)
    return first if first is spec or repr(first) == repr(spec) else spec


@functools.lru_cache(maxsize=SPECS_SHARED)
def _first_equal(spec: ModelSpec) -> ModelSpec:
    return spec


def _spec(config: dict[str, Any], text: dict[str, Any], f: Fields, family: str, rules: Family) -> ModelSpec:
    hidden = f.integer("hidden_size", "n_embd", "d_model", kind="width")
    blocks = nemotron_blocks(f) if family == "nemotron_h" else None  # Nemotron-3 Ultra: no layer count
    layers_n = f.integer(
        "num_hidden_layers", "n_layer", "num_layers", kind="layers", default=len(blocks) if blocks else None
    )
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
    moe = _moe(f, family)  # family rules by the resolved family (a composite's text type may differ)
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
        kimi_delta=_kimi_delta(f),
        attn_res_block_size=f.integer("attn_res_block_size", kind="layers", default=0, minimum=0),
        ssm_state_dtype=_ssm_state_dtype(f),
        compressed=_compressed(f),
        vision=_vision(top, hidden),
        quantization=_with_roles(_quant(config, text, f.where), len(layers), family),
        num_nextn_predict_layers=f.integer(
            "num_nextn_predict_layers", "mtp_num_hidden_layers", kind="small", default=0, minimum=0
        ),
        mtp_layers=(
            nemotron_mtp_layers(f, heads, kv_heads, intermediate, moe) if family == "nemotron_h" else ()
        ),
        max_context=_max_context(f, positions),
        rope_scaling=_rope(f),
        **_anatomy(f, rules, family, positions),
    )


#: Fields of recurrent (state-space, linear-attention) layers: a config that has one is a hybrid, and
#: reading it as a Llama-style decoder would put every layer's KV in and the state out.
_RECURRENT_FIELDS = (
    "hybrid_override_pattern",
    "layers_block_type",
    "linear_attn_config",
    "linear_num_value_heads",
    "mamba_num_heads",
    "mamba_n_heads",
    "mamba_d_state",
    "mamba_d_ssm",
    "ssm_state_size",
    "attn_layer_indices",
)


def _refuse_recurrent_guess(text: dict[str, Any], where: str) -> None:
    """--best-effort never reads a hybrid as a Llama decoder: name the recurrent field instead."""
    key = next((k for k in _RECURRENT_FIELDS if text.get(k) is not None), None)
    types = text.get("layer_types")
    if key is None and isinstance(types, list):
        key = next(
            (f"layer_types ({echo(t)})" for t in types if "linear" in str(t) or "mamba" in str(t)), None
        )
    if key is not None:
        raise ConfigError(
            f"{where}: --best-effort cannot read {echo(text.get('model_type'))} as a Llama-style decoder: "
            f"it has recurrent layers ({key}) whose state gpusize cannot size for this model_type"
        )


def _ssm_state_dtype(f: Fields) -> str | None:
    raw = f.string("mamba_ssm_dtype", "mamba_ssm_cache_dtype")
    if raw is None:
        return None
    name = DTYPE_ALIASES.get(raw.lower().removeprefix("torch."))
    if name not in ("fp32", "bf16", "fp16"):
        raise ConfigError(
            f"{f.where}: 'mamba_ssm_dtype' must be float32, bfloat16 or float16, got {echo(raw)}"
        )
    return name


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


def _with_roles(quant: QuantSpec | None, layers: int, family: str) -> QuantSpec | None:
    """A ModelOpt checkpoint's quantization with the roles its exclude list keeps unquantized."""
    if quant is None or not quant.modelopt:
        return quant
    return replace(quant, modelopt_skipped=modelopt_skipped(quant.not_converted, layers, family))
