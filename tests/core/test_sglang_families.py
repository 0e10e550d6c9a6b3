"""SGLang's KV bytes per token and state bytes per request for the 2026 families, worked by hand from
SGLang's code (the 0.5.23 wheel on PyPI, the newest release gpusize models; read with
bench/release_sources.py) and compared with what gpusize's SGLang engine computes:
`sglang_kv_bytes_per_token` (the cell the pool is divided by, core/engines/sglang_kv.py) and
`mamba_cache_per_req` (one request's state slot, core/engines/sglang_mamba.py), at TP 1, 2, 4, 8.

Code read (0.5.23):
- model_executor/pool_configurator.py `DefaultPoolConfigurator._compute_cell_size`: MLA cells are
  `calculate_mla_kv_cache_dim(...) x layers x kv_size` (no TP split: every rank holds the latent), plus
  `_compute_dsa_indexer_cell_size` for DSA models (index_head_dim + index_head_dim // 128 x 4, uint8);
  other models `get_num_kv_heads(attn_tp) x (head_dim + v_head_dim) x layers x kv_size`;
- configs/model_config.py `get_num_kv_heads`: max(1, total_num_kv_heads // tp);
- mem_cache/kv_cache_configurator.py `calculate_mla_kv_cache_dim`: kv_lora_rank + qk_rope_head_dim,
  or under fp8 with the scaled-layout kernels kv_lora_rank + kv_lora_rank // 128 x 4 + rope x 2 (rope
  in bf16, `DSATokenToKVPool.rope_storage_dtype`); the TRT-LLM and ROCm kernels take the raw row;
- arg_groups/overrides.py `_dsa_split_backend_resolution`: fp8 -> trtllm on compute capability >= 10,
  flashmla_kv on Hopper; GLM-5 fp8 on compute capability 12 -> flashinfer_sparse_mla;
- configs/mamba_utils.py `BaseLinearStateParams.mamba_cache_per_req` = (conv elements x conv itemsize
  + temporal elements x temporal itemsize) x layers; `Mamba2StateShape.create`: conv (divide(conv_dim,
  tp), K - 1) with conv_dim = intermediate + 2 x n_groups x state_size, temporal (divide(heads, tp),
  head_dim, state_size); `KimiLinearStateShape.create`: conv (K - 1, divide(H x d, tp) + 2 x divide(Hk x
  dk, tp)), temporal (divide(H, tp), d, d); `mamba2_state_dtype`: conv bfloat16, temporal float32 unless
  the config's mamba_ssm_dtype says otherwise (Kimi-Linear passes no config: float32);
- configs/qwen3_next.py (Qwen3.5's text config subclasses it) `mamba2_cache_params`: intermediate =
  linear_value_head_dim x linear_num_value_heads, n_groups = linear_num_key_heads, heads =
  linear_num_value_heads, head_dim = linear_value_head_dim, state_size = linear_key_head_dim;
  configs/nemotron_h.py: intermediate = mamba_num_heads x mamba_head_dim, n_groups, ssm_state_size;
  configs/kimi_linear.py: KimiLinearStateShape(num_heads, head_dim, short_conv_kernel_size).
"""

from __future__ import annotations

import pytest

from gpusize.core.engines import engine
from gpusize.core.engines.sglang_kv import sglang_kv_bytes_per_token
from gpusize.core.engines.sglang_mamba import mamba_cache_per_req, sglang_mamba_pool
from gpusize.core.reserves import total_bytes
from gpusize.sources.catalog import find_gpu
from tests.helpers import catalog_spec, workload

TPS = (1, 2, 4, 8)
GIB = 1 << 30

# --------------------------------------------------------------------------- DeepSeek-V3.2, GLM-5

#: Bytes of one token's row per DSA layer: the latent (576 elements) + the indexer key (132 uint8).
INDEXER = 128 + 128 // 128 * 4  # 132
BF16_ROW = (512 + 64) * 2 + INDEXER  # 1,284
SCALED_FP8_ROW = 512 + 512 // 128 * 4 + 64 * 2 + INDEXER  # 656 + 132 = 788 (FlashMLA, FlashInfer)
RAW_FP8_ROW = 512 + 64 + INDEXER  # 576 + 132 = 708 (TRT-LLM, ROCm)
DSA = [("DeepSeek-V3.2", 61), ("GLM-5", 78)]


