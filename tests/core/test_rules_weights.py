"""The rules of core/weights/, one case per rule, on synthetic configs built by the real parser.

Each case cites the upstream code it follows (vLLM 0.19 unless said). The synthetic dense model
(tests/strategies.py `dense`): hidden 512, 4 layers, 8 heads of 64, 1000-token vocabulary, untied
head, MLP 1024 wide, 4096 positions.
"""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from gpusize.core.weights import (
    WeightFormat,
    bits_per_weight,
    checkpoint_agreement,
    linear_bytes_per_gpu,
    rope_cache_bytes,
    weight_format,
    weights_bytes,
)
from gpusize.errors import GpusizeError
from gpusize.sources.catalog import Catalogs
from gpusize.units import GIB
from tests.helpers import workload
from tests.strategies import dense, mla, moe, spec_of

#: The synthetic dense model with 2 KV heads, counted by hand: embedding and head 2 x 512,000;
#: attention 4 x (512 x (512 + 2 x 128) + 512 x 512); MLP 4 x 3 x 512 x 1024; norms 512 + 4 x 2 x 512.
EMBED, ATTN, MLP, NORMS = 2 * 512_000, 4 * 655_360, 4 * 3 * 512 * 1024, 4608
#: cos/sin table: 4096 positions x head_dim 64 x 2 B.
ROPE = 4096 * 64 * 2
BF16 = WeightFormat("bf16", 2.0, 2.0)


def test_synthetic_counts_are_the_hand_counts() -> None:
    counts = spec_of(dense(heads=8, kv_heads=2)).params
    assert (counts.embedding + counts.lm_head, counts.attention, counts.mlp, counts.small) == (
        EMBED,
        ATTN,
        MLP,
        NORMS,
    )


# --------------------------------------------------------------------------- formats


def test_fp32_checkpoints_are_served_in_bf16() -> None:
    """vllm/config/model.py _resolve_auto_dtype: dtype=auto serves a float32 checkpoint in the
    platform's preferred half type (bf16 on Ampere and later), weights and KV cache alike."""
    spec = spec_of(dense(heads=8, kv_heads=2, dtype="float32"))
    assert spec.torch_dtype == "fp32"
    fmt = weight_format(spec, "auto")
    assert (fmt.name, fmt.linear_bytes, fmt.other_bytes) == ("bf16", 2.0, 2.0)
    assert weights_bytes(spec, fmt) == 2 * (EMBED + ATTN + MLP + NORMS) + ROPE
    assert workload(spec, 1024).kv_bytes == 2.0
    assert weight_format(spec, "fp32").linear_bytes == 4.0  # --dtype float32 is honoured


def test_on_the_fly_formats_keep_their_scales() -> None:
    """vllm/model_executor/layers/quantization/fp8.py (dynamic per-channel weight scale, fp32, one
    per output row ~ hidden wide); int4 weight-only: one fp16 scale per 128 weights. Embeddings,
    lm_head and norms stay in the activation dtype."""
    spec = spec_of(dense())
    fp8 = weight_format(spec, "fp8")
    assert (fp8.linear_bytes, fp8.other_bytes) == (1 + 4 / 512, 2.0)
    int8 = weight_format(spec, "int8")
    assert (int8.linear_bytes, int8.other_bytes) == (1 + 4 / 512, 2.0)
    int4 = weight_format(spec, "int4")
    assert (int4.linear_bytes, int4.other_bytes) == (0.5 + 2 / 128, 2.0)
    assert weight_format(spec_of(dense(dtype="float16")), "int4").other_bytes == 2.0


def _quantized(**quant: object) -> WeightFormat:
    return weight_format(spec_of(dense(quantization_config=quant)), "auto")


