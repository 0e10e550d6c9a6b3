"""Vision towers read from a config (the tower's own dimensions, counted by core.vision).

Part of `core.parse`; the package assembles the ModelSpec from these readers."""

from __future__ import annotations

from typing import TypedDict

from gpusize.core import vision as vision_towers
from gpusize.core.fields import Fields, echo
from gpusize.core.spec import VisionSpec

__all__ = ["_vision"]


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
