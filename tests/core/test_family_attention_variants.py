"""Attention-variant families from their real config.json (ai-dynamo/aiconfigurator model_configs,
commit 095f58a5): Gemma 4 (two head widths, K-equals-V), MiMo-V2-Flash (K 192 / V 128, sinks on the
sliding layers), MiMo-7B (MTP), Step-3.7-Flash (sliding + full, MTP) and MiniMax-M3 (block-sparse
attention with an indexer key cache). Each KV figure is a worked example of the engine's code:

- page per layer: vllm/v1/kv_cache_interface.py (vllm-project/vllm 001cabc1be16a59a70d720ed61a13b678c060a18)
  FullAttentionSpec.real_page_size_bytes = block x kv_heads x (head_size + head_size_v) x dtype, kv_heads
  = max(1, total // tp) (vllm/model_executor/models/gemma4.py Gemma4Attention, mimo_v2_flash.py);
- page-size unification: vllm/v1/core/kv_cache_utils.py unify_kv_cache_spec_page_size raises the block
  size of each smaller page by max_page // page; `_get_kv_cache_groups_uniform_page_size` groups by the
  smallest type's layer count (the largest when below 1.5x);
- one attention type with per-layer widths (MiniMax-M3's index-key layers): UniformTypeKVCacheSpecs,
  one block id across all layers, page = the sum of the layers' pages.

The per-model KV heads and widths come from vLLM's model files: gemma4.py Gemma4DecoderLayer
(global_head_dim, num_global_key_value_heads under attention_k_eq_v; commit 001cabc1), mimo_v2_flash.py
MiMoV2FlashDecoderLayer (swa_* fields, head_size_v; commit 01ed47b4), step3p5.py Step3p5DecoderLayer
(commit 01b50b9e), layers/attention/attention.py get_kv_cache_spec (head_size_v on the sliding spec
too; commit 0014ca6b), and baidu/vLLM-Kunlun minimax_m3.py (commit 2d92d40f) for MiniMax-M3.
"""

from __future__ import annotations

from typing import Any

import pytest

from gpusize.core import kvcache
from gpusize.core.engines.vllm.value_slots import value_slots
from gpusize.core.kvcache import KvGroup
from gpusize.core.parse import parse_config
from gpusize.core.spec import ModelSpec
from gpusize.core.weights import rope_cache_bytes, weight_format, weights_bytes
from gpusize.errors import ConfigError
from gpusize.sources.catalog import find_gpu
from tests.conftest import REFERENCE, load_reference
from tests.helpers import catalog_spec, cli, workload

TPS = (1, 2, 4, 8)


def _reference(name: str) -> dict[str, Any]:
    config: dict[str, Any] = load_reference(REFERENCE / "configs" / f"{name}.json")["config"]
    return config


def _per_token(spec: ModelSpec) -> list[int]:
    return [kvcache.kv_cache_bytes_per_token(spec, 2.0, tp) for tp in TPS]


def _within(count: int, published: float, tolerance: float = 0.005) -> bool:
    return abs(count - published) <= tolerance * published


# --------------------------------------------------------------------------- Gemma 4


def test_gemma4_layers_read_from_config() -> None:
    """Gemma4DecoderLayer: full layers use global_head_dim (512) and, with attention_k_eq_v,
    num_global_key_value_heads (4 for 31B) and no v_proj; sliding layers 16 KV heads x 256."""
    spec = catalog_spec("gemma-4-31b")
    full = [la for la in spec.layers if la.window is None]
    sliding = [la for la in spec.layers if la.window == 1024]
    assert (len(full), len(sliding)) == (10, 50)
    assert (full[0].head_dim, full[0].num_key_value_heads, full[0].k_eq_v) == (512, 4, True)
    assert (sliding[0].head_dim or spec.head_dim, sliding[0].num_key_value_heads) == (256, 16)


def test_gemma4_31b_kv_per_token_at_each_tp() -> None:
    """bf16: sliding 2 x max(1, 16/tp) x 256 x 2 B (16,384 / 8,192 / 4,096 / 2,048), global
    2 x max(1, 4/tp) x 512 x 2 B (8,192 / 4,096 / 2,048 / 2,048: one head from TP=4); x50 and x10:
    TP=1 819,200 + 81,920 = 901,120; TP=8 102,400 + 20,480 = 122,880."""
    assert _per_token(catalog_spec("gemma-4-31b")) == [901_120, 450_560, 225_280, 122_880]


