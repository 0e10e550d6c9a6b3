"""SGLang's start-up allowance for a vision-language model (pure): the default mem_fraction_static
lowered for the vision encoder, as server_args.py `adjust_mem_fraction_for_vlm` computes it (0.4.9.post3
on; sglang/srt/arg_groups/memory_hook.py in 0.5.23). Part of `core.engines.sglang`.

SGLang reads the tower's shape from the Hugging Face vision config by attribute:
`getattr(vision_config, "num_hidden_layers", 24)` and `getattr(vision_config, "hidden_size", 1024)`.
The Qwen-VL configs (transformers Qwen2VLVisionConfig, Qwen2_5_VLVisionConfig, Qwen3VLVisionConfig,
Qwen3_5VisionConfig, and SGLang's own configs/qwen3_vl.py, qwen3_5.py) name the layer count `depth`
and map only num_attention_heads, so SGLang takes 24 layers for them; Qwen2-VL's `hidden_size` is the
merged output width (3584 for the 7B), its tower width being `embed_dim`.
"""

from __future__ import annotations

from gpusize.core.spec import ModelSpec, VisionSpec
from gpusize.core.vision import QWEN3_5_TOWERS, QWEN3_VL_TOWERS

__all__ = [
    "VLM_FRACTION_SINCE",
    "BASELINE_VIT",
    "DEPTH_NAMED_TOWERS",
    "TEXT_BY_DEFAULT",
    "VLM_BASE_FACTOR",
    "VLM_DEFAULT_LAYERS",
    "served_multimodal",
    "vit_shape",
    "vlm_fraction",
]

#: The first release whose server_args.py lowers the static fraction for VLMs
#: (`adjust_mem_fraction_for_vlm`: in the 0.4.9.post3 wheel, absent in 0.4.9.post2).
VLM_FRACTION_SINCE = "0.4.9.post3"
#: adjust_mem_fraction_for_vlm: "a base mem_fraction_static factor for regular Vit".
VLM_BASE_FACTOR = 0.95
#: Its baseline ViT (ViT-L/14): 24 layers of width 1024; the factor moves 10% per 100% of
#: layers x width^2 above it, within [0.8, 1.05].
BASELINE_VIT = (24, 1024)
#: What SGLang takes when the vision config has no `num_hidden_layers` attribute.
VLM_DEFAULT_LAYERS = 24
#: Vision towers whose Hugging Face config names the layer count `depth` (no num_hidden_layers).
DEPTH_NAMED_TOWERS = ("qwen2_vl", "qwen2_5_vl", *QWEN3_VL_TOWERS, *QWEN3_5_TOWERS)


#: Architectures SGLang serves text-only unless --enable-multimodal is given (configs/model_config.py
#: `mm_disabled_models`: Gemma3ForConditionalGeneration, Llama4ForConditionalGeneration, and
#: Step3VLForConditionalGeneration, which gpusize does not parse). SGLang still builds their vision
#: tower (its weights load), but the model is not multimodal to it: server_args applies the VLM
#: reduction only `if model_config.is_multimodal`.
TEXT_BY_DEFAULT = ("Gemma3ForConditionalGeneration", "Llama4ForConditionalGeneration")


def served_multimodal(spec: ModelSpec, enable_multimodal: bool) -> bool:
    """Whether SGLang serves `spec` as a multimodal model (a vision tower, and not one of
    TEXT_BY_DEFAULT without --enable-multimodal)."""
    return spec.vision is not None and (enable_multimodal or spec.architecture not in TEXT_BY_DEFAULT)


def vit_shape(v: VisionSpec) -> tuple[int, int]:
    """(layers, width) as SGLang reads them from the vision config (module docstring)."""
    if v.model_type not in DEPTH_NAMED_TOWERS:
        return v.num_hidden_layers, v.hidden_size
    width = v.out_hidden_size if v.model_type == "qwen2_vl" and v.out_hidden_size else v.hidden_size
    return VLM_DEFAULT_LAYERS, width


def vlm_fraction(fraction: float, v: VisionSpec) -> float:
    """The default mem_fraction_static of a multimodal model: fraction x 0.95 x clamp(1 - 0.1 x
    (layers x width^2 / (24 x 1024^2) - 1), 0.8, 1.05)."""
    layers, width = vit_shape(v)
    ratio = layers * width**2 / (BASELINE_VIT[0] * BASELINE_VIT[1] ** 2)
    return fraction * VLM_BASE_FACTOR * min(max(1 - 0.1 * (ratio - 1), 0.8), 1.05)
