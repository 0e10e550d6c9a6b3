"""The 2026 recurrent hybrids (Qwen3.5 / Qwen3.6, Nemotron-3, Kimi-Linear): their layers from the
config alone, and their state and KV pages as vLLM 0.19.0 allocates them.

Engine code cited (vLLM v0.19.0, the release's wheel): vllm/model_executor/layers/mamba/mamba_utils.py
(`MambaStateShapeCalculator`, `MambaStateDtypeCalculator`), vllm/model_executor/layers/kda.py,
vllm/model_executor/models/config.py (`HybridAttentionMambaModelConfig`, `Qwen3_5ForConditional
GenerationConfig`, `NemotronHForCausalLMConfig`), vllm/v1/core/kv_cache_utils.py
(`_get_kv_cache_groups_uniform_page_size`, `get_kv_cache_config_from_groups`,
`_report_kv_cache_config`) and vllm/v1/kv_cache_interface.py (`MambaSpec`).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from gpusize.core import kvcache
from gpusize.core.engines import vllm
from gpusize.core.engines.vllm import hybrid
from gpusize.core.parse import parse_config
from gpusize.core.spec import ModelSpec
from gpusize.errors import ConfigError
from gpusize.sources.catalog import find_gpu
from tests.conftest import ROOT
from tests.helpers import catalog_spec, workload

GIB = 1 << 30
CONFIGS = ROOT / "tests" / "data" / "reference" / "configs"


def _reference(name: str) -> dict[str, Any]:
    config: dict[str, Any] = json.loads((CONFIGS / f"{name}.json").read_text())["config"]
    return config


def _spec(name: str) -> ModelSpec:
    return parse_config(_reference(name))


def _layout(spec: ModelSpec, tp: int, ctx: int = 32768) -> kvcache.KvLayout:
    work = workload(spec, ctx, version="0.19.0")
    layout = hybrid.with_state_pages(spec, kvcache.kv_layout(spec, work.kv_bytes, tp), work, tp)
    assert layout is not None
    return layout


# --------------------------------------------------------------------------- layers from the config


def test_qwen3_5_layers_are_gated_attention_and_gated_deltanet() -> None:
    """Qwen3.5-27B text_config: 64 layer_types, every 4th full_attention (16), attn_output_gate."""
    spec = _spec("Qwen__Qwen3.5-27B")
    assert [layer.mixer for layer in spec.layers[:4]] == ["linear_attention"] * 3 + ["attention"]
    assert len(spec.attention_layers) == 16 and spec.attention_output_gate
    assert spec.ssm_state_dtype == "fp32"  # text_config.mamba_ssm_dtype float32
    assert spec.num_nextn_predict_layers == 1  # mtp_num_hidden_layers


def test_qwen3_5_vision_tower_is_the_qwen3_vl_encoder() -> None:
    """Qwen3.5-35B-A3B vision_config (h 1152, i 4304, depth 27, patch 16, 2 frames, 2304 positions,
    merge 2, out 2048, no deepstack), transformers Qwen3_5VisionModel = Qwen3-VL's encoder:
    embed 3*2*16*16*1152 + 1152 + 2304*1152 = 4,424,832; block (3*1152^2 + 3*1152) + (1152^2 + 1152)
    + 4*1152 + (1152*4304 + 4304) + (4304*1152 + 1152) = 15,239,504, x 27 = 411,466,608; merger
    2*1152 + (4608^2 + 4608) + (4608*2048 + 2048) = 30,679,808. Total 446,571,248."""
    spec = _spec("Qwen__Qwen3.5-35B-A3B")
    assert spec.vision is not None and spec.vision.exact
    assert spec.vision.params == 446_571_248


def test_nemotron_moe_blocks_are_read_from_the_pattern() -> None:
    """Nemotron-3 Nano 30B-A3B: 'E' blocks are MoE (23 of 52), M Mamba-2 (23), * attention (6).
    One E layer (vLLM nemotron_h.py NemotronHMoE): 128 relu2 experts up + down 2 x 2688 x 1856,
    one relu2 shared expert 2 x 2688 x 3712, router 2688 x 128 + a score-correction bias of 128."""
    spec = _spec("nvidia__NVIDIA-Nemotron-3-Nano-30B-A3B-BF16")
    pattern = "".join({"mamba": "M", "attention": "*", "none": "E"}[layer.mixer] for layer in spec.layers)
    assert pattern == "MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME"
    from gpusize.core.params import layer_params

    moe = layer_params(spec, next(layer for layer in spec.layers if layer.ffn == "moe"))
    assert moe.experts == 128 * 2 * 2688 * 1856
    assert moe.shared_experts == 2 * 2688 * 3712
    assert moe.router == 2688 * 128 + 128


def test_nemotron_layers_block_type_without_a_layer_count() -> None:
    """Nemotron-3 Ultra lists 108 blocks in layers_block_type and has no num_hidden_layers."""
    config = json.loads(
        (
            ROOT
            / "tests"
            / "data"
            / "reference"
            / "configs"
            / "nvidia__NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.json"
        ).read_text()
    )["config"]
    pattern = config.pop("hybrid_override_pattern")
    names = {"M": "mamba", "*": "attention", "E": "moe", "-": "mlp"}
    config["layers_block_type"] = [names[c] for c in pattern]
    del config["num_hidden_layers"]
    spec = parse_config(config)
    assert spec.num_hidden_layers == 52
    assert spec.params.total == _spec("nvidia__NVIDIA-Nemotron-3-Nano-30B-A3B-BF16").params.total


def test_nemotron_3_5_lightning_is_a_30b_model_not_102b() -> None:
    """Its config lists layers_block_type and no pattern: it was read as 52 attention + MoE layers
    (102B); the 23 Mamba, 23 MoE and 6 attention blocks of the Nano 30B-A3B give 31.6B."""
    spec = catalog_spec("NVIDIA-Nemotron-3.5-Lightning-30B-A3B")
    assert len(spec.attention_layers) == 6
    assert spec.params.total == _spec("nvidia__NVIDIA-Nemotron-3-Nano-30B-A3B-BF16").params.total
    assert 31.5e9 < spec.params.total < 31.7e9


def test_nemotron_latent_moe() -> None:
    """Nemotron-3 Super: moe_latent_size 1024: the 512 experts map 1024 -> 2688 -> 1024 (relu2, no
    gate), fc1/fc2_latent_proj 4096 <-> 1024 counted with the shared expert (2 x 4096 x 5376)."""
    spec = catalog_spec("Nemotron-3-Super")
    from gpusize.core.params import layer_params

    moe = layer_params(spec, next(layer for layer in spec.layers if layer.ffn == "moe"))
    assert moe.experts == 512 * 2 * 1024 * 2688
    assert moe.shared_experts == 2 * 4096 * 5376 + 2 * 4096 * 1024


def test_kimi_linear_layers_and_kda_params() -> None:
    """Kimi-Linear: kda_layers are 1-based (vLLM `is_kda_layer`: layer_idx + 1 in kda_layers); one
    KDA layer (vllm/model_executor/layers/kda.py), h 2304, 32 heads of 128 (P 4096), conv 4:
    q, k, v 3 x 2304 x 4096 + f_a, g_a 2 x 2304 x 128 + f_b, g_b 2 x 128 x 4096 + b 2304 x 32
    + o 4096 x 2304 = 39,460,864 linear; dt_bias 4096 + convs 3 x 4096 x 4 + A_log 32 + o_norm 128."""
    spec = _spec("moonshotai__Kimi-Linear-48B-A3B-Instruct")
    assert [layer.mixer for layer in spec.layers[:4]] == ["kimi_delta"] * 3 + ["attention"]
    assert spec.layers[-1].mixer == "attention" and len(spec.attention_layers) == 7
    from gpusize.core.kinds import mixer_kind

    layer = spec.layers[0]
    counts = mixer_kind(spec, layer).params(spec, layer)
    assert counts.attention == 39_460_864
    assert counts.small == 4096 + 3 * 4096 * 4 + 32 + 128
    assert 48e9 < spec.params.total < 50e9 and 2.9e9 < spec.params.active < 3.3e9


def test_best_effort_never_reads_a_hybrid_as_llama() -> None:
    """An unknown model_type with Mamba fields (Granite-4 hybrid style) names the field."""
    config = {
        "model_type": "some_hybrid",
        "hidden_size": 1024,
        "num_hidden_layers": 4,
        "num_attention_heads": 8,
        "vocab_size": 1000,
        "mamba_d_state": 128,
    }
    with pytest.raises(ConfigError, match="mamba_d_state"):
        parse_config(config, best_effort=True)
    with pytest.raises(ConfigError, match="linear_attention"):
        parse_config(
            config | {"mamba_d_state": None, "layer_types": ["linear_attention"] * 4}, best_effort=True
        )


# --------------------------------------------------------------------------- state and KV per GPU


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        # Gated DeltaNet, Qwen3.5-27B: conv (3, (2*16*128 + 48*128)/tp) bf16 + (48/tp, 128, 128) fp32
        # (mamba_ssm_dtype float32): TP1 3*10240*2 + 48*128*128*4 = 61,440 + 3,145,728.
        ("Qwen__Qwen3.5-27B", {1: 3_207_168, 2: 1_603_584, 4: 801_792, 8: 400_896}),
        # Mamba-2, Nemotron-3 Nano: conv (3, (64*64 + 2*8*128)/tp) bf16 + (64/tp, 64, 128) fp32
        # (mamba_ssm_cache_dtype float32): TP1 3*6144*2 + 64*64*128*4 = 36,864 + 2,097,152.
        ("nvidia__NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", {1: 2_134_016, 2: 1_067_008, 4: 533_504, 8: 266_752}),
        # Kimi Delta Attention: 3 convs (3, 4096/tp) bf16 + (32/tp, 128, 128) fp32 always:
        # TP1 3*3*4096*2 + 32*128*128*4 = 73,728 + 2,097,152.
        ("moonshotai__Kimi-Linear-48B-A3B-Instruct", {1: 2_170_880, 2: 1_085_440, 4: 542_720, 8: 271_360}),
    ],
)
def test_state_page_per_gpu(name: str, expected: dict[int, int]) -> None:
    spec = _spec(name)
    conv, ssm = hybrid.state_dtypes(spec, workload(spec, 4096, version="0.19.0"))
    assert {tp: hybrid.mamba_page_bytes(spec, tp, conv, ssm) for tp in expected} == expected


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        # GQA, 4 KV heads of 256, bf16: 2 x max(1, 4 // tp) x 256 x 2 per token and layer.
        ("Qwen__Qwen3.5-27B", {1: 4096, 2: 2048, 4: 1024, 8: 1024}),
        # GQA, 2 KV heads of 128: 2 x max(1, 2 // tp) x 128 x 2.
        ("nvidia__NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", {1: 1024, 2: 512, 4: 512, 8: 512}),
        # MLA latent 512 + rope 64, every rank holds it whole: 576 x 2.
        ("moonshotai__Kimi-Linear-48B-A3B-Instruct", {1: 1152, 2: 1152, 4: 1152, 8: 1152}),
    ],
)
def test_kv_per_token_per_layer_per_gpu(name: str, expected: dict[int, int]) -> None:
    spec = _spec(name)
    layer = spec.attention_layers[0]
    got = {
        tp: kvcache.kv_bytes_per_token_per_layer(spec, 2.0, tp, layer.num_key_value_heads, layer)
        for tp in expected
    }
    assert got == expected


def test_qwen3_5_27b_tp4_pool_matches_the_vllm_log() -> None:
    """engine_records vllm-lambo-4x3090-qwen35-27b (vLLM 0.19.0, TP=4, max_model_len 32768):
    'Available KV cache memory: 7.0 GiB', 'GPU KV cache size: 114,464 tokens', concurrency 12.98x.
    Attention page per token 1,024 B (1 KV head of 256, bf16); mamba page 801,792 B (above), so
    block = 16 x cdiv(801,792, 16 x 1,024) = 784 tokens, page 802,816 B (mamba padded up).
    Groups: 16 attention layers, 48 state layers -> group_size 16 (48 >= 1.5 x 16), 1 + 3 groups.
    Blocks: 7.0 GiB // 802,816 // 16 = 585; tokens 585 // 4 x 784 = 114,464. A request of 32,768
    tokens takes cdiv(32,768, 784) = 42 attention blocks + 3 state blocks = 45: 585 / 45 = 13.0."""
    layout = _layout(_spec("Qwen__Qwen3.5-27B"), 4)
    assert (layout.block_size, layout.page_bytes, layout.group_size, len(layout.groups)) == (
        784,
        802_816,
        16,
        4,
    )
    blocks = kvcache.pool_blocks(layout, int(7.0 * GIB))
    assert (blocks, kvcache.capacity_tokens(layout, blocks)) == (585, 114_464)
    assert kvcache.blocks_per_request(layout, 32768, 2048) == 45


def test_qwen3_6_35b_tp1_pool_matches_the_vllm_log() -> None:
    """engine_records vllm-gb10-dj-qwen36-35b-bf16 (vLLM 0.19.2, TP=1): 'Available KV cache memory:
    47.55 GiB', 'GPU KV cache size: 623,040 tokens'. Attention page per token 2 x 2 x 256 x 2 =
    2,048 B; mamba page 3 x 8,192 x 2 + 32 x 128 x 128 x 4 = 2,146,304 B; block 16 x cdiv(2,146,304,
    32,768) = 1,056, page 2,162,688 B; 10 attention + 30 state layers -> group_size 10, 4 groups;
    47.55 GiB // 2,162,688 // 10 = 2,360 blocks; 2,360 // 4 x 1,056 = 623,040 tokens."""
    layout = _layout(catalog_spec("Qwen3.6-35B-A3B"), 1, 131072)
    assert (layout.block_size, layout.page_bytes, layout.group_size, len(layout.groups)) == (
        1056,
        2_162_688,
        10,
        4,
    )
    blocks = kvcache.pool_blocks(layout, int(47.55 * GIB))
    assert kvcache.capacity_tokens(layout, blocks) == 623_040


