"""Per-family structure read from a config: layer layout, MoE, MLA, linear attention, Mamba,
vision towers and quantization (pure). Called by `model.parse_config` only.

Each function reads the config's own fields (never a model name), so a new model of a known
family is sized without code changes.
"""

from __future__ import annotations

from typing import Any, cast

from gpusize.errors import ConfigError
from gpusize.model import (
    Ffn,
    LayerSpec,
    LinearAttentionSpec,
    MambaSpec,
    Mixer,
    MLASpec,
    MoESpec,
    QuantSpec,
    VisionSpec,
    _first,
)

# --------------------------------------------------------------------------- MoE and MLA


def moe_spec(cfg: dict[str, Any]) -> MoESpec | None:
    experts = _first(cfg, "num_experts", "num_local_experts", "n_routed_experts", "moe_num_experts")
    if not experts:
        return None
    top_k = _first(cfg, "num_experts_per_tok", "experts_per_token", "moe_top_k", "top_k")
    if not top_k:
        raise ConfigError("config.json: MoE config without 'num_experts_per_tok'")
    model_type = cfg.get("model_type", "")
    expert_width = _first(cfg, "moe_intermediate_size", "intermediate_size")
    shared = 0
    if cfg.get("n_shared_experts"):
        shared = int(cfg["n_shared_experts"]) * expert_width
    elif cfg.get("shared_expert_intermediate_size"):
        shared = int(cfg["shared_expert_intermediate_size"])
    elif model_type == "llama4_text":
        shared = expert_width  # Llama-4: one shared expert the width of a routed one
    return MoESpec(
        num_experts=int(experts),
        num_experts_per_tok=int(top_k),
        moe_intermediate_size=int(expert_width),
        shared_intermediate_size=shared,
        shared_expert_gate=bool(cfg.get("shared_expert_intermediate_size")),
        router_bias=model_type == "gpt_oss",
        score_correction_bias=cfg.get("topk_method") == "noaux_tc" or model_type == "glm4_moe",
        expert_bias=model_type == "gpt_oss",
    )


def mla_spec(cfg: dict[str, Any]) -> MLASpec | None:
    if not cfg.get("kv_lora_rank"):
        return None
    return MLASpec(
        q_lora_rank=cfg.get("q_lora_rank") or None,
        kv_lora_rank=int(cfg["kv_lora_rank"]),
        qk_nope_head_dim=int(cfg["qk_nope_head_dim"]),
        qk_rope_head_dim=int(cfg["qk_rope_head_dim"]),
        v_head_dim=int(cfg["v_head_dim"]),
    )


def linear_attention_spec(cfg: dict[str, Any]) -> LinearAttentionSpec | None:
    if not cfg.get("linear_num_value_heads"):
        return None
    return LinearAttentionSpec(
        num_key_heads=int(cfg["linear_num_key_heads"]),
        num_value_heads=int(cfg["linear_num_value_heads"]),
        key_head_dim=int(cfg["linear_key_head_dim"]),
        value_head_dim=int(cfg["linear_value_head_dim"]),
        conv_kernel=int(cfg.get("linear_conv_kernel_dim", 4)),
    )


def mamba_spec(cfg: dict[str, Any]) -> MambaSpec | None:
    if not cfg.get("mamba_num_heads"):
        return None
    return MambaSpec(
        num_heads=int(cfg["mamba_num_heads"]),
        head_dim=int(cfg["mamba_head_dim"]),
        state_size=int(cfg["ssm_state_size"]),
        n_groups=int(cfg.get("n_groups", 1)),
        conv_kernel=int(cfg.get("conv_kernel", 4)),
        proj_bias=bool(cfg.get("mamba_proj_bias", False)),
        conv_bias=bool(cfg.get("use_conv_bias", True)),
    )


# --------------------------------------------------------------------------- layer layout


def layer_specs(
    cfg: dict[str, Any],
    family: str,
    n: int,
    heads: int,
    kv_heads: int,
    intermediate: int,
    moe: MoESpec | None,
) -> tuple[LayerSpec, ...]:
    """One LayerSpec per decoder layer, from the config's own layout fields."""
    if cfg.get("hybrid_override_pattern"):
        return _pattern_layers(cfg, heads, kv_heads, intermediate)
    if cfg.get("block_configs"):
        return _block_config_layers(cfg, n, heads, intermediate)
    mixers = _mixers(cfg, n)
    windows = _windows(cfg, family, n)
    layers = []
    for i in range(n):
        window, chunked = windows[i]
        ffn, width = _ffn(cfg, i, intermediate, moe)
        layers.append(
            LayerSpec(
                mixer=cast(Mixer, mixers[i]),
                window=window,
                chunked=chunked,
                num_attention_heads=heads,
                num_key_value_heads=kv_heads,
                ffn=cast(Ffn, ffn),
                intermediate_size=width,
            )
        )
    return tuple(layers)


