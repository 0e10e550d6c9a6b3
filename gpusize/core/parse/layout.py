"""Layer layout: each layer's mixer, window and FFN, from `layer_types`, patterns or `block_configs`.

Part of `core.parse`; the package assembles the ModelSpec from these readers."""

from __future__ import annotations

from typing import Any, cast

from gpusize.core.fields import Fields, echo
from gpusize.core.parse.variants import variant_layers, with_indexer
from gpusize.core.spec import (
    Ffn,
    LayerSpec,
    LinearAttentionSpec,
    MambaSpec,
    Mixer,
    MoESpec,
)
from gpusize.errors import ConfigError

__all__ = ["_check_mixers", "_layers"]


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
    variant = variant_layers(f, family, n, heads, kv_heads, moe)
    if variant is not None:
        return variant
    if f.has("hybrid_override_pattern"):
        return _pattern_layers(f, n, heads, kv_heads, intermediate)
    if f.has("block_configs"):
        return _block_config_layers(f, n, heads)
    types = _layer_types(f, n)
    mixers = _mixers(f, n, types)
    windows = _windows(f, family, n, types)
    dense_width = f.integer(
        "intermediate_size_mlp",
        "dense_intermediate_size",
        "intermediate_size",
        kind="width",
        default=intermediate,
    )
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

    return with_indexer(f, tuple(layer(i) for i in range(n)))


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
    if isinstance(f.first("moe_layer_freq")[1], list):  # one 0/1 flag per layer (MiniMax-M3, MiMo-V2)
        flags = f.int_list("moe_layer_freq", kind="small", length=n) or []
        return [
            "moe" if flags[i] and i >= first_dense and i not in dense_layers else "dense" for i in range(n)
        ]
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
