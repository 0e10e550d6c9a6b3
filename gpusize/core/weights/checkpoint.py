"""A checkpoint's own quantization_config as a WeightFormat, and how far its stored tensors agree
with the config arithmetic (pure): FP8 (per channel, per block, per tensor), MXFP4, NVFP4, ModelOpt
mixed precision, GPTQ/AWQ/compressed-tensors int groups, and the modules each leaves unquantized.
"""

from __future__ import annotations

import functools

from gpusize.core.modelopt import algo_bytes
from gpusize.core.spec import ModelSpec
from gpusize.core.weights.formats import (
    FP4_EXPERT_BYTES,
    FP8_CHANNEL_SCALE_BYTES,
    INT4_GROUP_SIZE,
    MXFP4_EXPERT_PAD,
    NVFP4_GROUP,
    WeightFormat,
)
from gpusize.core.weights.per_gpu import rope_cache_bytes, weights_bytes
from gpusize.units import GIB

__all__ = ["CHECKPOINT_TOLERANCE", "checkpoint_agreement", "checkpoint_format"]


#: Disagreement between a checkpoint's stored bytes and the config arithmetic above which the stored
#: bytes win (and a warning says so).
CHECKPOINT_TOLERANCE = 0.01


def checkpoint_agreement(spec: ModelSpec, fmt: WeightFormat, stored_bytes: int) -> tuple[float, str | None]:
    """(scale to apply, warning): the stored tensors vs the config arithmetic for the same model.

    Stored bytes also hold MTP layers the engine skips; their share (config-derived) is removed
    before comparing."""
    counts = spec.params
    config_bytes = weights_bytes(spec, fmt, 1) - rope_cache_bytes(spec, fmt)
    main_share = counts.total / (counts.total + counts.mtp) if counts.mtp else 1.0
    ratio = stored_bytes * main_share / config_bytes
    if abs(ratio - 1) <= CHECKPOINT_TOLERANCE:
        return 1.0, None
    return ratio, (
        f"the checkpoint stores {stored_bytes / GIB:.2f} GiB of tensors, {ratio - 1:+.1%} vs the "
        f"config arithmetic ({config_bytes / GIB:.2f} GiB); sizing from the stored bytes"
    )


@functools.lru_cache(maxsize=1024)
def checkpoint_format(spec: ModelSpec, other: float) -> WeightFormat:
    """The checkpoint's own quantization_config as a WeightFormat (`--dtype auto` on a quantized
    checkpoint); `other` is the bytes per weight of what it leaves unquantized. Kept per (spec,
    other) (a spec keeps its hash): `which` asks for each quantized model's format two or three times,
    and a ModelOpt exclude list is matched module by module (DeepSeek NVFP4: ~1,000 names)."""
    q = spec.quantization
    assert q is not None
    skip = q.modelopt_skipped if q.modelopt else _unquantized_roles(q.not_converted)
    if q.method == "modelopt-mixed":
        return _mixed_format(spec, other, skip)
    o_share = _quantized_o_proj_share(spec) if q.modelopt and "attention" in skip else 0.0
    if q.method == "mxfp4":
        return WeightFormat(
            "mxfp4",
            0.5 + 1 / 32,
            other,
            skip,
            MXFP4_EXPERT_PAD,
            note="MXFP4 experts (4-bit values + one e8m0 scale per 32); "
            "attention, router, embeddings and lm_head in bf16",
        )
    if q.method == "nvfp4":
        group = q.group_size or NVFP4_GROUP
        per = 0.5 + 1 / group
        attention = o_share * per + (1 - o_share) * other
        return WeightFormat(
            "nvfp4",
            per,
            other,
            skip,
            note=f"{q.label}: 4-bit values + one fp8 scale per {group} ({per:.4f} bytes per weight); "
            "the ignored modules, embeddings and lm_head in bf16"
            + (f"; the MLA o_proj NVFP4 ({o_share:.1%} of the attention weights)" if o_share else ""),
            overrides=(("attention", attention),) if o_share else (),
        )
    # 8-bit with a group size (GPTQ/compressed-tensors int8 g128) keeps one fp16 scale per group, below.
    if q.weight_bits == 8 and q.group_size is None:
        scale = (
            4 / (q.block_size[0] * q.block_size[1])
            if q.block_size
            else 0.0
            if q.per_tensor  # one fp32 per tensor (ModelOpt FP8): none per weight
            else (FP8_CHANNEL_SCALE_BYTES / spec.hidden_size)
        )
        if q.expert_format == "fp4":
            return WeightFormat(
                "fp8",
                1 + scale,
                other,
                skip,
                note=f"{q.label}, routed experts FP4 (4-bit + ue8m0 scale per 32); embeddings and "
                "lm_head in bf16",
                expert_bytes=FP4_EXPERT_BYTES,
            )
        return WeightFormat("fp8", 1 + scale, other, skip, note=f"{q.label}; embeddings and lm_head in bf16")
    # GPTQ/AWQ without grouping (group_size -1) keep one fp16 scale per output channel, whose rows are
    # about hidden_size long; other methods without a stated group use the common 128.
    per_channel = q.group_size is None and q.method in ("gptq", "awq")
    group = spec.hidden_size if per_channel else (q.group_size or INT4_GROUP_SIZE)
    per = q.weight_bits / 8 + q.scale_bytes / group
    return WeightFormat(
        f"int{q.weight_bits}",
        per,
        other,
        skip,
        note=f"{q.label}: {per:.4f} bytes per weight with scales; embeddings and lm_head in bf16",
    )