def test_gemma4_31b_pages_unified_by_block_size() -> None:
    """TP=1: sliding page 16 x 16,384 = 262,144 B, global 16 x 8,192 = 131,072 B -> global blocks of
    32 tokens; group size 10 (10 global, 50 sliding >= 1.5 x 10): 5 sliding groups + 1 global group;
    one block id = 10 x 262,144 B. TP=8: both pages 16 x 2,048 = 32,768 B, block 16 everywhere."""
    spec = catalog_spec("gemma-4-31b")
    one = kvcache.kv_layout(spec, 2.0, 1)
    assert one is not None
    assert (one.page_bytes, one.block_size, one.group_size) == (262_144, 16, 10)
    assert one.groups == (KvGroup("sliding", 1024),) * 5 + (KvGroup("full", None, 32),)
    assert one.bytes_per_block == 2_621_440
    eight = kvcache.kv_layout(spec, 2.0, 8)
    assert eight is not None
    assert (eight.page_bytes, eight.groups[-1]) == (32_768, KvGroup("full", None))


def test_gemma4_request_blocks_count_the_raised_block_size() -> None:
    """32,768 tokens, 2,048 batched: each sliding group cdiv(1,023 + 2,048, 16) + 1 = 193 blocks, the
    global group cdiv(32,768, 32) = 1,024 blocks (not 2,048 of 16): 5 x 193 + 1,024 = 1,989."""
    layout = kvcache.kv_layout(catalog_spec("gemma-4-31b"), 2.0, 1)
    assert layout is not None
    assert kvcache.blocks_per_request(layout, 32_768, 2_048) == 1_989
    assert kvcache.capacity_tokens(layout, 6_000) == 6_000 // 6 * 16  # the smallest block size


def test_gemma4_26b_moe_flips_the_page_ratio_with_tp() -> None:
    """26B-A4B: sliding 8 KV heads x 256, global 2 x 512. TP=1: 8,192 vs 4,096 B/token (global
    blocks of 32); TP=4: 2,048 vs 2,048 (equal pages, still 5 + 1 groups of 5); TP=8: sliding one
    head 1,024 vs global 2,048 -> the sliding groups take blocks of 32."""
    spec = catalog_spec("gemma-4-26b-a4b")
    assert _per_token(spec) == [225_280, 112_640, 61_440, 35_840]
    blocks = []
    for tp in (1, 4, 8):
        layout = kvcache.kv_layout(spec, 2.0, tp)
        assert layout is not None and layout.group_size == 5 and len(layout.groups) == 6
        blocks.append((layout.groups[0].block_size, layout.groups[-1].block_size))
    assert blocks == [(0, 32), (0, 0), (32, 0)]


def test_gemma4_parameters_match_the_model_card() -> None:
    """Text decoder (vision tower aside): 31B 30.7B; 26B-A4B 25.2B total / 3.8B active (the card's
    rounded figures). The MoE layer = the dense MLP (2,112) + 128 experts of 704 + the router."""
    big, moe = catalog_spec("gemma-4-31b").params, catalog_spec("gemma-4-26b-a4b").params
    assert big.total - big.vision == 30_697_345_280 and _within(big.total - big.vision, 30.7e9)
    assert moe.total - moe.vision == 25_233_141_760 and _within(moe.total - moe.vision, 25.2e9)
    assert abs((moe.active - moe.vision) - 3.8e9) < 0.05e9


def test_gemma4_per_layer_embeddings_refused_by_name() -> None:
    """Gemma 4 E2B/E4B (per-layer embeddings, KV-shared layers) are not modelled: one line naming
    the field, not a silently wrong size."""
    config = _reference("google__gemma-4-26B-A4B")
    config = {**config, "text_config": {**config["text_config"], "num_kv_shared_layers": 20}}
    with pytest.raises(ConfigError, match="num_kv_shared_layers"):
        parse_config(config)


def test_page_sizes_that_do_not_divide_are_refused() -> None:
    """vLLM raises NotImplementedError when the largest page is not a multiple of a smaller one
    (3 KV heads x 512 vs 8 x 256 here): gpusize says so instead of sizing a pool vLLM cannot build."""
    config = _reference("google__gemma-4-26B-A4B")
    config = {**config, "text_config": {**config["text_config"], "num_global_key_value_heads": 3}}
    with pytest.raises(ConfigError, match="unify"):
        kvcache.kv_layout(parse_config(config), 2.0, 1)


# --------------------------------------------------------------------------- MiMo


