"""Vision-tower and projector parameter counts for multimodal configs (pure).

Exact formulas for the towers whose modeling code is known layer by layer (SigLIP in Gemma 3,
the Llama-4 vision encoder); any other ViT-style tower gets the generic ViT formula, flagged as
an estimate (`exact=False`) so the output can say so.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Tower", "tower_params"]


@dataclass(frozen=True)
class Tower:
    """The vision_config fields the counts use, read and checked by `core.parse`."""

    model_type: str
    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_channels: int
    patch_size: int
    image_size: int
    projector_input_dim: int = 0
    projector_output_dim: int = 0
    vision_output_dim: int = 0


def _vit_encoder(hidden: int, inter: int, layers: int, bias: bool = True) -> int:
    """Pre-norm ViT blocks: q, k, v, o and fc1, fc2 (with biases), two LayerNorms with bias."""
    attn = 4 * hidden * hidden + 4 * hidden * bias
    mlp = 2 * hidden * inter + (inter + hidden) * bias
    return layers * (attn + mlp + 4 * hidden)


def siglip_params(t: Tower) -> int:
    """SigLIP vision model without the pooling head: conv patch embedding (bias), a learned
    position per patch, the encoder and a post LayerNorm."""
    h, p = t.hidden_size, t.patch_size
    patches = (t.image_size // p) ** 2
    embed = t.num_channels * p * p * h + h + patches * h
    return embed + _vit_encoder(h, t.intermediate_size, t.num_hidden_layers) + 2 * h


def gemma3_projector(t: Tower, text_hidden: int) -> int:
    """Gemma3MultiModalProjector: RMSNorm over vision hidden + (vision hidden x text hidden)."""
    return t.hidden_size + t.hidden_size * text_hidden


def llama4_vision_params(t: Tower, text_hidden: int) -> int:
    """Llama4VisionModel + Llama4MultiModalProjector (transformers modeling_llama4):
    bias-free conv patch embedding, class token, positions for patches + 1, pre/post LayerNorms,
    the encoder, the pixel-shuffle MLP (intermediate -> projector_input, projector_output ->
    projector_output, no biases) and the bias-free projector to the text width."""
    h, p = t.hidden_size, t.patch_size
    patches = (t.image_size // p) ** 2
    embed = t.num_channels * p * p * h + h + (patches + 1) * h + 4 * h
    encoder = _vit_encoder(h, t.intermediate_size, t.num_hidden_layers)
    adapter = t.intermediate_size * t.projector_input_dim + t.projector_output_dim**2
    return embed + encoder + adapter + t.vision_output_dim * text_hidden


def generic_vit_params(t: Tower, text_hidden: int) -> int:
    """Estimate for other towers: ViT encoder + patch embedding + a 2-layer MLP projector."""
    h = t.hidden_size
    inter = t.intermediate_size or 4 * h
    projector = h * text_hidden + text_hidden * text_hidden
    return t.num_channels * t.patch_size**2 * h + _vit_encoder(h, inter, t.num_hidden_layers) + projector


def tower_params(t: Tower, composite_type: str, text_hidden: int) -> tuple[int, bool]:
    """(parameters of tower + projector, exact?) for a composite config of `composite_type`."""
    if t.model_type == "siglip_vision_model" and composite_type == "gemma3":
        return siglip_params(t) + gemma3_projector(t, text_hidden), True
    if t.model_type == "llama4_vision_model":
        return llama4_vision_params(t, text_hidden), True
    return generic_vit_params(t, text_hidden), False
