"""Kimi-K3 (`kimi_k3` wrapping a `kimi_linear` text_config): sized from its config alone.

Code read (vllm-project/vllm main, the K3 model package vllm/models/kimi_k3): nvidia/model.py at
commit 006193b5 (`KimiMoE`: routed_expert_down_proj hidden -> latent, routed_expert_norm over the
latent, routed_expert_up_proj latent -> hidden, all ReplicatedLinear, experts at the latent width;
`KimiDecoderLayer`: self_attention_res_norm, mlp_res_norm and the pseudo-queries
self_attention_res_proj / mlp_res_proj; `KimiLinearModel`: output_attn_res_norm / _proj and the
`block_residual` stack of cdiv(layers, attn_res_block_size) x hidden per token), nvidia/mla.py at
01b867e8 (`MultiHeadLatentAttention`: g_proj hidden -> heads x v_head_dim, a ColumnParallelLinear;
`get_kv_cache_spec` MLAAttentionSpec head_size kv_lora_rank + qk_rope_head_dim, one KV head),
nvidia/kda.py at 055e47c2 (`KimiK3DeltaAttention`: in_proj_qkvgfab = q, k, v, g of P each + f_a
(head_dim, replicated) + b (heads), f_b head_dim -> P, state `kda_state_shape`), and
vllm/model_executor/models/kimi_k25_vit.py with KimiK3VisionConfig at 055e47c2 (the tower).

Worked example, the released config (h = 7168, 93 layers, P = 96 x 128 = 12,288):
- MLA layer: q_a 7168 x 1536 + q_b 1536 x 96 x 192 + kv_a 7168 x 576 + kv_b 512 x 96 x 256 + o 12,288 x
  7168 + g_proj 7168 x 12,288 = 232,194,048 linear;
- KDA layer: q, k, v, g 4 x 7168 x 12,288 + f_a 7168 x 128 + f_b 128 x 12,288 + b 7168 x 96 + o 12,288 x
  7168 = 443,580,416 linear;
- MoE layer: 896 experts x 3 x 3584 x 3072 = 29,595,009,024; shared 3 x 7168 x 6144 + latent 2 x 7168 x
  3584 = 183,500,800; router 7168 x 896 + 896 bias; latent norm 3584;
- attention residuals: 4 x 7168 per layer, 2 x 7168 at the end;
- vision: 447,358,976 (below); total 2,779,931,834,976.
The published total, 2,779,931,837,184 (find_string id 71159453588: the Hub count; xorbitsai/inference
PR #5417: 2779.93B), is 2,208 more: the checkpoint stores A_log as 128 entries for the 96 heads of each
of the 69 KDA layers (find_string id 66215810080: "A_log ships as 128 entries for 96 heads on the
published checkpoint and is sliced at sanitize"), 69 x 32.
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from gpusize.core import kvcache
from gpusize.core.engines import vllm
from gpusize.core.engines.vllm import hybrid
from gpusize.core.engines.vllm.overhead import activation_bytes
from gpusize.core.engines.vllm.scheduler import SchedulerLimits
from gpusize.core.kinds import mixer_kind
from gpusize.core.params import layer_params
from gpusize.core.parse import parse_config
from gpusize.core.spec import ModelSpec
from gpusize.core.weights import weights_bytes
from gpusize.errors import ConfigError
from tests.conftest import REFERENCE, load_reference
from tests.helpers import catalog_spec, cli, workload

PATH = REFERENCE / "configs" / "moonshotai__Kimi-K3.json"
H, P = 7168, 96 * 128
CONFIG_DERIVED = 2_779_931_834_976
PUBLISHED = 2_779_931_837_184
VISION = 447_358_976
#: KDA layers x the 32 A_log entries the checkpoint stores beyond the 96 heads.
A_LOG_EXTRA = 69 * (128 - 96)


def _config() -> dict[str, object]:
    config: dict[str, object] = load_reference(PATH)["config"]
    return config


def _spec() -> ModelSpec:
    return parse_config(_config())


def test_config_is_sized_not_refused() -> None:
    """Before: 'gpusize does not count these tensors yet: routed_expert_hidden_size ...' (exit 2)."""
    spec = _spec()
    assert spec.params.total == CONFIG_DERIVED
    assert PUBLISHED - spec.params.total == A_LOG_EXTRA
    assert abs(spec.params.total - PUBLISHED) / PUBLISHED < 1e-8
    assert [layer.mixer for layer in spec.layers].count("kimi_delta") == 69
    assert len(spec.attention_layers) == 24


def test_routed_experts_match_the_published_expert_weights() -> None:
    """92 MoE layers x 896 experts x 3 x 3584 x 3072 = 2,722,740,830,208 ('of which ... are routed
    expert weights', find_string id 71159453588)."""
    assert _spec().params.experts == 2_722_740_830_208


def test_mla_layer_counts_the_output_gate() -> None:
    spec = _spec()
    layer = spec.attention_layers[0]
    counts = mixer_kind(spec, layer).params(spec, layer)
    gate = H * 96 * 128
    assert counts.attention == 232_194_048
    assert counts.attention - gate == 7168 * 1536 + 1536 * 96 * 192 + 7168 * 576 + 512 * 96 * 256 + P * H
    assert counts.replicated_attention == 7168 * 1536 + 7168 * 576  # q_a + kv_a, replicated


def test_kda_layer_counts_the_full_rank_gate() -> None:
    spec = _spec()
    layer = spec.layers[0]
    assert layer.mixer == "kimi_delta"
    counts = mixer_kind(spec, layer).params(spec, layer)
    assert counts.attention == 4 * H * P + H * 128 + 128 * P + H * 96 + P * H == 443_580_416
    assert counts.replicated_attention == H * 128  # f_a only: g_proj is sharded
    assert counts.small == P + 3 * P * 4 + 96 + 128  # dt_bias, convs, A_log, o_norm


def test_latent_moe_layer_and_attention_residual_vectors() -> None:
    spec = _spec()
    moe_layer = spec.layers[1]
    assert moe_layer.ffn == "moe" and moe_layer.mixer == "kimi_delta"
    counts = layer_params(spec, moe_layer)
    assert counts.experts == 896 * 3 * 3584 * 3072
    assert counts.experts_active == 16 * 3 * 3584 * 3072
    assert counts.shared_experts == 3 * H * 6144 + 2 * H * 3584 == 183_500_800
    assert counts.router == H * 896 + 896
    mixer_small = mixer_kind(spec, moe_layer).params(spec, moe_layer).small
    # two pre-norms + 4 attention-residual vectors + the latent RMSNorm
    assert counts.small - mixer_small == 2 * H + 4 * H + 3584
    plain = replace(spec, attn_res_block_size=0)
    assert layer_params(spec, moe_layer).small - layer_params(plain, moe_layer).small == 4 * H


def test_vision_tower_is_the_k3_moonvit() -> None:
    """Patch 3 x 14 x 14 x 1024 (no bias) + grid 64 x 64 x 1024 = 4,796,416; each of 27 blocks: two
    RMSNorms 2,048, wqkv 1024 x 3 x 1536 + wo 1536 x 1024 = 6,291,456, fc0 + fc1 2 x 1024 x 4096 =
    8,388,608 (14,682,112); final RMSNorm 1024; projector 4096^2 + 4096 x 7168 + RMSNorm 7168 =
    46,144,512: 447,358,976."""
    spec = _spec()
    assert spec.vision is not None and spec.vision.exact
    assert spec.vision.model_type == "kimi_k3_vision"
    assert spec.params.vision == VISION == 4_796_416 + 27 * 14_682_112 + 1024 + 46_144_512


def test_other_vision_layout_is_refused_naming_the_field() -> None:
    config = _config()
    vision = dict(config["vision_config"])  # type: ignore[call-overload]
    with pytest.raises(ConfigError, match="norm_type"):
        parse_config({**config, "vision_config": {**vision, "norm_type": "layernorm"}})
    with pytest.raises(ConfigError, match="linear_bias"):
        parse_config({**config, "vision_config": {**vision, "linear_bias": True}})


@pytest.mark.parametrize("tp", [1, 2, 4, 8])
def test_mla_kv_per_token_per_gpu(tp: int) -> None:
    """MultiHeadLatentAttention.get_kv_cache_spec: one latent head of 512 + 64 = 576 on every rank,
    bf16: 1,152 B per layer, 24 MLA layers = 27,648 B per token whatever the TP size."""
    spec = _spec()
    layer = spec.attention_layers[0]
    assert kvcache.kv_bytes_per_token_per_layer(spec, 2.0, tp, layer.num_key_value_heads, layer) == 1152
    assert 24 * 1152 == 27_648


@pytest.mark.parametrize(
    ("tp", "page"),
    # kda_state_shape: conv (3, 3 x 12,288 / tp) in bf16 + recurrent (96 / tp, 128, 128) in fp32:
    # TP1 3 x 36,864 x 2 + 96 x 128 x 128 x 4 = 221,184 + 6,291,456.
    [(1, 6_512_640), (2, 3_256_320), (4, 1_628_160), (8, 814_080)],
)
def test_kda_state_per_layer_per_gpu(tp: int, page: int) -> None:
    spec = _spec()
    conv, ssm = hybrid.state_dtypes(spec, workload(spec, 4096))
    assert hybrid.mamba_page_bytes(spec, tp, conv, ssm) == page
    # per sequence over the 69 KDA layers: 449,372,160 B at TP1
    assert 69 * page == 449_372_160 // tp


def test_experts_are_mxfp4_with_one_byte_scales() -> None:
    """compressed-tensors mxfp4-pack-quantized, scale_dtype torch.uint8: 0.5 + 1/32 bytes per expert
    weight (was 0.5 + 2/32 with an assumed fp16 scale); everything the ignore list names (self_attn,
    shared_experts, dense MLP, lm_head, vision) in bf16. The whole model then lands within 0.1% of the
    1,560,860,324,864 bytes on disk (find_string id 71159453588)."""
    spec = _spec()
    fmt = workload(spec, 4096).weights
    assert fmt.role_bytes("experts") == 0.5 + 1 / 32
    assert fmt.role_bytes("attention") == fmt.role_bytes("shared_experts") == 2
    assert abs(weights_bytes(spec, fmt, 1) / 1_560_860_324_864 - 1) < 0.001


def test_latent_projections_are_replicated_on_every_rank() -> None:
    """routed_expert_down_proj / up_proj are ReplicatedLinear: at TP=8 each GPU holds all 92 x 2 x
    7168 x 3584 of them (bf16), not an eighth."""
    spec = _spec()
    fmt = workload(spec, 4096).weights
    latent = 92 * 2 * H * 3584
    # the same counts with the projections treated as sharded (latent_size 0 after parsing): each GPU
    # then holds 1/8 of them, 7/8 x latent x 2 B less
    assert spec.moe is not None
    sliced = replace(spec, moe=replace(spec.moe, latent_size=0))
    assert weights_bytes(spec, fmt, 8) - weights_bytes(sliced, fmt, 8) == pytest.approx(latent * 2 * 7 / 8)


def test_activations_hold_the_attention_residual_block_stack() -> None:
    """block_residual: max_num_batched_tokens x cdiv(93, 12) = 8 blocks x 7168 x 2 B."""
    spec = _spec()
    limits = SchedulerLimits(max_num_seqs=256, max_num_batched_tokens=8192)
    plain = replace(spec, attn_res_block_size=0)
    assert activation_bytes(spec, limits) - activation_bytes(plain, limits) == 8192 * 8 * H * 2


def test_fit_answers_and_says_where_the_sizing_is_from() -> None:
    result = cli("fit", "Kimi-K3", "--gpu", "H200", "--ctx", "32k", "--json")
    assert result.code in (0, 1), result.stderr
    memory = json.loads(result.stdout)["memory"]
    assert memory["kv_cache_bytes_per_token"] == 27_648
    spec = catalog_spec("Kimi-K3")
    assert spec.params.total == CONFIG_DERIVED
    notes = vllm.model_notes(spec, workload(spec, 32768))
    assert any("vLLM serves it from 0.27.0" in note for note in notes)


@pytest.mark.parametrize(
    ("engine", "before", "first"), [("vllm", "0.26.0", "0.27.0"), ("sglang", "0.5.16", "0.5.17")]
)
def test_kimi_k3_is_gated_by_its_own_first_release(engine: str, before: str, first: str) -> None:
    """Kimi-K3's text model is a kimi_linear decoder, but engines registered KimiK3ForConditionalGeneration
    much later than Kimi-Linear (vLLM registry.py from the 0.27.0 wheel, not 0.26.0; SGLang
    models/kimi_k3.py EntryClass from 0.5.17, not 0.5.16): its own key in family_support."""
    old = cli("fit", "Kimi-K3", "--gpu", "B200", "--engine", engine, "--engine-version", before)
    assert old.code == 2 and old.stdout == "" and f"--engine-version {first} or later" in old.stderr
    new = cli("fit", "Kimi-K3", "--gpu", "B200", "--engine", engine, "--engine-version", first)
    assert new.code in (0, 1), new.stderr