def test_mimo_v2_flash_k_and_v_widths() -> None:
    """39 sliding layers (8 KV heads) + 9 full layers (4 KV heads), K 192 + V 128 per head, bf16:
    sliding max(1, 8/tp) x 320 x 2 B (5,120 / 2,560 / 1,280 / 640), full max(1, 4/tp) x 320 x 2 B
    (2,560 / 1,280 / 640 / 640): TP=1 199,680 + 23,040 = 222,720; TP=8 48 x 640 = 30,720."""
    spec = catalog_spec("MiMo-V2-Flash")
    assert _per_token(spec) == [222_720, 111_360, 55_680, 30_720]
    layout = kvcache.kv_layout(spec, 2.0, 1)
    assert layout is not None
    assert (layout.page_bytes, layout.group_size) == (81_920, 9)
    assert layout.groups[0] == KvGroup("full", None, 32) and len(layout.groups) == 6


def test_mimo_v2_flash_parameters_and_sinks() -> None:
    """Sinks on the 39 sliding layers only (64 per layer: add_full_attention_sink_bias false);
    o_proj is 64 x 128 -> 4,096. Total 308.78B vs the card's 309B, active 14.8B vs 15B."""
    spec = catalog_spec("MiMo-V2-Flash")
    assert sum(la.sinks for la in spec.layers) == 39
    assert spec.params.total == 308_778_780_864 and _within(spec.params.total, 309e9)
    assert abs(spec.params.active - 15e9) < 0.25e9


def test_mimo_7b_mtp_layer_and_kv() -> None:
    """MiMo-7B: the Qwen2 decoder, 36 layers x 2 x 8 x 128 x 2 B = 147,456 B/token at TP=1; its one
    MTP layer (a decoder layer + 3 norms + the 2h -> h input projection) is 210,790,400."""
    spec = catalog_spec("MiMo-7B")
    assert _per_token(spec) == [147_456, 73_728, 36_864, 18_432]
    assert (spec.params.total, spec.params.mtp) == (7_622_619_136, 210_790_400)


# --------------------------------------------------------------------------- Step-3.7


def test_step37_sliding_and_full_groups() -> None:
    """45 layers x 2 x 8 x 128 x 2 B = 184,320 B/token (TP=8: one head, 23,040); 12 full + 33
    sliding (window 512) -> group size 12 (33 >= 1.5 x 12): 1 full + 3 sliding groups."""
    spec = catalog_spec("Step-3.7-Flash")
    assert _per_token(spec) == [184_320, 92_160, 46_080, 23_040]
    layout = kvcache.kv_layout(spec, 2.0, 1)
    assert layout is not None
    assert (
        layout.group_size == 12 and layout.groups == (KvGroup("full", None),) + (KvGroup("sliding", 512),) * 3
    )


def test_step37_parameters_and_mtp() -> None:
    """195.83B vs the card's 196B language backbone; 3 MTP layers stored beside it."""
    counts = catalog_spec("Step-3.7-Flash").params
    assert counts.total == 195_832_712_256 and _within(counts.total, 196e9)
    assert counts.mtp == 13_967_488_608


# --------------------------------------------------------------------------- MiniMax-M3


def test_minimax_m3_index_key_is_cached_whole_on_every_rank() -> None:
    """MiniMaxM3SparseAttention (baidu/vLLM-Kunlun minimax_m3.py, commit 2d92d40f): K and V of
    max(1, 4/tp) heads x 128 on all 60 layers, plus one 128-wide index key per token on the 57 sparse
    layers (MiniMaxM3IndexerCache, not split by TP), bf16: TP=1 60 x 2,048 + 57 x 256 = 137,472;
    TP=4 and 8: 60 x 512 + 14,592 = 45,312. One attention type -> UniformTypeKVCacheSpecs: one
    group, page = 16 x the sum."""
    spec = catalog_spec("MiniMax-M3")
    assert _per_token(spec) == [137_472, 76_032, 45_312, 45_312]
    layout = kvcache.kv_layout(spec, 2.0, 1)
    assert layout is not None
    assert (layout.page_bytes, layout.group_size, layout.groups) == (
        16 * 137_472,
        1,
        (KvGroup("full", None),),
    )


def test_minimax_m3_parameters() -> None:
    """426.17B (text) vs the card's ~428B with its vision tower; the indexer adds 6,144 x 5 x 128
    weights per sparse layer."""
    spec = catalog_spec("MiniMax-M3")
    assert spec.params.total == 426_174_572_928 and _within(spec.params.total, 428e9)
    assert sum(la.index_head_dim == 128 for la in spec.layers) == 57