def test_gptq_awq_group_scales() -> None:
    """vllm/model_executor/layers/quantization/gptq.py GPTQLinearMethod.create_weights: scales of
    shape (input_size // group_size, output_size) in fp16; group_size -1 means one group over the
    whole input (one scale per output channel, rows ~ hidden wide)."""
    assert _quantized(quant_method="gptq", bits=4, group_size=-1).linear_bytes == 0.5 + 2 / 512
    assert _quantized(quant_method="gptq", bits=4, group_size=32).linear_bytes == 0.5 + 2 / 32
    assert _quantized(quant_method="awq", bits=4).linear_bytes == 0.5 + 2 / 128
    assert _quantized(quant_method="awq", w_bit=4, q_group_size=-1).linear_bytes == 0.5 + 2 / 512
    int8 = _quantized(quant_method="gptq", bits=8, group_size=64)  # int8 g64: fp16 scale per 64 too
    assert (int8.name, int8.linear_bytes) == ("int8", 1 + 2 / 64)
    assert _quantized(quant_method="gptq", bits=8, group_size=-1).linear_bytes == 1 + 4 / 512


def test_fp8_checkpoint_scales() -> None:
    """fp8.py Fp8LinearMethod: per-tensor checkpoints get one fp32 scale per output channel after
    loading (per-channel); block-quantized ones one fp32 scale per block."""
    assert _quantized(quant_method="fp8").linear_bytes == 1 + 4 / 512
    assert _quantized(quant_method="fp8", weight_block_size=[128, 128]).linear_bytes == 1 + 4 / (128 * 128)
    assert _quantized(quant_method="mxfp4").linear_bytes == 0.5 + 1 / 32


def test_modules_not_converted_stay_in_bf16() -> None:
    fmt = _quantized(
        quant_method="fp8", modules_to_not_convert=["model.layers.0.self_attn", "mlp.shared_expert"]
    )
    assert fmt.unquantized == ("attention", "shared_experts")
    spec = spec_of(dense(heads=8, kv_heads=2))
    mixed = WeightFormat("fp8", 1.0, 2.0, unquantized=("attention",))
    assert weights_bytes(spec, mixed) == 2 * (EMBED + ATTN + NORMS) + MLP + ROPE


def test_bits_per_weight_bounds() -> None:
    assert bits_per_weight("bpw2.5") == 2.5
    assert bits_per_weight("bpw1") == 1.0 and bits_per_weight("bpw16") == 16.0
    assert bits_per_weight("fp16") is None
    for bad in ("bpw0.5", "bpw16.5", "bpwnan", "bpwx"):
        with pytest.raises(ValueError):
            bits_per_weight(bad)
    fmt = weight_format(spec_of(dense()), "bpw4")
    assert (fmt.linear_bytes, fmt.other_bytes) == (0.5, 2.0)


# --------------------------------------------------------------------------- sharding


def test_tp_shards_linears_and_replicates_norms() -> None:
    """vllm/model_executor/layers/linear.py Column/RowParallelLinear and vocab_parallel_embedding.py:
    weights split tp ways; layernorm.py RMSNorm weights whole on every rank."""
    spec = spec_of(dense(heads=8, kv_heads=8))
    total = spec.params.total
    assert weights_bytes(spec, BF16, 1) == 2 * total + ROPE
    assert weights_bytes(spec, BF16, 2) == (total - spec.params.small) + 2 * spec.params.small + ROPE


def test_kv_projections_are_replicated_beyond_the_kv_heads() -> None:
    """linear.py QKVParallelLinear: with tp > total_num_kv_heads each rank holds one whole K and V
    head (num_kv_head_replicas = tp // kv heads). 2 KV heads at TP=8: each rank holds 1 head where
    an even split would give 1/4: extra 4 layers x 2 x 512 x 64 x (1 - 2/8) = 196,608 weights."""
    spec = spec_of(dense(heads=8, kv_heads=2))
    sharded = (EMBED + ATTN + MLP) * 2
    assert weights_bytes(spec, BF16, 2) == sharded // 2 + NORMS * 2 + ROPE  # tp = kv heads: no extra
    assert weights_bytes(spec, BF16, 8) == sharded // 8 + NORMS * 2 + 196_608 * 2 + ROPE
    fp8 = WeightFormat("fp8", 1.0, 2.0)
    assert weights_bytes(spec, fp8, 8) == (EMBED * 2 + ATTN + MLP) // 8 + NORMS * 2 + 196_608 + ROPE