def _mixers(cfg: dict[str, Any], n: int) -> list[str]:
    types = cfg.get("layer_types")
    if isinstance(types, list) and len(types) == n:
        return ["linear_attention" if t == "linear_attention" else "attention" for t in types]
    interval = cfg.get("full_attention_interval")
    if interval:
        return ["attention" if (i + 1) % interval == 0 else "linear_attention" for i in range(n)]
    return ["attention"] * n


def _windows(cfg: dict[str, Any], family: str, n: int) -> list[tuple[int | None, bool]]:
    """(window, chunked) per layer; window None = global attention over the whole context."""
    window = cfg.get("sliding_window")
    chunk = cfg.get("attention_chunk_size")
    types = cfg.get("layer_types")
    if isinstance(types, list) and len(types) == n:
        return [_window_of_type(t, window, chunk) for t in types]
    if chunk and family == "llama4_text":
        no_rope = cfg.get("no_rope_layers") or [int((i + 1) % 4 != 0) for i in range(n)]
        return [(chunk, True) if no_rope[i] else (None, False) for i in range(n)]
    if not window or cfg.get("use_sliding_window") is False:
        return [(None, False)] * n
    if family == "gemma2":
        return [(window, False) if i % 2 == 0 else (None, False) for i in range(n)]
    pattern = cfg.get("sliding_window_pattern")
    if family == "gemma3_text" and pattern:
        return [(None, False) if (i + 1) % pattern == 0 else (window, False) for i in range(n)]
    return [(window, False)] * n


def _window_of_type(kind: str, window: int | None, chunk: int | None) -> tuple[int | None, bool]:
    if kind == "sliding_attention":
        return (window, False)
    if kind == "chunked_attention":
        return (chunk, True)
    return (None, False)


def _ffn(cfg: dict[str, Any], i: int, intermediate: int, moe: MoESpec | None) -> tuple[str, int]:
    if moe is None:
        return "dense", intermediate
    dense_width = int(_first(cfg, "intermediate_size_mlp", "intermediate_size") or intermediate)
    first_dense = cfg.get("first_k_dense_replace") or 0
    if i < first_dense or i in (cfg.get("mlp_only_layers") or []):
        return "dense", dense_width
    step = _first(cfg, "interleave_moe_layer_step", "decoder_sparse_step", "moe_layer_freq") or 1
    if (i + 1) % step != 0:
        return "dense", dense_width
    return "moe", moe.moe_intermediate_size


def _pattern_layers(
    cfg: dict[str, Any], heads: int, kv_heads: int, intermediate: int
) -> tuple[LayerSpec, ...]:
    """Nemotron-H: one block per character; M = Mamba-2, * = attention, - = MLP."""
    kinds = {"M": ("mamba", "none"), "*": ("attention", "none"), "-": ("none", "dense")}
    layers = []
    for char in cfg["hybrid_override_pattern"]:
        if char not in kinds:
            raise ConfigError(f"config.json: unknown block '{char}' in hybrid_override_pattern")
        mixer, ffn = kinds[char]
        layers.append(
            LayerSpec(
                mixer=cast(Mixer, mixer),
                num_attention_heads=heads,
                num_key_value_heads=kv_heads,
                ffn=cast(Ffn, ffn),
                intermediate_size=intermediate if ffn == "dense" else 0,
            )
        )
    return tuple(layers)


def _block_config_layers(cfg: dict[str, Any], n: int, heads: int, intermediate: int) -> tuple[LayerSpec, ...]:
    """DeciLM / Llama-Nemotron-NAS: per-layer attention groups and FFN multipliers."""
    hidden = int(cfg["hidden_size"])
    layers = []
    for block in cfg["block_configs"]:
        attn, ffn = block.get("attention", {}), block.get("ffn", {})
        if attn.get("no_op") or attn.get("replace_with_linear"):
            mixer, kv = "none", 0
        else:
            mixer, kv = "attention", heads // int(attn["n_heads_in_group"])
        if ffn.get("no_op") or ffn.get("replace_with_linear"):
            kind, width = "none", 0
        else:
            kind, width = "dense", _ffn_mult_to_width(float(ffn["ffn_mult"]), hidden)
        layers.append(
            LayerSpec(
                mixer=cast(Mixer, mixer),
                num_attention_heads=heads,
                num_key_value_heads=kv,
                ffn=cast(Ffn, kind),
                intermediate_size=width,
            )
        )
    if len(layers) != n:
        raise ConfigError(f"config.json: {len(layers)} block_configs for {n} layers")
    return tuple(layers)