# --------------------------------------------------------------------------- the CLI


@pytest.mark.parametrize(
    "name",
    ["gemma-4-31b", "gemma-4-26b-a4b", "MiMo-V2-Flash", "MiMo-7B", "Step-3.7-Flash", "MiniMax-M3"],
)
def test_fit_answers(name: str) -> None:
    result = cli("fit", name, "--ctx", "32k")
    assert result.code in (0, 1), result.stderr


@pytest.mark.parametrize(
    ("name", "release", "first"), [("gemma-4-31b", "0.18.1", "0.19.0"), ("MiMo-V2-Flash", "0.13.0", "0.14.0")]
)
def test_vllm_release_before_the_family_is_refused(name: str, release: str, first: str) -> None:
    refused = cli("fit", name, "--ctx", "32k", "--engine-version", release)
    assert refused.code == 2 and refused.stdout == ""
    assert (
        f"first vLLM release that does is {first}" in refused.stderr and len(refused.stderr.splitlines()) == 1
    )
    assert cli("fit", name, "--ctx", "32k", "--engine-version", first).code in (0, 1)


def test_gemma4_vision_tower_counted_exactly() -> None:
    """Gemma4VisionModel (27 layers, h 1152, MLP 4304, heads of 72, 2 x 10,240 position rows) +
    embed_vision: patch 3 x 16 x 16 x 1152 = 884,736; positions 2 x 10,240 x 1152 = 23,592,960; per
    layer 4 x 1152^2 + 2 x 72 + 3 x 1152 x 4304 + 4 x 1152 = 20,187,792 (x27 = 545,070,384);
    standardization 2 x 1152; projector 1152 x 2816 = 3,244,032: 572,794,416."""
    vision = catalog_spec("gemma-4-26b-a4b").vision
    assert vision is not None and vision.exact
    assert vision.params == 884_736 + 23_592_960 + 545_070_384 + 2_304 + 3_244_032


def test_ministral3_reads_as_the_mistral_decoder() -> None:
    """Devstral 2 declares model_type ministral3 at the top level (Ministral3ForCausalLM): the
    Mistral decoder, so the same tensors as the config written as mistral."""
    config = {
        "architectures": ["Ministral3ForCausalLM"],
        "model_type": "ministral3",
        "head_dim": 128,
        "hidden_size": 5120,
        "intermediate_size": 32768,
        "max_position_embeddings": 262144,
        "num_attention_heads": 32,
        "num_hidden_layers": 40,
        "num_key_value_heads": 8,
        "rope_parameters": {"rope_type": "yarn", "factor": 48.0, "original_max_position_embeddings": 8192},
        "sliding_window": None,
        "tie_word_embeddings": False,
        "vocab_size": 131072,
    }
    spec = parse_config(config)
    assert spec.family == "ministral3"
    assert spec.params == parse_config({**config, "model_type": "mistral"}).params


@pytest.mark.parametrize(
    ("name", "change", "field"),
    [
        ("XiaomiMiMo__MiMo-V2-Flash", {"hybrid_layer_pattern": [0, 1]}, "hybrid_layer_pattern"),
        ("XiaomiMiMo__MiMo-V2-Flash", {"moe_layer_freq": [1] * 47}, "moe_layer_freq"),
        (
            "MiniMaxAI__MiniMax-M3",
            {"sparse_attention_config": {"use_sparse_attention": True}},
            "sparse_num_index_heads",
        ),
        ("google__gemma-4-26B-A4B", {"layer_types": ["chunky_attention"] * 30}, "layer_types"),
    ],
)
def test_bad_variant_fields_name_the_field(name: str, change: dict[str, Any], field: str) -> None:
    config = _reference(name)
    if "text_config" in config:
        config = {**config, "text_config": {**config["text_config"], **change}}
    else:
        config = {**config, **change}
    with pytest.raises(ConfigError, match=field):
        parse_config(config)


