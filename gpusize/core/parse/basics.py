"""Family and basics: the family key, architecture, KV heads, dtype, RoPE, context and anatomy.

Part of `core.parse`; the package assembles the ModelSpec from these readers."""

from __future__ import annotations

from typing import Any

from gpusize.core.families import FAMILIES, TEXT_FAMILY_OF, Family
from gpusize.core.fields import Fields, echo
from gpusize.errors import ConfigError
from gpusize.units import DTYPE_ALIASES

__all__ = ["_family", "_architecture", "_kv_heads", "_torch_dtype", "_rope", "_max_context", "_anatomy"]

#: Fields a Llama-style reading of an unknown architecture needs (any spelling of each).
_STANDARD_FIELDS = (
    ("hidden_size", "n_embd", "d_model"),
    ("num_hidden_layers", "n_layer", "num_layers"),
    ("num_attention_heads", "n_head"),
    ("vocab_size", "padded_vocab_size"),
)


def _family(config: dict[str, Any], text: dict[str, Any], where: str) -> str:
    """The family key for a config: its text model_type, else its top-level model_type."""
    top_type, text_type = config.get("model_type"), text.get("model_type")
    composite = TEXT_FAMILY_OF.get(top_type) if isinstance(top_type, str) else None
    for candidate in (text_type, composite, top_type):
        if isinstance(candidate, str) and candidate in FAMILIES:
            return candidate
    model_type = text_type or top_type
    if not model_type and "quantization" in config and "producer" in config:
        # NVIDIA ModelOpt's sidecar (hf_quant_config.json): read beside config.json, not instead of it
        raise ConfigError(
            f"{where}: this is a ModelOpt hf_quant_config.json, not a model config: pass the folder "
            "holding config.json and hf_quant_config.json"
        )
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
        "num_attention_groups",  # Step-3.x
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
        "attention_output_gate": family == "qwen3_next" or f.boolean("attn_output_gate", default=False),
    }


def _norms_per_layer(f: Fields, rules: Family, family: str) -> int:
    if family == "falcon":
        if f.boolean("new_decoder_architecture", default=False):
            return f.integer("num_ln_in_parallel_attn", kind="small", default=2)
        return 1 if f.boolean("parallel_attn", default=True) else 2
    if family == "stablelm" and f.boolean("use_parallel_residual", default=False):
        return 1
    return rules.norms_per_layer