def _ffn_mult_to_width(mult: float, hidden: int) -> int:
    """DeciLM's `_ffn_mult_to_intermediate_size`: 2/3 of mult × hidden, rounded up to 256."""
    width = int(2 * mult * hidden / 3)
    return width + (-width % 256)


# --------------------------------------------------------------------------- vision towers


def vision_spec(config: dict[str, Any]) -> VisionSpec | None:
    vision = config.get("vision_config")
    if not isinstance(vision, dict) or not vision:
        return None
    from gpusize.vision import vision_params

    params, exact = vision_params(config, vision)
    return VisionSpec(
        model_type=str(vision.get("model_type", "vit")),
        hidden_size=int(_first(vision, "hidden_size", "embed_dim", default=0)),
        intermediate_size=int(_first(vision, "intermediate_size", default=0)),
        num_hidden_layers=int(_first(vision, "num_hidden_layers", "depth", default=0)),
        num_channels=int(vision.get("num_channels", 3)),
        patch_size=int(vision.get("patch_size", 14)),
        image_size=int(vision.get("image_size", 224)),
        params=params,
        exact=exact,
    )


# --------------------------------------------------------------------------- quantization


def quant_spec(config: dict[str, Any], text: dict[str, Any]) -> QuantSpec | None:
    qc = config.get("quantization_config") or text.get("quantization_config")
    if not isinstance(qc, dict):
        return None
    method = str(qc.get("quant_method", "")).lower()
    skip = tuple(qc.get("modules_to_not_convert") or qc.get("ignored_layers") or qc.get("ignore") or ())
    if method == "fp8":
        block = qc.get("weight_block_size")
        label = f"FP8 {block[0]}x{block[1]} blocks" if block else "FP8 per-tensor"
        return QuantSpec(
            method="fp8",
            weight_bits=8,
            not_converted=skip,
            label=label,
            block_size=tuple(block) if block else None,
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
        bits, group = (
            int(qc.get("bits") or qc.get("w_bit") or 4),
            int(qc.get("group_size") or qc.get("q_group_size") or 128),
        )
        return QuantSpec(
            method=method.split("_")[0],
            weight_bits=bits,
            group_size=group,
            not_converted=skip,
            label=f"{method.upper()} int{bits} g{group}",
        )
    if method == "compressed-tensors":
        return _compressed_tensors(qc, skip)
    if method == "bitsandbytes":
        bits = 4 if qc.get("load_in_4bit") else 8
        return QuantSpec(
            method="bitsandbytes",
            weight_bits=bits,
            group_size=64 if bits == 4 else None,
            not_converted=tuple(qc.get("llm_int8_skip_modules") or ()),
            label="bitsandbytes NF4" if bits == 4 else "bitsandbytes int8",
        )
    raise ConfigError(
        f"config.json: unsupported quant_method '{method}'",
        hint="supported: fp8, mxfp4, gptq, awq, compressed-tensors, bitsandbytes",
    )


def _compressed_tensors(qc: dict[str, Any], skip: tuple[str, ...]) -> QuantSpec:
    groups = qc.get("config_groups") or {}
    weights = next((g.get("weights") for g in groups.values() if g.get("weights")), None)
    if not weights:
        raise ConfigError("config.json: compressed-tensors config without weight settings")
    bits = int(weights.get("num_bits", 8))
    kind = "fp" if weights.get("type") == "float" else "int"
    strategy = weights.get("strategy", "tensor")
    group = weights.get("group_size") if strategy == "group" else None
    block = weights.get("block_structure") if strategy == "block" else None
    label = f"compressed-tensors {kind}{bits} ({strategy}{f' g{group}' if group else ''})"
    return QuantSpec(
        method="compressed-tensors",
        weight_bits=bits,
        group_size=group,
        block_size=tuple(block) if block else None,
        not_converted=skip,
        label=label,
    )