def test_step_fields_as_vllm_reads_them() -> None:
    """Step3p5DecoderLayer's own spellings: num_attention_groups (KV heads), the sliding layers' heads
    from attention_other_setting, use_head_wise_attn_gate (g_proj 4,096 x heads per layer),
    moe_layers_enum, moe_num_experts / moe_top_k / share_expert_dim. Same KV (8 groups of 128) as
    the aiconfigurator copy; 33 sliding layers of 96 heads add 33 x 32 x 128 x 4,096 x 2 (q and o)."""
    base = _reference("stepfun-ai__Step-3.7-Flash")
    renamed = {
        k: v
        for k, v in base.items()
        if k not in ("num_key_value_heads", "num_experts", "num_experts_per_tok")
    }
    config = {
        **renamed,
        "model_type": "step3p5",
        "num_attention_groups": 8,
        "moe_num_experts": 288,
        "moe_top_k": 8,
        "moe_layers_enum": ",".join(str(i) for i in range(3, 45)),
        "attention_other_setting": {
            "attention_type": "sliding_attention",
            "num_attention_heads": 96,
            "num_attention_groups": 8,
            "head_dim": 128,
        },
        "use_head_wise_attn_gate": True,
    }
    spec, plain = parse_config(config), catalog_spec("Step-3.7-Flash")
    assert _per_token(spec) == _per_token(plain)
    assert {la.num_attention_heads for la in spec.layers if la.window} == {96}
    gate = 4096 * (12 * 64 + 33 * 96)
    wider = 33 * 32 * 128 * 4096 * 2  # q_proj and o_proj of the 32 extra heads
    assert spec.params.total - plain.params.total == gate + wider


def test_minimax_m3_vl_wrapper_reads_its_text_config() -> None:
    """MiniMaxM3VLConfig keeps the LLM fields under text_config: the same text tower as the flat
    config; its CLIP-style tower is a generic estimate, labelled as such."""
    text = _reference("MiniMaxAI__MiniMax-M3")
    composite = {
        "architectures": ["MiniMaxM3SparseForConditionalGeneration"],
        "model_type": "minimax_m3_vl",
        "text_config": {**text, "model_type": "minimax_m3_vl_text"},
        "vision_config": {
            "model_type": "clip_vision_model",
            "hidden_size": 1024,
            "intermediate_size": 4096,
            "num_hidden_layers": 24,
            "patch_size": 14,
            "image_size": 336,
        },
    }
    spec = parse_config(composite)
    assert spec.family == "minimax_m3" and spec.vision is not None and not spec.vision.exact
    assert spec.params.total - spec.params.vision == catalog_spec("MiniMax-M3").params.total
    assert _per_token(spec) == _per_token(catalog_spec("MiniMax-M3"))


def test_gemma4_global_kv_projections_replicated_beyond_their_heads() -> None:
    """TP=8 on Gemma-4-31B: the sliding layers' 16 KV heads split, but each global layer's 4 KV heads
    (K only: K-equals-V) are replicated, one whole head per rank: 10 x 5,376 x 512 x (1 - 4/8) =
    13,762,560 weights per GPU beyond the even split (bf16: 27,525,120 B)."""
    spec = catalog_spec("gemma-4-31b")
    fmt, c = weight_format(spec, "bf16"), spec.params
    sharded = c.total - c.small - c.router - c.replicated_attention
    even = 2 * sharded / 8 + 2 * (c.small + c.router + c.replicated_attention) + rope_cache_bytes(spec, fmt)
    assert weights_bytes(spec, fmt, 8) - even == pytest.approx(27_525_120, abs=8)


def test_vllm_holds_a_value_slot_for_k_eq_v_layers() -> None:
    """Gemma4Attention's qkv_proj has a V slot the checkpoint lacks (K loaded into both): 10 global
    layers x 5,376 x 4 KV heads x 512 = 110,100,480 weights, bf16 220,200,960 B at TP=1; at TP=8 one
    head per rank: 27,525,120 x 2 B = 55,050,240 B."""
    spec = catalog_spec("gemma-4-31b")
    work = workload(spec, ctx=32_768)
    gpu = find_gpu("H100-SXM")
    one, eight = value_slots(spec, gpu, 1, work), value_slots(spec, gpu, 8, work)
    assert one is not None and eight is not None
    assert (one.bytes, eight.bytes) == (220_200_960, 55_050_240)
    assert (
        value_slots(catalog_spec("MiMo-V2-Flash"), gpu, 1, workload(catalog_spec("MiMo-V2-Flash"), ctx=4096))
        is None
    )


def test_minimax_m3_index_keys_stay_bf16_under_fp8_kv() -> None:
    """MiniMaxM3SparseAttention: index_cache_torch_dtype = the model dtype when the KV cache is
    quantized. fp8 at TP=1: 60 x 2 x 4 x 128 x 1 B + 57 x 128 x 2 B = 61,440 + 14,592 = 76,032."""
    assert kvcache.kv_cache_bytes_per_token(catalog_spec("MiniMax-M3"), 1.0, 1) == 76_032
