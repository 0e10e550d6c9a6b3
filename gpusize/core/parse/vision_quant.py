"""Vision tower and quantization config read from a config.

Part of `core.parse`; the package assembles the ModelSpec from these readers."""

from __future__ import annotations

from typing import Any, TypedDict

from gpusize.core import vision as vision_towers
from gpusize.core.fields import Fields, echo
from gpusize.core.modelopt import MODELOPT_ALGOS, MODELOPT_FP8_BLOCK, MXFP8_GROUP, algo_bytes, modelopt_roles
from gpusize.core.spec import (
    QuantSpec,
    VisionSpec,
)
from gpusize.errors import ConfigError

__all__ = ["_quant", "_vision"]


def _decoder_layers(text: dict[str, Any]) -> int:
    """The decoder's layer count as the config states it (a module numbered at or past it is an MTP
    layer); a config without one (Nemotron-3 Ultra lists its layers) counts as unbounded."""
    value = text.get("num_hidden_layers")
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    listed = text.get("layers_block_type")
    return len(listed) if isinstance(listed, list) and listed else 1 << 30


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
    if model_type in (vision_towers.MOONVIT3D, vision_towers.KIMI_K3_VISION):
        positions, merge = _moonvit_grid(vision)
    if model_type == vision_towers.KIMI_K3_VISION:
        _refuse_other_k3_layout(vision)
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
        qkv_hidden_size=vision.integer("qkv_hidden_size", kind="width", default=0, minimum=0),
        **_mistral3_projector(top, composite),
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


class _Mistral3Projector(TypedDict, total=False):
    patch_merge: int
    feature_layers: int
    projector_bias: bool


def _mistral3_projector(top: Fields, composite: str) -> _Mistral3Projector:
    """Mistral3Config's projector fields (defaults: spatial_merge_size 2, vision_feature_layer -1,
    multimodal_projector_bias false); none for other composites."""
    if composite != "mistral3":
        return {}
    layers = top.raw.get("vision_feature_layer", -1)
    return {
        "patch_merge": top.integer("spatial_merge_size", kind="small", default=2),
        "feature_layers": len(layers) if isinstance(layers, list) else 1,
        "projector_bias": top.boolean("multimodal_projector_bias", default=False),
    }


#: Kimi-K3 vision_config switches and the one value gpusize counts (KimiK3VisionConfig's defaults,
#: those of the released config): another value changes the tower's tensors.
_K3_TOWER_LAYOUT: dict[str, object] = {
    "norm_type": "rmsnorm",
    "attn_bias": False,
    "linear_bias": False,
    "patch_embed_proj_bias": False,
    "mlp_type": "mlp2",
    "mm_projector_type": "patchmergerv2",
    "pos_emb_type": "divided_fixed",
}


def _refuse_other_k3_layout(vision: Fields) -> None:
    """The Kimi-K3 tower is counted for its released layout only (`vision.kimi_k3_vision_params`)."""
    for key, counted in _K3_TOWER_LAYOUT.items():
        value = vision.raw.get(key, counted)
        if value != counted:
            problem = f"must be {echo(counted)}: gpusize counts the Kimi-K3 vision tower in that layout only"
            raise vision.fail(key, problem, value)


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
    producer = raw.get("producer")
    if not method and isinstance(producer, dict) and producer.get("name") == "modelopt":
        # ModelOpt 0.31 and after write the quantization inline without a quant_method; vLLM names it
        # from the producer (ModelConfig._parse_quant_hf_config: producer "modelopt" -> modelopt)
        method = "modelopt"
    sidecar = raw.get("quantization")
    if isinstance(sidecar, dict) and method in ("", "modelopt"):
        # an hf_quant_config.json (ModelOpt 0.29 and before) read beside config.json: vLLM takes it
        # as the quantization_config (vllm/transformers_utils/config.py, "ModelOpt 0.29.0 and before
        # saves the quantization config in a separate hf_quant_config.json"), the format in its
        # `quantization` object (ModelOptFp8Config.from_config: `if "quantization" in config`)
        q = Fields(sidecar, f"{where}: hf_quant_config.json quantization")
        return _modelopt(q, _skip_list(q), _decoder_layers(text))
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
    if method in ("modelopt", "modelopt_fp4", "modelopt_mixed"):
        return _modelopt(q, skip, _decoder_layers(text))
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
    key, value = q.first(*(keys or ("modules_to_not_convert", "ignored_layers", "ignore", "exclude_modules")))
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise q.fail(key, "must be a list of module names", value)
    return tuple(v[:200] for v in value[:100_000])


