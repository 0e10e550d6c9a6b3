"""Mistral 4 (Mistral-Small-4-119B-2603, model_type mistral4): a family of known kinds, MLA + MoE.

transformers' Mistral4 (modular_mistral4.py) is DeepSeek-V3's MLA attention and DeepseekV3MoE with a
softmax router that has no e_score_correction_bias, every layer MoE. vLLM serves it as DeepSeek-V3
(vllm/transformers_utils/configs/mistral.py `adapt_config_dict`: a MoE with shared experts becomes
model_type deepseek_v3, MistralLarge3ForCausalLM, topk_method None), so its KV cache is MLA's:
`ModelArchConfigConvertorBase.get_head_size` = kv_lora_rank + qk_rope_head_dim, one latent head per
layer on every rank (`ModelConfig.get_num_kv_heads` is 1 under use_mla); the model card's vLLM command
runs it with `--attention-backend FLASH_ATTN_MLA`."""

from __future__ import annotations

import pytest

from gpusize.core import kvcache
from gpusize.core.kinds import MIXERS, mixer_kind
from gpusize.core.params import count_params
from gpusize.core.parse import parse_config
from tests.conftest import REFERENCE, load_reference
from tests.helpers import catalog_counts

CONFIG = load_reference(REFERENCE / "configs" / "mistralai__Mistral-Small-4-119B-2603.json")["config"]

#: 36 layers x (kv_lora_rank 256 + qk_rope_head_dim 64) x 2 bytes (bf16).
KV_PER_TOKEN = 36 * (256 + 64) * 2


def test_standalone_mistral4_config_is_mla_and_moe() -> None:
    spec = parse_config(CONFIG)
    assert spec.family == "mistral4"
    assert all(mixer_kind(spec, layer) is MIXERS["mla"] for layer in spec.layers)
    assert spec.mla is not None and (spec.mla.q_lora_rank, spec.mla.kv_lora_rank) == (1024, 256)
    assert spec.moe is not None
    moe = spec.moe
    assert (moe.num_experts, moe.num_experts_per_tok, moe.shared_intermediate_size) == (128, 4, 2048)
    assert not moe.score_correction_bias  # Mistral4TopkRouter: weight only
    assert all(layer.ffn == "moe" for layer in spec.layers)  # first_k_dense_replace 0


def test_text_tower_linear_weights_are_the_checkpoints_fp8_count() -> None:
    """The FP8 checkpoint stores every linear weight of the 36 layers in F8_E4M3: 117,879,865,344."""
    counts = count_params(parse_config(CONFIG))
    assert counts.attention + counts.experts + counts.shared_experts == 117_879_865_344
    assert counts.total == 118_972_826_624


@pytest.mark.parametrize("tp", [1, 2, 4, 8])
def test_kv_per_token_is_the_latent_on_every_gpu(tp: int) -> None:
    spec = parse_config(CONFIG)
    assert kvcache.kv_cache_bytes_per_token(spec, 2.0, tp) == KV_PER_TOKEN == 23_040


@pytest.mark.parametrize("tp", [1, 2, 4, 8])
def test_catalog_entry_reads_its_text_config_as_mistral4(tp: int) -> None:
    spec, counts = catalog_counts("Mistral-Small-4-119B-2603")
    assert spec.family == "mistral4" and spec.vision is not None
    assert counts.total - counts.vision == 118_972_826_624
    assert kvcache.kv_cache_bytes_per_token(spec, 2.0, tp) == KV_PER_TOKEN


def test_pixtral_tower_and_mistral3_projector_are_exact() -> None:
    """Pixtral-24 (1024 wide, MLP 4096, 14 px patches) 403,305,472 + the Mistral3 projector (RMSNorm,
    2x2 patch merger 4096 -> 1024, linear_1 1024 -> 4096, linear_2 4096 -> 4096) 25,166,848; with the
    text tower the Hub total less its 19,008 FP8 scale elements."""
    spec, counts = catalog_counts("Mistral-Small-4-119B-2603")
    assert spec.vision is not None and spec.vision.exact
    assert counts.vision == 403_305_472 + 25_166_848
    assert counts.total == 119_401_317_952 - 19_008


def test_mistral_small_3_1_total_is_the_published_one() -> None:
    """The same Pixtral tower under a 5120-wide text tower: 24,011,361,280 (keras-hub's
    mistral_small_3.1_24b presets)."""
    _, counts = catalog_counts("Mistral-Small-3.1-24B-Instruct-2503")
    assert counts.total == 24_011_361_280
