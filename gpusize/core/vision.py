"""Vision-tower and projector parameter counts for multimodal configs (pure).

Exact formulas for the towers whose modeling code is known layer by layer (SigLIP in Gemma 3,
the Llama-4 vision encoder, the Gemma 4 encoder, the Qwen3-VL encoder with its mergers); any other
ViT-style tower gets the generic ViT formula, flagged as an estimate (`exact=False`) so the output can say so.
"""

from __future__ import annotations

from gpusize.dataclass import dataclass

__all__ = [
    "DEFAULT_TOWER_OF",
    "KIMI_K3_VISION",
    "MOONVIT3D",
    "QWEN2_VL_TOWERS",
    "QWEN3_5_TOWERS",
    "QWEN3_VL_TOWERS",
    "QWEN_VL_TOWERS",
    "Tower",
    "qwen2_5_vl_vision_params",
    "qwen2_vl_vision_params",
    "qwen3_vl_vision_params",
    "tower_params",
]

#: vision_config model types of the Qwen3-VL encoder (dense and MoE text towers share it).
QWEN3_VL_TOWERS = ("qwen3_vl", "qwen3_vl_moe")
#: Qwen3.5 / Qwen3.6 encoders (transformers Qwen3_5VisionModel: the Qwen3-VL encoder, no deepstack).
#: The Hub files name the composite's type; NVIDIA's ModelOpt exports (nvidia/Qwen3.6-27B-NVFP4,
#: -35B-A3B-NVFP4) write the vision config class's own (Qwen3_5VisionConfig: "qwen3_5_vision").
QWEN3_5_TOWERS = ("qwen3_5", "qwen3_5_moe", "qwen3_5_vision", "qwen3_5_moe_vision")
#: Qwen2-VL and Qwen2.5-VL encoders (their vision_config may name no model_type: the composite's).
QWEN2_VL_TOWERS = ("qwen2_vl", "qwen2_5_vl")
#: The dynamic-resolution Qwen encoders (patches merged 2x2 into tokens), sized by vLLM's processor.
QWEN_VL_TOWERS = QWEN2_VL_TOWERS + QWEN3_VL_TOWERS
#: Kimi-K2.5's MoonViT-3D encoder (its vision_config names no model_type).
MOONVIT3D = "moonvit3d"
#: Kimi-K3's MoonViT-3D variant (vLLM KimiK3VisionConfig.model_type; its vision_config names none).
KIMI_K3_VISION = "kimi_k3_vision"
#: The tower a composite model type implies when its vision_config names none.
DEFAULT_TOWER_OF: dict[str, str] = {
    **{t: t for t in QWEN2_VL_TOWERS},
    "kimi_k25": MOONVIT3D,
    "kimi_k3": KIMI_K3_VISION,
}


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
    #: Qwen3-VL: frames per 3-D patch, learned position table, merged output width (the text
    #: width), patches merged per side, and the deepstack mergers (len(deepstack_visual_indexes)).
    temporal_patch_size: int = 1
    num_position_embeddings: int = 0
    out_hidden_size: int = 0
    spatial_merge_size: int = 1
    deepstack_layers: int = 0
    #: Gemma 4: width of one attention head (its q/k norms) and the learned (x, y) mean/scale
    #: standardization after pooling (`standardize`).
    head_dim: int = 0
    standardize: bool = False
    #: Kimi-K3: the width q, k and v project to (`qkv_hidden_size`, 12 heads of 128 = 1536 over a
    #: 1024-wide tower); 0 = the tower width.
    qkv_hidden_size: int = 0
    #: Mistral 3 (Mistral3Config, top level): the projector's patch merger (spatial_merge_size, patches
    #: merged per side), its vision feature layers and whether its linears have biases.
    patch_merge: int = 2
    feature_layers: int = 1
    projector_bias: bool = False


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