def _cell(name: str, gpu: str, tp: int, kv_dtype: str = "auto", version: str | None = None) -> int:
    spec = catalog_spec(name)
    settings = {"version": version} if version else {}
    work = workload(spec, 4096, kv_dtype=kv_dtype, engine_name="sglang", **settings)
    return sglang_kv_bytes_per_token(spec, find_gpu(gpu), work, tp)


@pytest.mark.parametrize(("name", "layers"), DSA)
@pytest.mark.parametrize("tp", TPS)
def test_dsa_bf16_and_hopper_fp8_rows_on_every_rank(name: str, layers: int, tp: int) -> None:
    assert _cell(name, "H200-SXM", tp) == layers * BF16_ROW  # V3.2: 78,324; GLM-5: 100,152
    assert _cell(name, "B200", tp, "bf16") == layers * BF16_ROW
    assert _cell(name, "H200-SXM", tp, "fp8") == layers * SCALED_FP8_ROW  # flashmla_kv: 48,068; 61,464


@pytest.mark.parametrize(("name", "layers"), DSA)
@pytest.mark.parametrize("tp", TPS)
def test_dsa_fp8_on_blackwell_is_trtllms_raw_row(name: str, layers: int, tp: int) -> None:
    """fp8 on compute capability 10 takes the trtllm DSA backends, whose KV row is the raw 576 fp8
    bytes: V3.2 61 x 708 = 43,188 B per token, GLM-5 78 x 708 = 55,224 (gpusize said 788 per layer)."""
    assert _cell(name, "B200", tp, "fp8") == layers * RAW_FP8_ROW
    assert _cell(name, "MI300X", tp, "fp8") == layers * RAW_FP8_ROW  # ROCm: triton, the raw row


def test_dsa_fp8_on_sm12_glm_keeps_the_scaled_row_deepseek_the_raw() -> None:
    assert _cell("GLM-5", "RTX-PRO-6000", 1, "fp8") == 78 * SCALED_FP8_ROW  # flashinfer_sparse_mla
    assert _cell("DeepSeek-V3.2", "RTX-PRO-6000", 1, "fp8") == 61 * RAW_FP8_ROW  # trtllm


def test_dsa_fp8_before_the_trtllm_default_is_the_scaled_row() -> None:
    """SGLang 0.5.4's server_args.py sets flashmla_kv for fp8 on every GPU (the scaled row)."""
    assert _cell("DeepSeek-V3.2", "B200", 1, "fp8", "0.5.4.post1") == 61 * SCALED_FP8_ROW


@pytest.mark.parametrize("tp", TPS)
def test_glm52_shared_indexer_layers_keep_no_index_key(tp: int) -> None:
    """GLM-5.2: 57 of 78 layers are `indexer_types` "shared" (`dsa_layer_skips_topk`); on a GPU without
    HiSparse SGLang elides their index keys (`_should_elide_dsa_index_k`, a 0-row buffer;
    `_compute_dsa_indexer_cell_size` counts the 21 others): 78 x 1,152 + 21 x 132 = 92,628 B per token
    in bf16, 78 x 656 + 21 x 132 = 53,940 in fp8 on Hopper, 78 x 576 + 21 x 132 = 47,700 on Blackwell."""
    assert _cell("GLM-5.2", "H200-SXM", tp) == 78 * 1152 + 21 * INDEXER == 92_628
    assert _cell("GLM-5.2", "H200-SXM", tp, "fp8") == 78 * 656 + 21 * INDEXER == 53_940
    assert _cell("GLM-5.2", "B200", tp, "fp8") == 78 * 576 + 21 * INDEXER == 47_700