def test_nemotron_state_groups_are_padded() -> None:
    """Nemotron-3 Nano: 6 attention and 23 Mamba layers -> group_size 6 (23 >= 1.5 x 6), the Mamba
    layers in cdiv(23, 6) = 4 groups (one padding layer), 5 groups in all; at TP=1 the attention
    page per token and layer is 1,024 B, so block = 16 x cdiv(2,134,016, 16 x 1,024) = 2,096 tokens."""
    layout = _layout(_spec("nvidia__NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"), 1)
    assert (layout.block_size, layout.group_size, len(layout.groups)) == (2096, 6, 5)
    assert layout.page_bytes == 2096 * 1024


def test_vllm_pool_holds_the_state_once_per_running_request() -> None:
    """The evaluated KV of one 32,768-token request on 4 GPUs is its 45 blocks x 16 layers x 802,816 B
    (attention and state pages alike), not the attention KV plus an unpadded state."""
    spec = _spec("Qwen__Qwen3.5-27B")
    work = workload(spec, 32768, version="0.19.0")
    got = vllm.evaluate(spec, find_gpu("H100"), 4, work)
    assert got.per_gpu is not None
    assert got.per_gpu.kv_cache_bytes == 45 * 16 * 802_816


def test_effective_block_size_is_the_raised_one() -> None:
    """The settings vLLM runs with name the 784-token block of Qwen3.5-27B at TP=4, not 16."""
    spec = _spec("Qwen__Qwen3.5-27B")
    work = workload(spec, 32768, version="0.19.0")
    assert vllm.effective_settings(spec, find_gpu("H100"), 4, work)["block_size"] == 784
    assert any("raises the attention block size" in note for note in vllm.model_notes(spec, work))