def qwen3_vl_vision_params(t: Tower) -> int:
    """Qwen3VLVisionModel (transformers modeling_qwen3_vl): Conv3d patch embedding with bias, a
    learned position table, pre-norm blocks (LayerNorms with bias, fused qkv and proj with biases,
    a plain fc1/fc2 MLP with biases), the patch merger (LayerNorm over the vision width, then
    Linear(m, m) and Linear(m, out) with biases, m = merge^2 x width) and one merger per deepstack
    layer, whose LayerNorm runs over the merged m-vector. Reproduces the Hub totals of every
    Qwen3-VL checkpoint in the catalog (2B to 235B) exactly, with the text tower."""
    h, i = t.hidden_size, t.intermediate_size
    m = t.spatial_merge_size**2 * h
    embed = t.num_channels * t.temporal_patch_size * t.patch_size**2 * h + h + t.num_position_embeddings * h
    block = (3 * h * h + 3 * h) + (h * h + h) + 2 * (2 * h) + (h * i + i) + (i * h + h)
    merger_linears = (m * m + m) + (m * t.out_hidden_size + t.out_hidden_size)
    return (
        embed
        + t.num_hidden_layers * block
        + (2 * h + merger_linears)
        + t.deepstack_layers * (2 * m + merger_linears)
    )


def _qwen_merger(t: Tower, norm: int) -> int:
    """PatchMerger: a norm over the vision width (`norm` tensors of it), then Linear(m, m) and
    Linear(m, out) with biases, m = merge^2 x width."""
    h, m = t.hidden_size, t.spatial_merge_size**2 * t.hidden_size
    return norm * h + (m * m + m) + (m * t.out_hidden_size + t.out_hidden_size)


def qwen2_vl_vision_params(t: Tower) -> int:
    """Qwen2VisionTransformerPretrainedModel (transformers modeling_qwen2_vl): bias-free Conv3d patch
    embedding, rotary positions (no table), pre-norm blocks (two LayerNorms with bias, fused qkv
    and proj with biases, fc1/fc2 with biases, QuickGELU) and the patch merger (LayerNorm)."""
    h, i = t.hidden_size, t.intermediate_size
    embed = t.num_channels * t.temporal_patch_size * t.patch_size**2 * h
    block = 4 * h + (3 * h * h + 3 * h) + (h * h + h) + (h * i + i) + (i * h + h)
    return embed + t.num_hidden_layers * block + _qwen_merger(t, 2)


def qwen2_5_vl_vision_params(t: Tower) -> int:
    """Qwen2_5_VisionTransformerPretrainedModel (modeling_qwen2_5_vl): as Qwen2-VL with RMSNorms (no
    bias) and a gated MLP (gate, up, down with biases); the merger's norm is an RMSNorm too."""
    h, i = t.hidden_size, t.intermediate_size
    embed = t.num_channels * t.temporal_patch_size * t.patch_size**2 * h
    block = 2 * h + (3 * h * h + 3 * h) + (h * h + h) + 2 * (h * i + i) + (i * h + h)
    return embed + t.num_hidden_layers * block + _qwen_merger(t, 1)


def moonvit3d_params(t: Tower) -> int:
    """MoonViT3dPretrainedModel + KimiK25MultiModalProjector (vllm/model_executor/models/kimi_k25_vit.py,
    read at vllm-project/vllm commit 055e47c2): Conv2d patch embedding with bias, a learned position
    grid (init_pos_emb_height x init_pos_emb_width x width; the temporal sin-cos table is a buffer),
    pre-norm blocks (two LayerNorms, fused wqkv and wo with biases, fc0/fc1 with biases), a final
    LayerNorm; the patchmerger projector: LayerNorm over the width, then Linear(m, m) and
    Linear(m, text width) with biases, m = merge^2 x width."""
    h, i, m = t.hidden_size, t.intermediate_size, t.spatial_merge_size**2 * t.hidden_size
    embed = t.num_channels * t.patch_size**2 * h + h + t.num_position_embeddings * h
    block = 2 * (2 * h) + (3 * h * h + 3 * h) + (h * h + h) + (h * i + i) + (i * h + h)
    projector = 2 * h + (m * m + m) + (m * t.out_hidden_size + t.out_hidden_size)
    return embed + t.num_hidden_layers * block + 2 * h + projector