def test_sglang_engine_divides_the_pool_by_the_raw_row_on_blackwell() -> None:
    spec = catalog_spec("DeepSeek-V3.2")
    work = workload(spec, 4096, kv_dtype="fp8", engine_name="sglang")
    got = engine("sglang").evaluate(spec, find_gpu("B200"), 8, work)
    g = got.per_gpu
    assert g is not None
    pool = g.usable_bytes - g.weights_bytes - total_bytes(g.reserves)
    assert got.kv_cache_capacity_tokens == pool // (61 * RAW_FP8_ROW)


# --------------------------------------------------------------------------- Qwen3.5 (Gated DeltaNet)


def _gdn_state(layers: int, hk: int, hv: int, dk: int, dv: int, tp: int, kernel: int = 4) -> int:
    conv_dim = dv * hv + 2 * hk * dk  # Mamba2StateShape.create: intermediate + 2 x n_groups x state
    return layers * (conv_dim // tp * (kernel - 1) * 2 + hv // tp * dv * dk * 4)


@pytest.mark.parametrize("tp", TPS)
def test_qwen35_state_and_kv(tp: int) -> None:
    """Qwen3.5-27B: 48 Gated DeltaNet layers (16 key heads, 48 value heads, 128 x 128), conv 10,240
    channels: 48 x (3 x 10,240 x 2 + 48 x 128 x 128 x 4) = 153,944,064 B per request at TP 1; 16 full
    attention layers of 4 KV heads x 256: 16 x 2 x max(1, 4 // tp) x 256 x 2 = 65,536 B per token at TP 1.
    Qwen3.5-397B-A17B: 45 layers, 64 value heads: 192,061,440 B; 15 x 2 x max(1, 2 // tp) x 256 x 2."""
    small, big = catalog_spec("Qwen3.5-27B"), catalog_spec("Qwen3.5-397B-A17B")
    assert mamba_cache_per_req(small, tp) == _gdn_state(48, 16, 48, 128, 128, tp)
    assert mamba_cache_per_req(big, tp) == _gdn_state(45, 16, 64, 128, 128, tp)
    assert _gdn_state(48, 16, 48, 128, 128, 1) == 153_944_064
    assert _cell("Qwen3.5-27B", "H200-SXM", tp) == 16 * 2 * max(1, 4 // tp) * 256 * 2
    assert _cell("Qwen3.5-397B-A17B", "H200-SXM", tp) == 15 * 2 * max(1, 2 // tp) * 256 * 2


def test_state_pool_bytes_are_sglangs_slots_plus_the_padding_slot() -> None:
    """0.5.23 `_handle_max_mamba_cache`: K = int((budget - per_req) // per_req), the pool (K + 1) x
    per_req (the +1 padding slot), budget = rest x 0.9 / 1.9: the pool's bytes are floor(budget /
    per_req) x per_req, what gpusize reserves."""
    spec = catalog_spec("Qwen3.5-27B")
    per_req = _gdn_state(48, 16, 48, 128, 128, 2)
    rest = 40 * GIB
    budget = rest * 0.9 / 1.9
    slots = int((budget - per_req) // per_req)
    (pool,) = sglang_mamba_pool(spec, 2, rest)
    assert pool.bytes == (slots + 1) * per_req


# --------------------------------------------------------------------------- Kimi-Linear (KDA + MLA)


@pytest.mark.parametrize("tp", TPS)
def test_kimi_linear_state_and_latent(tp: int) -> None:
    """20 KDA layers, 32 heads of 128, kernel 4: conv (3, 4096 / tp + 2 x 4096 / tp) bf16 + (32 / tp,
    128, 128) float32 = 73,728 + 2,097,152 = 2,170,880 B per layer at TP 1, 43,417,600 B per request;
    7 MLA layers of 576 bf16 elements: 8,064 B per token on every rank."""
    spec = catalog_spec("Kimi-Linear-48B-A3B-Instruct")
    per_layer = 3 * (4096 // tp + 2 * (4096 // tp)) * 2 + 32 // tp * 128 * 128 * 4
    assert mamba_cache_per_req(spec, tp) == 20 * per_layer
    assert 20 * (3 * 12288 * 2 + 32 * 128 * 128 * 4) == 43_417_600
    assert _cell("Kimi-Linear-48B-A3B-Instruct", "H200-SXM", tp) == 7 * 576 * 2


# --------------------------------------------------------------------------- Nemotron-3 (Mamba-2)


@pytest.mark.parametrize("tp", TPS)
def test_nemotron3_state_and_kv(tp: int) -> None:
    """Nano: 23 Mamba-2 layers, 64 heads of 64, 8 groups, state 128: conv_dim 4096 + 2 x 8 x 128 = 6,144;
    23 x (3 x 6,144 x 2 + 64 x 64 x 128 x 4) = 49,082,368 B at TP 1. Super: 40 layers, 128 heads:
    conv_dim 10,240; 40 x (61,440 + 4,194,304) = 170,229,760 B. Attention: 2 KV heads of 128,
    6 (Nano) and 8 (Super) layers: n x 2 x max(1, 2 // tp) x 128 x 2."""
    nano, sup = "NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", "NVIDIA-Nemotron-3-Super-120B-A12B"

    def mamba2(layers: int, heads: int) -> int:
        conv_dim = heads * 64 + 2 * 8 * 128
        return layers * (conv_dim // tp * 3 * 2 + heads // tp * 64 * 128 * 4)

    assert mamba_cache_per_req(catalog_spec(nano), tp) == mamba2(23, 64)
    assert mamba_cache_per_req(catalog_spec(sup), tp) == mamba2(40, 128)
    assert (mamba2(23, 64), mamba2(40, 128)) == (49_082_368, 170_229_760) or tp != 1
    assert _cell(nano, "H200-SXM", tp) == 6 * 2 * max(1, 2 // tp) * 128 * 2
    assert _cell(sup, "H200-SXM", tp) == 8 * 2 * max(1, 2 // tp) * 128 * 2


def test_kimi_linear_state_follows_mamba_ssm_dtype() -> None:
    """SGLang sets SGLANG_MAMBA_SSM_DTYPE from --mamba-ssm-dtype (0.5.23 arg_groups/serving_hook.py),
    and KimiLinearCacheParams takes its dtype from that variable (`mamba2_state_dtype(None)`): with
    bfloat16 the KDA state is 20 x (73,728 + 32 x 128 x 128 x 2) = 22,446,080 B (gpusize kept float32)."""
    spec = catalog_spec("Kimi-Linear-48B-A3B-Instruct")
    work = workload(spec, 4096, engine_name="sglang", mamba_ssm_dtype="bfloat16")
    assert mamba_cache_per_req(spec, 1, work) == 20 * (3 * 12288 * 2 + 32 * 128 * 128 * 2) == 22_446_080
    assert mamba_cache_per_req(spec, 2, work) == 20 * (3 * 6144 * 2 + 16 * 128 * 128 * 2)


# --------------------------------------------------------------------------- Gemma 4 (SWA + full)


@pytest.mark.parametrize("tp", TPS)
def test_gemma4_full_and_sliding_rows(tp: int) -> None:
    """utils/hf_transformers/config.py `_apply_gemma4_attention_overrides`: SGLang's base shape is the
    full-attention one (head_dim 512, 4 KV heads from global_head_dim / num_global_key_value_heads,
    v_head_dim = head_dim: attention_k_eq_v still keeps a V row), swa_head_dim 256 with 16 KV heads;
    `HybridSWAPoolConfigurator`: full per token max(1, 4 // tp) x (512 + 512) x 2, SWA per token
    max(1, 16 // tp) x (256 + 256) x 2. gemma-4-31B-it: 10 full + 50 sliding layers = 901,120 B per
    token at TP 1. SGLang then sizes two pools (`_recompute_cell_size`: full tokens = available //
    (full + swa_full_tokens_ratio x swa)): tests/core/test_sglang_swa_pool.py."""
    full = 10 * max(1, 4 // tp) * 1024 * 2
    swa = 50 * max(1, 16 // tp) * 512 * 2
    assert _cell("gemma-4-31B-it", "H200-SXM", tp) == full + swa
    assert (full + swa == 901_120) or tp != 1
