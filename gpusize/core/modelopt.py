"""NVIDIA ModelOpt checkpoints: the weight formats it writes and which model roles its module names
cover (pure; read by the config parser and the weight arithmetic).

Sources: NVIDIA Model Optimizer's export (modelopt/torch/export/model_config.py, the QUANTIZATION_*
names it writes into `quant_algo`) and vLLM's reader (vllm/model_executor/layers/quantization/
modelopt.py: ModelOptFp8Config "FP8", "FP8_PER_CHANNEL_PER_TOKEN", "FP8_PB_WO"; ModelOptNvFp4Config
"NVFP4"; ModelOptMixedPrecisionConfig for "MIXED_PRECISION" with per-module `quantized_layers`).
"""

from __future__ import annotations

import re

__all__ = [
    "MODELOPT_ALGOS",
    "MODELOPT_FP8_BLOCK",
    "MXFP8_GROUP",
    "NVFP4_TENSOR_SCALE_BYTES",
    "algo_bytes",
    "modelopt_roles",
    "modelopt_skipped",
]

#: ModelOpt weight formats gpusize sizes. "W4A16_NVFP4" stores NVFP4 weights (bf16 activations), the
#: same bytes as "NVFP4"; "MXFP8" is e4m3 with one e8m0 scale per 32.
MODELOPT_ALGOS = ("NVFP4", "W4A16_NVFP4", "FP8", "FP8_PER_CHANNEL_PER_TOKEN", "FP8_PB_WO", "MXFP8")
#: ModelOpt FP8_PB_WO ("per block, weight only"): 128 x 128 blocks with one fp32 scale each
#: (vLLM modelopt.py, ModelOptFp8PbWoLinearMethod `weight_block_size = (128, 128)`).
MODELOPT_FP8_BLOCK = (128, 128)
#: MXFP8's group: one e8m0 (1-byte) scale per 32 e4m3 values (OCP Microscaling Formats spec v1.0).
MXFP8_GROUP = 32
#: Per-tensor scales of a ModelOpt linear: NVFP4 `weight_scale_2` + `input_scale`, FP8 `weight_scale`
#: + `input_scale`, each one fp32 (vLLM modelopt.py create_weights). 8 bytes per linear tensor: 0.4 MB
#: for DeepSeek-V3's 58 x 256 x 3 expert matrices, below what gpusize rounds to, so left out.
NVFP4_TENSOR_SCALE_BYTES = 8


def algo_bytes(algo: str, group: int, hidden: int = 4096) -> float:
    """Bytes per weight of one ModelOpt format, scales included: NVFP4 4 bits + one fp8 scale per
    `group`; FP8 per-tensor 1; FP8 per-channel 1 + one fp32 per row (rows about `hidden` long);
    FP8_PB_WO 1 + one fp32 per 128 x 128; MXFP8 1 + one e8m0 per 32."""
    if algo.endswith("NVFP4"):
        return 0.5 + 1 / group
    if algo == "MXFP8":
        return 1 + 1 / MXFP8_GROUP
    if algo == "FP8_PER_CHANNEL_PER_TOKEN":
        return 1 + 4 / hidden
    if algo == "FP8_PB_WO":
        return 1 + 4 / (MODELOPT_FP8_BLOCK[0] * MODELOPT_FP8_BLOCK[1])
    return 1.0


#: Module names that are no decoder linear role (embeddings, vision towers and projectors, MTP heads).
_NOT_A_ROLE = ("embed", "vision", "visual", "mm_projector", "multi_modal", "patch_merge", "mtp")
#: The same words as one search (an exclude list names up to a few thousand modules: DeepSeek NVFP4).
#: These patterns are compiled where first matched (`re`'s own cache), not on import: a command
#: that reads no ModelOpt config (`which` over the stored specs) never matches one (start-up).
_NOT_A_ROLE_PATTERN = "|".join(map(re.escape, _NOT_A_ROLE))
#: A whole decoder layer: `model.layers.3*`, `model.layers.3.*`.
_LAYER_ONLY = r"(?:^|\.)layers\.(\d+)(?:\*|\.\*)?$"
#: Mixer projections of Nemotron-H blocks (attention and Mamba-2 alike are `mixer`).
_MIXER = r"mixer\.(q_proj|k_proj|v_proj|o_proj|in_proj|out_proj|conv1d)"


def modelopt_roles(name: str, layers: int) -> tuple[str, ...]:
    """The ParamCounts roles a ModelOpt module name or pattern covers: `...self_attn*` attention,
    `...mlp.experts` experts, `...shared_expert*` shared_experts, `...mlp.down_proj` mlp, `lm_head`;
    a whole decoder layer (`model.layers.3*`) its attention and dense MLP; a layer numbered at or past
    `layers` (the MTP layer DeepSeek and GLM number after the decoder), routers and embeddings none."""
    low = name.lower()
    if re.search(_NOT_A_ROLE_PATTERN, low):
        return ()
    whole = re.search(_LAYER_ONLY, low)
    if whole:
        return () if int(whole.group(1)) >= layers else ("attention", "mlp")
    if low in ("lm_head", "head") or low.endswith(".lm_head"):
        return ("lm_head",)
    if "shared_expert" in low:
        return ("shared_experts",)
    if "experts" in low:
        return ("experts",)
    if low.endswith((".gate", ".router", ".gate*", ".router*")) or ".router." in low:
        return ()
    if "attn" in low or re.search(_MIXER, low):
        return ("attention",)
    if "mlp" in low or "ffn" in low or low.endswith(("down_proj", "up_proj", "gate_proj")):
        return ("mlp",)
    return ()


#: Families whose `mlp` module is the dense MLP beside the routed experts, which gpusize counts with
#: the shared experts (Gemma 4: `layers.N.mlp` and `layers.N.experts`; core/parse/mixers.py `_moe`).
_MLP_AS_SHARED = frozenset({"gemma4_text"})


def modelopt_skipped(not_converted: tuple[str, ...], layers: int, family: str) -> tuple[str, ...]:
    """The linear roles a ModelOpt checkpoint's exclude_modules / ignore list keeps unquantized, for a
    model of `layers` decoder layers (0: none numbered) of `family`: each module name matched
    (`modelopt_roles`). Done once, when the config is parsed (`QuantSpec.modelopt_skipped`), so that
    the catalog's stored specs hold it: the ~1,000 names of a DeepSeek NVFP4 list, matched for the
    catalog's ModelOpt checkpoints, were about a sixth of planning `which`'s table."""
    roles = {role for name in not_converted for role in modelopt_roles(name, layers or 1 << 30)}
    if "mlp" in roles and family in _MLP_AS_SHARED:
        roles.add("shared_experts")
    return tuple(sorted(roles))