def kimi_k3_vision_params(t: Tower, text_hidden: int) -> int:
    """Kimi-K3's MoonViT3dPretrainedModel + KimiK25MultiModalProjector as vLLM builds them from
    KimiK3VisionConfig (vllm/model_executor/models/kimi_k25_vit.py and
    vllm/foundation/integrations/transformers_utils/configs/kimi_k3.py, read at vllm-project/vllm commit
    055e47c2; vllm/transformers_utils/configs/kimi_k3.py in the 0.27.0-0.33.0 wheels: the same tensors in
    each), for its layout (norm_type rmsnorm, attn_bias / linear_bias / patch_embed_proj_bias false, mlp2,
    patchmergerv2; `core.parse` refuses others): a bias-free Conv2d patch embedding, the learned position grid
    (the temporal sin-cos table is a buffer), per block two RMSNorms, wqkv h -> 3q and wo q -> h (q =
    qkv_hidden_size), fc0 h -> i and fc1 i -> h, all bias-free; a final RMSNorm; the projector Linear(m, m)
    and Linear(m, text width) without biases and an RMSNorm over the text width (m = merge^2 x h; vLLM sets
    text_hidden_size to the text model's hidden_size)."""
    h, i, m = t.hidden_size, t.intermediate_size, t.spatial_merge_size**2 * t.hidden_size
    q = t.qkv_hidden_size or h
    embed = t.num_channels * t.patch_size**2 * h + t.num_position_embeddings * h
    block = 2 * h + (3 * h * q + q * h) + 2 * h * i
    projector = m * m + m * text_hidden + text_hidden
    return embed + t.num_hidden_layers * block + h + projector


def gemma4_vision_params(t: Tower, text_hidden: int) -> int:
    """Gemma4VisionModel + embed_vision (transformers modeling_gemma4; vLLM gemma4_mm.py
    Gemma4MultimodalEmbedder): a bias-free patch projection (3 x patch^2 -> h) and a learned table of
    2 x position_embedding_size x h (x and y); per layer bias-free q, k, v, o of h x h (16 heads of 72
    = 1152), q and k norms over one head (the v norm has no weight), a gated MLP (gate, up, down) and
    four RMSNorms; no final norm; std_bias and std_scale (h each) when `standardize`; the projector is
    one bias-free h -> text hidden linear after a weightless RMSNorm (Gemma 4 26B-A4B: 572,794,416)."""
    h, i = t.hidden_size, t.intermediate_size
    embed = t.num_channels * t.patch_size**2 * h + 2 * t.num_position_embeddings * h
    block = 4 * h * h + 2 * t.head_dim + 3 * h * i + 4 * h
    return embed + t.num_hidden_layers * block + 2 * h * t.standardize + h * text_hidden


def pixtral_mistral3_params(t: Tower, text_hidden: int) -> int:
    """PixtralVisionModel + Mistral3MultiModalProjector (transformers modeling_pixtral.py,
    modeling_mistral3.py): a bias-free patch conv (channels x patch^2 -> h) and ln_pre (RMSNorm); per
    layer bias-free q, k, v, o of h x h, a gated MLP (gate, up, down of h x i) and two RMSNorms; the
    projector's RMSNorm over h, the patch merger (h x merge^2 -> h, no bias), linear_1 (h x feature
    layers -> text hidden) and linear_2 (text -> text), with biases when multimodal_projector_bias.
    Mistral-Small-4: 403,305,472 + 25,166,848 = 428,472,320."""
    h, i, m = t.hidden_size, t.intermediate_size, t.patch_merge
    tower = t.num_channels * t.patch_size**2 * h + h + t.num_hidden_layers * (4 * h * h + 3 * h * i + 2 * h)
    linears = h * t.feature_layers * text_hidden + text_hidden * text_hidden
    return tower + h + h * m * m * h + linears + 2 * text_hidden * t.projector_bias


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
    if t.model_type == "gemma4_vision" and t.head_dim and t.num_position_embeddings:
        return gemma4_vision_params(t, text_hidden), True
    if t.model_type == "qwen2_vl" and t.out_hidden_size:
        return qwen2_vl_vision_params(t), True
    if t.model_type == "qwen2_5_vl" and t.out_hidden_size:
        return qwen2_5_vl_vision_params(t), True
    if t.model_type in QWEN3_VL_TOWERS + QWEN3_5_TOWERS and t.out_hidden_size:
        return qwen3_vl_vision_params(t), True
    if t.model_type == MOONVIT3D and t.out_hidden_size:
        return moonvit3d_params(t), True
    if t.model_type == KIMI_K3_VISION:
        return kimi_k3_vision_params(t, text_hidden), True
    if t.model_type == "pixtral" and composite_type == "mistral3" and t.intermediate_size:
        return pixtral_mistral3_params(t, text_hidden), True
    return generic_vit_params(t, text_hidden), False