def test_router_weights_are_replicated() -> None:
    """vllm/model_executor/models/qwen3_moe.py Qwen3MoeSparseMoeBlock: gate = ReplicatedLinear(hidden,
    num_experts). 4 layers x 512 x 8 = 16,384 router weights on every rank."""
    spec = spec_of(moe(experts=8))
    assert spec.params.router == 16_384
    one, two = weights_bytes(spec, BF16, 1), weights_bytes(spec, BF16, 2)
    assert one == 2 * spec.params.total + ROPE  # counted once
    assert 2 * two - one == (spec.params.small + 16_384) * 2 + ROPE  # held whole by both ranks


def test_mla_down_projections_are_replicated() -> None:
    """vllm/model_executor/models/deepseek_v2.py DeepseekV2MLAAttention: q_a_proj and
    kv_a_proj_with_mqa are ReplicatedLinear (fused_qkv_a_proj): 4 x 512 x (96 + 128 + 16) weights."""
    spec = spec_of(mla())
    assert spec.params.replicated_attention == 4 * 512 * (96 + 128 + 16) == 491_520
    one, two = weights_bytes(spec, BF16, 1), weights_bytes(spec, BF16, 2)
    assert rope_cache_bytes(spec, BF16) == 0  # MLA: the rope table is not counted
    assert one == 2 * spec.params.total  # counted once
    assert 2 * two - one == (491_520 + spec.params.small) * 2  # held whole by both ranks


def test_mtp_layers_shard_like_decoder_layers() -> None:
    """vllm/model_executor/models/deepseek_mtp.py DeepSeekMultiTokenPredictorLayer: a decoder layer
    with the same parallel linears, quantized like the others; loaded only for speculative decoding."""
    spec = spec_of(mla(num_nextn_predict_layers=1))
    mtp = spec.params.mtp
    assert mtp > 0
    assert weights_bytes(spec, BF16, 2, include_mtp=True) - weights_bytes(spec, BF16, 2) == mtp
    fp8 = WeightFormat("fp8", 1.0, 2.0)
    gap = weights_bytes(spec, fp8, 4, include_mtp=True) - weights_bytes(spec, fp8, 4)
    assert abs(gap - mtp / 4) <= 1


def test_expert_parallel_deals_whole_experts() -> None:
    """vllm/model_executor/layers/fused_moe/layer.py determine_expert_map: 6 experts over 4 ranks ->
    2, 2, 1, 1; the fullest rank holds 2 of 6 where slicing gives 6/4 = 1.5 expert widths."""
    spec = spec_of(moe(experts=6))
    experts = spec.params.experts * 2
    sliced, dealt = weights_bytes(spec, BF16, 4), weights_bytes(spec, BF16, 4, expert_parallel=True)
    assert abs((dealt - sliced) - experts * (2 / 6 - 1 / 4)) <= 1
    even = spec_of(moe(experts=8))  # tp = experts: one expert per rank, the same bytes as slicing
    assert weights_bytes(even, BF16, 8, expert_parallel=True) == weights_bytes(even, BF16, 8)


def test_mxfp4_expert_padding_per_rank() -> None:
    """vllm/model_executor/layers/fused_moe/oracle/mxfp4.py mxfp4_round_up_hidden_size_and_intermediate_size:
    hidden up to 256, per-rank intermediate up to 64. Hidden 640 -> 768 (x1.2); 192 / 2 = 96 -> 128."""
    spec = spec_of(moe(experts=8, width=192, hidden=640, quantization_config={"quant_method": "mxfp4"}))
    fmt = weight_format(spec, "auto")
    unpadded = replace(fmt, expert_pad=(1, 1))
    experts = spec.params.experts * fmt.linear_bytes
    for tp, pad in ((1, 768 / 640), (2, 768 / 640 * 128 / 96)):
        gap = weights_bytes(spec, fmt, tp) - weights_bytes(spec, unpadded, tp)
        assert abs(gap - experts * (pad - 1) / tp) <= 1


