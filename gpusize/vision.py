"""Vision-tower and projector parameter counts for multimodal configs (pure).

Exact formulas for the towers whose modeling code is known layer by layer (SigLIP in Gemma 3,
the Llama-4 vision encoder); any other ViT-style tower gets the generic ViT formula, flagged as
an estimate (`exact=False`) so the output can say so.
"""

from __future__ import annotations

from typing import Any


def _vit_encoder(hidden: int, inter: int, layers: int, bias: bool = True) -> int:
    """Pre-norm ViT blocks: q, k, v, o and fc1, fc2 (with biases), two LayerNorms with bias."""
    attn = 4 * hidden * hidden + 4 * hidden * bias
    mlp = 2 * hidden * inter + (inter + hidden) * bias
    return layers * (attn + mlp + 4 * hidden)


def siglip_params(vision: dict[str, Any]) -> int:
    """SigLIP vision model without the pooling head: conv patch embedding (bias), a learned
    position per patch, the encoder and a post LayerNorm."""
    h, p, c = vision["hidden_size"], vision["patch_size"], vision.get("num_channels", 3)
    patches = (vision["image_size"] // p) ** 2
    embed = c * p * p * h + h + patches * h
    return int(embed + _vit_encoder(h, vision["intermediate_size"], vision["num_hidden_layers"]) + 2 * h)


def gemma3_projector(vision: dict[str, Any], text_hidden: int) -> int:
    """Gemma3MultiModalProjector: RMSNorm over vision hidden + (vision hidden x text hidden)."""
    return int(vision["hidden_size"] + vision["hidden_size"] * text_hidden)


def llama4_vision_params(vision: dict[str, Any], text_hidden: int) -> int:
    """Llama4VisionModel + Llama4MultiModalProjector (transformers modeling_llama4):
    bias-free conv patch embedding, class token, positions for patches + 1, pre/post LayerNorms,
    the encoder, the pixel-shuffle MLP (intermediate -> projector_input, projector_output ->
    projector_output, no biases) and the bias-free projector to the text width."""
    h, p, c = vision["hidden_size"], vision["patch_size"], vision.get("num_channels", 3)
    patches = (vision["image_size"] // p) ** 2
    embed = c * p * p * h + h + (patches + 1) * h + 4 * h
    encoder = _vit_encoder(h, vision["intermediate_size"], vision["num_hidden_layers"])
    adapter = (
        vision["intermediate_size"] * vision["projector_input_dim"] + vision["projector_output_dim"] ** 2
    )
    return int(embed + encoder + adapter + vision["vision_output_dim"] * text_hidden)


def generic_vit_params(vision: dict[str, Any], text_hidden: int) -> int:
    """Estimate for other towers: ViT encoder + patch embedding + a 2-layer MLP projector."""
    h = int(vision.get("hidden_size") or vision.get("embed_dim") or 0)
    inter = int(vision.get("intermediate_size") or 4 * h)
    layers = int(vision.get("num_hidden_layers") or vision.get("depth") or 0)
    p, c = int(vision.get("patch_size", 14)), int(vision.get("num_channels", 3))
    projector = h * text_hidden + text_hidden * text_hidden
    return c * p * p * h + _vit_encoder(h, inter, layers) + projector


def vision_params(config: dict[str, Any], vision: dict[str, Any]) -> tuple[int, bool]:
    """(parameters of tower + projector, exact?) for a composite config."""
    text = config.get("text_config") or {}
    text_hidden = int(text.get("hidden_size") or config.get("hidden_size") or 0)
    kind = vision.get("model_type")
    if kind == "siglip_vision_model" and config.get("model_type") == "gemma3":
        return siglip_params(vision) + gemma3_projector(vision, text_hidden), True
    if kind == "llama4_vision_model":
        return llama4_vision_params(vision, text_hidden), True
    return generic_vit_params(vision, text_hidden), False
