"""Vision tower and quantization config read from a config.

Part of `core.parse`; the package assembles the ModelSpec from these readers."""

from __future__ import annotations

from typing import Any

from gpusize.core import vision as vision_towers
from gpusize.core.fields import Fields, echo
from gpusize.core.spec import (
    QuantSpec,
    VisionSpec,
)
from gpusize.errors import ConfigError

__all__ = ["_vision", "_quant"]


def _vision(top: Fields, text_hidden: int) -> VisionSpec | None:
    vision = top.sub("vision_config")
    if not vision.raw:
        return None
    composite = top.string("model_type") or ""
    default_type = vision_towers.DEFAULT_TOWER_OF.get(composite, "vit")
    model_type = vision.string("model_type", default=default_type) or default_type
    hidden = vision.integer("hidden_size", "embed_dim", "vt_hidden_size", kind="width")
    inter = vision.integer("intermediate_size", "vt_intermediate_size", kind="width", default=0, minimum=0)
    out = vision.integer("out_hidden_size", "text_hidden_size", kind="width", default=0, minimum=0)
    if model_type == "qwen2_vl":  # Qwen2VLVisionConfig: embed_dim is the tower, hidden_size its output
        hidden, out = vision.integer("embed_dim", kind="width"), hidden
        inter = hidden * vision.integer("mlp_ratio", kind="small", default=4)
    positions = vision.integer(
        "num_position_embeddings", "position_embedding_size", kind="positions", default=0, minimum=0
    )
    merge = vision.integer("spatial_merge_size", kind="small", default=1)
    if model_type == vision_towers.MOONVIT3D:
        positions, merge = _moonvit_grid(vision)
    tower = vision_towers.Tower(
        model_type=model_type,
        hidden_size=hidden,
        intermediate_size=inter,
        num_hidden_layers=vision.integer("num_hidden_layers", "depth", "vt_num_hidden_layers", kind="layers"),
        num_channels=vision.integer("num_channels", "in_channels", "in_chans", kind="small", default=3),
        patch_size=vision.integer("patch_size", kind="small", default=14),
        image_size=vision.integer("image_size", kind="positions", default=224),
        projector_input_dim=vision.integer("projector_input_dim", kind="width", default=0, minimum=0),
        projector_output_dim=vision.integer("projector_output_dim", kind="width", default=0, minimum=0),
        vision_output_dim=vision.integer("vision_output_dim", kind="width", default=0, minimum=0),
        temporal_patch_size=vision.integer("temporal_patch_size", kind="small", default=1),
        num_position_embeddings=positions,
        out_hidden_size=out,
        spatial_merge_size=merge,
        deepstack_layers=len(vision.int_list("deepstack_visual_indexes", kind="layers") or ()),
        head_dim=vision.integer("head_dim", kind="width", default=0, minimum=0),
        standardize=vision.boolean("standardize", default=False),
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
        temporal_patch_size=tower.temporal_patch_size,
        spatial_merge_size=tower.spatial_merge_size,
        out_hidden_size=tower.out_hidden_size,
        deepstack_layers=tower.deepstack_layers,
    )


def _moonvit_grid(vision: Fields) -> tuple[int, int]:
    """MoonViT-3D (Kimi-K2.5): the learned position grid (init_pos_emb_height x _width) and the square
    merge kernel (merge_kernel_size [2, 2]) as (positions, merge per side)."""
    rows = vision.integer("init_pos_emb_height", kind="positions")
    cols = vision.integer("init_pos_emb_width", kind="positions")
    kernel = vision.int_list("merge_kernel_size", kind="small") or [1, 1]
    if len(kernel) != 2 or kernel[0] != kernel[1]:
        raise vision.fail("merge_kernel_size", "must be a square [k, k] kernel", kernel)
    return rows * cols, kernel[0]


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
        experts = text.get("expert_dtype") or config.get("expert_dtype")
        return QuantSpec(
            method="fp8",
            weight_bits=8,
            label=label,
            not_converted=skip,
            block_size=(block[0], block[1]) if block else None,
            expert_format="fp4" if experts == "fp4" else None,
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
    if method == "modelopt":
        return _modelopt(q, skip)
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
        hint="supported: fp8, mxfp4, gptq, awq, compressed-tensors, bitsandbytes, modelopt (NVFP4)",
    )


def _skip_list(q: Fields, *keys: str) -> tuple[str, ...]:
    key, value = q.first(*(keys or ("modules_to_not_convert", "ignored_layers", "ignore")))
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise q.fail(key, "must be a list of module names", value)
    return tuple(v[:200] for v in value[:100_000])


def _modelopt(q: Fields, skip: tuple[str, ...]) -> QuantSpec:
    """NVIDIA ModelOpt checkpoints (quant_method modelopt): NVFP4 = e2m1 weights with one fp8 scale
    per 16 (quant_algo NVFP4, group_size 16), the `ignore` modules left in the activation dtype."""
    algo = (q.string("quant_algo", default="") or "").upper()
    if algo != "NVFP4":
        raise q.fail("quant_algo", "is not a ModelOpt format gpusize sizes (NVFP4)", algo)
    group = 16
    for g in (q.mapping("config_groups") or {}).values():
        weights = g.get("weights") if isinstance(g, dict) else None
        if isinstance(weights, dict):
            group = Fields(weights, f"{q.where}: config_groups weights").integer(
                "group_size", kind="width", default=16
            )
    return QuantSpec(
        method="nvfp4",
        weight_bits=4,
        group_size=group,
        not_converted=skip,
        label=f"NVFP4 (ModelOpt, g{group})",
    )


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