@pytest.mark.parametrize("dtype", ["auto", "bf16", "fp8", "int4"])
def test_the_cheap_bound_never_passes_the_weights(dtype: str) -> None:
    """`linear_bytes_per_gpu` rules plans out before sizing them (`which`, fix suggestions), so it must
    stay at or under `weights_bytes` for every bundled model: DeepSeek-V4's FP4 experts beside FP8
    attention, and an NVFP4 checkpoint's 4-bit roles, at their own widths (one `linear_bytes` put
    DeepSeek-V4-Flash at 132 GB a GPU of two against its 74 GB, ruling out cards it fits)."""
    checked = 0
    for entry in Catalogs().parsed_models():
        spec = entry.spec
        if spec is None:
            continue
        try:
            fmt = weight_format(spec, dtype)
        except GpusizeError:  # a dtype this checkpoint cannot be served in
            continue
        for n in (1, 2, 4, 8):
            assert linear_bytes_per_gpu(spec, fmt, n) <= weights_bytes(spec, fmt, n), (entry.name, n)
        checked += 1
    assert checked > 100


# --------------------------------------------------------------------------- rope, checkpoint


def test_rope_table_in_the_model_dtype() -> None:
    """vllm/model_executor/layers/rotary_embedding/base.py RotaryEmbedding._compute_cos_sin_cache:
    max_position_embeddings x rotary_dim in the model dtype, on every rank."""
    spec = spec_of(dense())
    assert rope_cache_bytes(spec, BF16) == ROPE
    assert rope_cache_bytes(spec, weight_format(spec, "fp8")) == ROPE  # not in the linear format
    assert weights_bytes(spec, BF16, 8) - rope_cache_bytes(spec, BF16) < weights_bytes(spec, BF16, 1) / 4


def test_checkpoint_smaller_or_larger_than_its_config_wins() -> None:
    """A checkpoint whose tensors disagree with its config by more than 1% is sized from its tensors
    (FP8 tensors under a bf16 torch_dtype, a pruned checkpoint); a smaller one too."""
    spec = spec_of(dense())
    config = weights_bytes(spec, BF16) - ROPE
    assert checkpoint_agreement(spec, BF16, config) == (1.0, None)
    assert checkpoint_agreement(spec, BF16, int(config * 1.005)) == (1.0, None)
    scale, warning = checkpoint_agreement(spec, BF16, config // 2)
    assert scale == pytest.approx(0.5) and warning and "-50.0%" in warning
    scale, warning = checkpoint_agreement(spec, BF16, config * 3 // 2)
    assert scale == pytest.approx(1.5) and warning and "+50.0%" in warning
    assert f"{config / GIB:.2f} GiB" in warning


def test_checkpoint_mtp_share_is_set_aside() -> None:
    spec = spec_of(mla(num_nextn_predict_layers=1))
    counts = spec.params
    config = weights_bytes(spec, BF16)
    stored = math.ceil(config * (counts.total + counts.mtp) / counts.total)
    assert checkpoint_agreement(spec, BF16, stored) == (1.0, None)


def test_checkpoint_scale_applies_to_stored_weights_not_the_rope_table() -> None:
    spec = spec_of(dense(heads=8, kv_heads=2))
    half = WeightFormat("bf16", 2.0, 2.0, checkpoint_scale=0.5)
    assert weights_bytes(spec, half) == (EMBED + ATTN + MLP + NORMS) + ROPE


def test_linear_lower_bound() -> None:
    spec = spec_of(dense(heads=8, kv_heads=2))
    assert linear_bytes_per_gpu(spec, BF16, 4) == (ATTN + MLP) * 2 / 4
