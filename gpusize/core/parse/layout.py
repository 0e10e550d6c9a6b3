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

__all__ = ["_check_mixers", "_layers", "nemotron_blocks"]


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
    if mixers & {"mamba", "attention_mamba"} and mamba is None:
        raise ConfigError(f"{f.where}: the layers use Mamba blocks but 'mamba_num_heads' is missing")
    if "kimi_delta" in mixers and not f.sub("linear_attn_config").has("num_heads"):
        raise ConfigError(
            f"{f.where}: the layers use Kimi Delta Attention but 'linear_attn_config.num_heads' is missing"
        )


def _layers(
    f: Fields, family: str, n: int, heads: int, kv_heads: int, intermediate: int, moe: MoESpec | None
) -> tuple[LayerSpec, ...]:
    """One LayerSpec per decoder layer, from the config's own layout fields."""
    variant = variant_layers(f, family, n, heads, kv_heads, moe)
    if variant is not None:
        return variant
    pattern = nemotron_blocks(f) if family == "nemotron_h" or f.has("hybrid_override_pattern") else None
    if pattern is not None:
        return _pattern_layers(f, pattern, n, heads, kv_heads, intermediate, moe)
    if f.has("linear_attn_config"):
        return _kimi_layers(f, n, heads, kv_heads, intermediate, moe)
    if f.has("block_configs"):
        return _block_config_layers(f, n, heads)
    types = _layer_types(f, n)
    # Falcon-H1: attention and Mamba-2 side by side in every layer (`core.kinds.attention_mamba`)
    mixers = ["attention_mamba"] * n if family == "falcon_h1" else _mixers(f, n, types)
    # DeepSeek-V4's sliding window belongs to its compressed attention kind, not to the engine's
    # window groups (`core.kinds.compressed_mla`).
    windows = [(None, False)] * n if f.has("compress_ratios") else _windows(f, family, n, types)
    # GraniteMoeHybrid: the dense FFN is its shared_mlp (shared_intermediate_size); intermediate_size
    # is the expert width (transformers modeling_granitemoehybrid GraniteMoeHybridDecoderLayer)
    granite = family == "granitemoehybrid"
    dense_width = f.integer(
        *(("shared_intermediate_size",) if granite else ()),
        "intermediate_size_mlp",
        "dense_intermediate_size",
        "intermediate_size",
        kind="width",
        default=intermediate,
    )
    ffns = _ffns(f, n, moe)
    ratios = _compress_ratios(f, n)
    shared = _shared_indexers(f, n)
    made: dict[tuple[str, int | None, bool, str, int, bool], LayerSpec] = {}  # one per distinct kind

    def layer(i: int) -> LayerSpec:
        key = (mixers[i], windows[i][0], windows[i][1], ffns[i], ratios[i], shared[i])
        if key not in made:
            made[key] = LayerSpec(
                mixer=cast(Mixer, mixers[i]),
                window=windows[i][0],
                chunked=windows[i][1],
                num_attention_heads=heads,
                num_key_value_heads=kv_heads,
                ffn=cast(Ffn, ffns[i]),
                intermediate_size=moe.moe_intermediate_size if ffns[i] == "moe" and moe else dense_width,
                compress_ratio=ratios[i],
                shares_indexer=shared[i],
            )
        return made[key]

    return with_indexer(f, tuple(layer(i) for i in range(n)))


def _compress_ratios(f: Fields, n: int) -> list[int]:
    """DeepSeek-V4's per-layer compression (0, 4 or 128); the list may go on for the MTP layers."""
    ratios = f.int_list("compress_ratios", kind="positions", minimum=0)
    if ratios is None:
        return [0] * n
    if len(ratios) < n:
        raise f.fail("compress_ratios", f"must list at least {n} ratios (num_hidden_layers)", ratios)
    bad = next((r for r in ratios[:n] if r not in (0, 1, 4, 128)), None)
    if bad is not None:
        raise f.fail("compress_ratios", "holds a ratio vLLM does not run (0, 4 or 128)", bad)
    return [r if r > 1 else 0 for r in ratios[:n]]


def _shared_indexers(f: Fields, n: int) -> list[bool]:
    """GLM-5.2's IndexCache: `indexer_types` names each layer's indexer "full" or "shared"."""
    key, value = f.first("indexer_types")
    if value is None:
        return [False] * n
    if not isinstance(value, list) or len(value) != n or any(v not in ("full", "shared") for v in value):
        raise f.fail(key, f"must list {n} entries (num_hidden_layers), each full or shared", value)
    if value[0] != "full":
        raise f.fail(
            key, "must start with a full layer (a shared one reuses the previous full one)", value[0]
        )
    return [v == "shared" for v in value]


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
        # Granite-4 hybrids (GraniteMoeHybridConfig.layer_types): "mamba" layers are Mamba-2 mixers
        return [t if t in ("linear_attention", "mamba") else "attention" for t in types]
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


