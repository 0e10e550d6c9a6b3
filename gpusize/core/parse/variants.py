"""Attention-variant families: layers whose heads differ by layer type, read from their own fields.

Part of `core.parse`. Each rule maps one family's config fields to a per-layer list of known kinds
(attention with per-layer head widths, sinks, K-equals-V; dense or MoE FFN); `variant_layers`
returns None for every other family, which the generic layout reads.

- Gemma 4 (`gemma4_text`; transformers Gemma4TextConfig, vLLM vllm/model_executor/models/gemma4.py
  Gemma4DecoderLayer): `layer_types` picks sliding or full attention; full layers use
  `global_head_dim` and, with `attention_k_eq_v`, `num_global_key_value_heads` and no v_proj. With
  `enable_moe_block` every layer runs its dense MLP *and* a routed MoE block beside it (the MLP is
  read as an always-on shared expert of `intermediate_size`), plus three more norms and the router's
  scale vector. Per-layer embeddings (`hidden_size_per_layer_input`) and KV-shared layers
  (`num_kv_shared_layers`, Gemma 4 E2B/E4B) are refused by name: not modelled.
- Step-3.5 / Step-3.7 Flash (`step3p5`, `step3p7`; vLLM step3p5.py Step3p5DecoderLayer): sliding
  or full by `layer_types`; the layers of `attention_other_setting.attention_type` take its heads,
  `num_attention_groups` (KV heads) and `head_dim`; `use_head_wise_attn_gate` adds a g_proj per
  layer; MoE layers are `moe_layers_enum` ("3,4,..."), else after `first_k_dense_replace`, else every
  layer but the first (vLLM's default).
- MiniMax-M3 (`minimax_m3`): the generic layout (dense `dense_intermediate_size` layers, then MoE
  layers by `moe_layer_freq`) with an indexer on the layers `sparse_attention_config` marks
  (`with_indexer`).
- MiMo-V2-Flash (`mimo_v2_flash`; vLLM mimo_v2_flash.py MiMoV2FlashDecoderLayer):
  `hybrid_layer_pattern` 1 = sliding-window layer (`swa_*` heads and widths, window
  `sliding_window_size`, sinks when `add_swa_attention_sink_bias`), 0 = full layer; K head
  `head_dim`, V head `v_head_dim`; `moe_layer_freq` lists the MoE layers.
"""

from __future__ import annotations

from dataclasses import replace

from gpusize.core.fields import Fields
from gpusize.core.spec import Ffn, LayerSpec, MoESpec
from gpusize.errors import ConfigError

__all__ = ["variant_layers", "with_indexer"]

#: Gemma 4 MoE block vectors of hidden_size beyond the four layer norms: post_feedforward_layernorm_1,
#: post_feedforward_layernorm_2, pre_feedforward_layernorm_2 and Gemma4Router.scale (the router's
#: own RMSNorm has no weight), vllm/model_executor/models/gemma4.py Gemma4DecoderLayer.
GEMMA4_MOE_VECTORS = 4


def variant_layers(
    f: Fields, family: str, n: int, heads: int, kv_heads: int, moe: MoESpec | None
) -> tuple[LayerSpec, ...] | None:
    """The layers of an attention-variant family, or None for any other family."""
    if family == "gemma4_text":
        return _gemma4(f, n, heads, kv_heads, moe)
    if family == "mimo_v2_flash":
        return _mimo_v2(f, n, heads, kv_heads, moe)
    if family in ("step3p5", "step3p7"):
        return _step(f, n, heads, kv_heads, moe)
    return None


def _types(f: Fields, n: int) -> list[str]:
    key, value = f.first("layer_types")
    if not isinstance(value, list) or len(value) != n or not all(isinstance(t, str) for t in value):
        raise f.fail(key, f"must list {n} layer types (num_hidden_layers)", value)
    return value


def _gemma4(f: Fields, n: int, heads: int, kv_heads: int, moe: MoESpec | None) -> tuple[LayerSpec, ...]:
    for key in ("hidden_size_per_layer_input", "num_kv_shared_layers"):
        if f.integer(key, kind="width", default=0, minimum=0):
            raise ConfigError(
                f"{f.where}: '{key}' (Gemma 4 per-layer embeddings / KV-shared layers, the E2B and E4B "
                "models) is not modelled yet"
            )
    window = f.integer("sliding_window", kind="positions")
    k_eq_v = f.boolean("attention_k_eq_v", default=False)
    global_dim = f.integer("global_head_dim", kind="width", default=f.integer("head_dim", kind="width"))
    global_kv = (
        f.integer("num_global_key_value_heads", kind="heads", default=kv_heads) if k_eq_v else kv_heads
    )
    ffn: Ffn = "moe" if moe is not None else "dense"
    width = moe.moe_intermediate_size if moe else f.integer("intermediate_size", kind="width")
    extra = GEMMA4_MOE_VECTORS if moe else 0
    sliding = LayerSpec(
        mixer="attention",
        window=window,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        ffn=ffn,
        intermediate_size=width,
        extra_vectors=extra,
    )
    full = LayerSpec(
        mixer="attention",
        num_attention_heads=heads,
        num_key_value_heads=global_kv,
        head_dim=global_dim,
        k_eq_v=k_eq_v,
        ffn=ffn,
        intermediate_size=width,
        extra_vectors=extra,
    )
    kinds = {"sliding_attention": sliding, "full_attention": full}
    types = _types(f, n)
    bad = next((t for t in types if t not in kinds), None)
    if bad is not None:
        raise f.fail("layer_types", "must name sliding_attention or full_attention", bad)
    return tuple(kinds[t] for t in types)