def _modelopt(q: Fields, skip: tuple[str, ...], layers: int) -> QuantSpec:
    """NVIDIA ModelOpt checkpoints (quant_method modelopt, or the `quantization` object of an
    hf_quant_config.json beside config.json): NVFP4 = e2m1 weights with one fp8 scale per 16
    (group_size 16) and one fp32 global scale per tensor; FP8 = e4m3 weights with one fp32 scale per
    tensor; MIXED_PRECISION = one of these per module (`quantized_layers`), the modules it does not
    name left in the activation dtype. `exclude_modules` / `ignore` stay in the activation dtype.

    The KV cache stays in the activation dtype under `--kv-cache-dtype auto` even where the file says
    `kv_cache_quant_algo: FP8`: vLLM reads it to load the calibrated scales, and `auto` still resolves
    to the model dtype (vllm-project/vllm issue #34752, open; PRs #34953, #37034 and #47100 to change
    it were closed unmerged); pass --kv-dtype fp8 for what `--kv-cache-dtype fp8` gives."""
    algo = (q.string("quant_algo", default="") or "").upper()
    kv_algo, scheme = q.raw.get("kv_cache_quant_algo"), q.raw.get("kv_cache_scheme")
    kv_fp8 = (
        (isinstance(kv_algo, str) and kv_algo.upper() == "FP8")
        or (isinstance(scheme, dict) and scheme.get("num_bits") == 8 and scheme.get("type") == "float")
        or (isinstance(scheme, str) and scheme.upper() == "FP8")
    )
    kv_note = ", KV scales FP8" if kv_fp8 else ""
    if algo == "MIXED_PRECISION":
        return _modelopt_mixed(q, skip, layers, kv_note)
    if algo not in MODELOPT_ALGOS:
        raise q.fail(
            "quant_algo",
            f"is not a ModelOpt format gpusize sizes ({', '.join(MODELOPT_ALGOS)}, MIXED_PRECISION)",
            algo,
        )
    group = _modelopt_group(q, algo)
    if algo in ("NVFP4", "W4A16_NVFP4"):
        return QuantSpec(
            method="nvfp4",
            weight_bits=4,
            group_size=group,
            not_converted=skip,
            modelopt=True,
            label=f"NVFP4 (ModelOpt{'' if algo == 'NVFP4' else ' W4A16'}, g{group}{kv_note})",
        )
    if algo == "MXFP8":
        roles = ("attention", "experts", "mlp", "shared_experts")
        return QuantSpec(
            method="modelopt-mixed",
            weight_bits=8,
            label=f"MXFP8 (ModelOpt{kv_note})",
            not_converted=skip,
            modelopt=True,
            mixed=tuple((role, algo, group) for role in roles),
        )
    return QuantSpec(
        method="fp8",
        weight_bits=8,
        label=f"{_FP8_LABEL[algo]} (ModelOpt{kv_note})",
        not_converted=skip,
        modelopt=True,
        block_size=MODELOPT_FP8_BLOCK if algo == "FP8_PB_WO" else None,
        per_tensor=algo == "FP8",
    )


_FP8_LABEL = {
    "FP8": "FP8 per-tensor",
    "FP8_PER_CHANNEL_PER_TOKEN": "FP8 per-channel",
    "FP8_PB_WO": "FP8 128x128 blocks",
}


def _modelopt_group(q: Fields, algo: str) -> int:
    if algo == "MXFP8":
        return MXFP8_GROUP
    group = q.integer("group_size", kind="width", default=16) if "group_size" in q.raw else 16
    for g in (q.mapping("config_groups") or {}).values():
        weights = g.get("weights") if isinstance(g, dict) else None
        if isinstance(weights, dict) and "group_size" in weights:
            group = Fields(weights, f"{q.where}: config_groups weights").integer("group_size", kind="width")
    return group


def _modelopt_mixed(q: Fields, skip: tuple[str, ...], layers: int, kv_note: str) -> QuantSpec:
    """ModelOpt MIXED_PRECISION: `quantized_layers` maps module names to their own quant_algo; each
    role (attention, mlp, experts, shared_experts, lm_head) takes its modules' format, the largest
    per weight where its modules differ (Nemotron: FP8 Mamba projections, bf16 attention ones), and a
    role none of the modules names stays in the activation dtype."""
    layers_map = q.mapping("quantized_layers")
    if not layers_map:
        raise q.fail("quantized_layers", "must name the quantized modules of a MIXED_PRECISION checkpoint")
    found: dict[str, tuple[str, int]] = {}
    for name, entry in list(layers_map.items())[:200_000]:
        if not isinstance(entry, dict):
            raise q.fail("quantized_layers", f"entry {echo(name)} must be an object", entry)
        sub = Fields(entry, f"{q.where}: quantized_layers {echo(name)}")
        algo = (sub.string("quant_algo", default="") or "").upper()
        if algo not in MODELOPT_ALGOS:
            raise sub.fail(
                "quant_algo", f"is not a ModelOpt format gpusize sizes ({', '.join(MODELOPT_ALGOS)})", algo
            )
        group = _modelopt_group(sub, algo)
        for role in modelopt_roles(str(name), layers):
            if role not in found or algo_bytes(algo, group) > algo_bytes(*found[role]):
                found[role] = (algo, group)
    if not found:
        raise q.fail(
            "quantized_layers", "names no module gpusize can place (attention, mlp, experts, lm_head)"
        )
    mixed = tuple((role, algo, group) for role, (algo, group) in sorted(found.items()))
    shown = ", ".join(f"{role} {algo}" for role, algo, _ in mixed)
    return QuantSpec(
        method="modelopt-mixed",
        weight_bits=4 if any(a.endswith("NVFP4") for _, a, _ in mixed) else 8,
        label=f"ModelOpt mixed precision ({shown}{kv_note})",
        not_converted=skip,
        modelopt=True,
        mixed=mixed,
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
        scale_bytes=_CT_SCALE_BYTES.get(w.string("scale_dtype", default="") or "", 2),
    )


#: compressed-tensors `scale_dtype` -> bytes per group scale (absent or another dtype: fp16, 2 B).
#: Kimi-K3's mxfp4-pack-quantized experts store one torch.uint8 (e8m0) scale per 32.
_CT_SCALE_BYTES = {"torch.uint8": 1, "torch.float8_e4m3fn": 1, "torch.float32": 4}