#: The MLA projections a ModelOpt exclude list names one by one (DeepSeek-V3.x NVFP4: q_a_proj,
#: q_b_proj, kv_a_proj_with_mqa, kv_b_proj and the indexer excluded, o_proj quantized).
_MLA_PROJECTIONS = ("q_a_proj", "q_b_proj", "kv_a_proj_with_mqa", "kv_b_proj", "indexer", "q_proj")


def _quantized_o_proj_share(spec: ModelSpec) -> float:
    """The share of an MLA model's attention weights in o_proj when its exclude list names the other
    projections one by one and not o_proj (nvidia/DeepSeek-V3.2-NVFP4), else 0: o_proj is then
    quantized like the experts (vLLM quantizes every linear the list does not match)."""
    q = spec.quantization
    assert q is not None
    if spec.mla is None:  # before matching the list (a model without MLA has no share to find)
        return 0.0
    attn = [name for name in q.not_converted if "attn" in name.lower()]
    named = all(any(f"attn.{proj}" in name for proj in _MLA_PROJECTIONS) for name in attn)
    if not attn or not named or any("o_proj" in name for name in attn):
        return 0.0
    layers = sum(1 for layer in spec.layers if layer.mixer == "attention")
    o_proj = layers * spec.num_attention_heads * spec.mla.v_head_dim * spec.hidden_size
    return o_proj / spec.params.attention if spec.params.attention else 0.0


def _mixed_format(spec: ModelSpec, other: float, skip: tuple[str, ...]) -> WeightFormat:
    """ModelOpt MIXED_PRECISION: each role in its own format, a role the file leaves out (or
    excludes) in the activation dtype."""
    q = spec.quantization
    assert q is not None
    per_role = {role: algo_bytes(algo, group, spec.hidden_size) for role, algo, group in q.mixed}
    linear = ("attention", "mlp", "experts", "shared_experts")
    overrides = tuple((role, other if role in skip else per_role.get(role, other)) for role in linear)
    largest = max(b for _, b in overrides)
    return WeightFormat(
        "modelopt",
        largest,
        other,
        overrides=overrides,
        lm_head_bytes=per_role.get("lm_head") if "lm_head" not in skip else None,
        note=f"{q.label}: "
        + ", ".join(f"{role} {b:.4f} B/weight" for role, b in overrides)
        + "; embeddings, norms and routers in bf16",
    )


def _unquantized_roles(patterns: tuple[str, ...]) -> tuple[str, ...]:
    roles = []
    for pattern in patterns:
        if "attn" in pattern:
            roles.append("attention")
        if "shared_expert" in pattern:
            roles.append("shared_experts")
    return tuple(roles)