def _mimo_v2(f: Fields, n: int, heads: int, kv_heads: int, moe: MoESpec | None) -> tuple[LayerSpec, ...]:
    pattern = f.int_list("hybrid_layer_pattern", kind="small", length=n) or [0] * n
    moe_layers = f.int_list("moe_layer_freq", kind="small", length=n) or [0] * n
    k_dim = f.integer("head_dim", kind="width")
    v_dim = f.integer("v_head_dim", kind="width", default=k_dim)
    dense_width = f.integer("intermediate_size", kind="width")
    window = f.integer("sliding_window_size", "sliding_window", kind="positions")

    def layer(sliding: bool, routed: bool) -> LayerSpec:
        prefix = "swa_" if sliding else ""
        return LayerSpec(
            mixer="attention",
            window=window if sliding else None,
            num_attention_heads=f.integer(f"{prefix}num_attention_heads", kind="heads", default=heads),
            num_key_value_heads=f.integer(f"{prefix}num_key_value_heads", kind="heads", default=kv_heads),
            head_dim=f.integer(f"{prefix}head_dim", kind="width", default=k_dim),
            v_head_dim=f.integer(f"{prefix}v_head_dim", kind="width", default=v_dim),
            sinks=f.boolean(f"add_{'swa' if sliding else 'full'}_attention_sink_bias", default=False),
            ffn="moe" if routed and moe else "dense",
            intermediate_size=moe.moe_intermediate_size if routed and moe else dense_width,
        )

    made = {(s, r): layer(s, r) for s in (False, True) for r in (False, True)}
    return tuple(made[(pattern[i] == 1, bool(moe_layers[i]))] for i in range(n))


def with_indexer(f: Fields, layers: tuple[LayerSpec, ...]) -> tuple[LayerSpec, ...]:
    """MiniMax-M3 block-sparse attention: the layers `sparse_attention_config.sparse_attention_freq`
    marks carry an indexer of `sparse_num_index_heads` x `sparse_index_dim` (and cache one index key
    per token); other configs are returned unchanged."""
    sparse = f.sub("sparse_attention_config")
    if not sparse.raw or not sparse.boolean("use_sparse_attention", default=False):
        return layers
    n = len(layers)
    marks = sparse.int_list("sparse_attention_freq", kind="small", length=n) or [1] * n
    heads = sparse.integer("sparse_num_index_heads", kind="heads")
    width = sparse.integer("sparse_index_dim", kind="width")
    made: dict[LayerSpec, LayerSpec] = {}

    def indexed(layer: LayerSpec) -> LayerSpec:
        if layer not in made:
            made[layer] = replace(layer, index_heads=heads, index_head_dim=width)
        return made[layer]

    return tuple(
        indexed(layer) if marks[i] and layer.mixer == "attention" else layer for i, layer in enumerate(layers)
    )


def _step(f: Fields, n: int, heads: int, kv_heads: int, moe: MoESpec | None) -> tuple[LayerSpec, ...]:
    types = _types(f, n)
    window = f.integer("sliding_window", kind="positions")
    other = f.sub("attention_other_setting")
    other_type = other.string("attention_type") if other.raw else None
    gate = f.boolean("use_head_wise_attn_gate", default=False)
    routed = _step_moe_layers(f, n)
    dense_width = f.integer("intermediate_size", kind="width")
    made: dict[tuple[str, bool], LayerSpec] = {}

    def layer(kind: str, is_moe: bool) -> LayerSpec:
        if (kind, is_moe) not in made:
            own = kind == other_type
            made[(kind, is_moe)] = LayerSpec(
                mixer="attention",
                window=window if kind == "sliding_attention" else None,
                num_attention_heads=other.integer("num_attention_heads", kind="heads") if own else heads,
                num_key_value_heads=other.integer("num_attention_groups", kind="heads") if own else kv_heads,
                head_dim=other.integer("head_dim", kind="width", default=0, minimum=0) if own else 0,
                head_gate=gate,
                ffn="moe" if is_moe and moe else "dense",
                intermediate_size=moe.moe_intermediate_size if is_moe and moe else dense_width,
            )
        return made[(kind, is_moe)]

    return tuple(layer(types[i], i in routed) for i in range(n))


def _step_moe_layers(f: Fields, n: int) -> set[int]:
    key, listed = f.first("moe_layers_enum")
    if listed is not None:
        try:
            return {int(i) for i in str(listed).split(",") if i.strip()}
        except ValueError:
            raise f.fail(key, "must list layer numbers separated by commas", listed) from None
    first = f.integer("first_k_dense_replace", kind="layers", default=1, minimum=0)
    return set(range(first, n))