#: Nemotron-H blocks: the `hybrid_override_pattern` character and the `layers_block_type` name of
#: each, with its (mixer, ffn) (vLLM nemotron_h.py ALL_DECODER_LAYER_TYPES: M Mamba-2, * attention,
#: - MLP, E MoE; transformers 5 NemotronHConfig writes the names instead of the characters).
_NEMOTRON_BLOCKS = {
    "M": ("mamba", "none"),
    "*": ("attention", "none"),
    "-": ("none", "dense"),
    "E": ("none", "moe"),
}
_NEMOTRON_NAMES = {"mamba": "M", "attention": "*", "mlp": "-", "moe": "E"}


def nemotron_blocks(f: Fields) -> str | None:
    """Nemotron-H's block pattern, one character per layer, from `hybrid_override_pattern` or the
    `layers_block_type` list (Nemotron-3 Ultra and 3.5); None when the config has neither."""
    return _blocks(f, "hybrid_override_pattern", "layers_block_type")


def _blocks(f: Fields, pattern_key: str, names_key: str) -> str | None:
    """A Nemotron-H block pattern written as characters (`pattern_key`) or as a list of block names
    (`names_key`, transformers 5 NemotronHConfig); None when the config has neither key."""
    if f.has(pattern_key):
        pattern = f.string(pattern_key) or ""
        bad = next((c for c in pattern if c not in _NEMOTRON_BLOCKS), None)
        if bad is not None:
            raise ConfigError(f"{f.where}: unknown block {echo(bad)} in {pattern_key} (use M, *, - or E)")
        return pattern
    key, names = f.first(names_key)
    if names is None:
        return None
    if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
        raise f.fail(key, "must be a list of block names (mamba, attention, mlp, moe)", names)
    bad_name = next((n for n in names if n not in _NEMOTRON_NAMES), None)
    if bad_name is not None:
        raise f.fail(key, "names an unknown block (use mamba, attention, mlp or moe)", bad_name)
    return "".join(_NEMOTRON_NAMES[n] for n in names)


def nemotron_mtp_layers(
    f: Fields, heads: int, kv_heads: int, intermediate: int, moe: MoESpec | None
) -> tuple[LayerSpec, ...]:
    """Nemotron-3's MTP step (vLLM nemotron_h_mtp.py NemotronHMultiTokenPredictor: one decoder layer
    per character of `mtp_hybrid_override_pattern`, `*` attention and `E` MoE; Ultra and 3.5 write
    the names in `mtp_layers_block_type`); () when the config names none."""
    pattern = _blocks(f, "mtp_hybrid_override_pattern", "mtp_layers_block_type")
    if not pattern:
        return ()
    return _pattern_layers(f, pattern, len(pattern), heads, kv_heads, intermediate, moe)


def _pattern_layers(
    f: Fields, pattern: str, n: int, heads: int, kv_heads: int, intermediate: int, moe: MoESpec | None
) -> tuple[LayerSpec, ...]:
    """Nemotron-H: one block per layer; M = Mamba-2, * = attention, - = MLP, E = MoE."""
    if len(pattern) != n:
        raise ConfigError(f"{f.where}: the block pattern has {len(pattern)} blocks for {n} layers")
    if "E" in pattern and moe is None:
        raise ConfigError(
            f"{f.where}: the block pattern has MoE blocks (E) but 'n_routed_experts' is missing"
        )
    widths = {"dense": intermediate, "moe": moe.moe_intermediate_size if moe else 0, "none": 0}
    return tuple(
        LayerSpec(
            mixer=cast(Mixer, _NEMOTRON_BLOCKS[c][0]),
            num_attention_heads=heads,
            num_key_value_heads=kv_heads,
            ffn=cast(Ffn, _NEMOTRON_BLOCKS[c][1]),
            intermediate_size=widths[_NEMOTRON_BLOCKS[c][1]],
        )
        for c in pattern
    )


def _kimi_layers(
    f: Fields, n: int, heads: int, kv_heads: int, intermediate: int, moe: MoESpec | None
) -> tuple[LayerSpec, ...]:
    """Kimi-Linear: `linear_attn_config.kda_layers` (1-based, vLLM `is_kda_layer`) are Kimi Delta
    Attention, the others MLA; the FFN follows first_k_dense_replace / moe_layer_freq."""
    la = f.sub("linear_attn_config")
    kda = set(la.int_list("kda_layers", kind="layers") or [])
    ffns = _ffns(f, n, moe)
    return tuple(
        LayerSpec(
            mixer="kimi_delta" if i + 1 in kda else "attention",
            num_attention_heads=heads,
            num_key_value_heads=kv_heads,
            ffn=cast(Ffn, ffns[i]),
            intermediate_size=moe.moe_intermediate_size if ffns[i] == "moe" and moe else intermediate,
        )
        for i in range(n)
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
