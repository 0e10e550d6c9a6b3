"""DeepSeek Sparse Attention (DeepSeek-V3.2, GLM-5): MLA + a lightning indexer with its own key cache.

Worked examples from vLLM's code (vllm-project/vllm):
- vllm/model_executor/models/deepseek_v2.py `Indexer` (commit 002d6073): the indexer key cache is a
  DeepseekV32IndexerCache of head_dim = index_head_dim + index_head_dim // quant_block_size * 4 =
  128 + 128 // 128 * 4 = 132 uint8 per token and layer;
- vllm/v1/attention/backends/mla/flashmla_sparse.py (commit 008a0c31): "each token's KV cache is 656
  Bytes": 512 fp8 + 4 fp32 scales (16 B) + 64 bf16 rope (128 B);
- so DeepSeek-V3.2 (61 layers) keeps 61 x (656 + 132) = 48,068 B per token in fp8, and
  61 x (2 x 576 + 132) = 78,324 B in bf16; GLM-5 (78 layers) 78 x 788 = 61,464 B and
  78 x 1,284 = 100,152 B; every TP rank holds all of it (MLAAttentionSpec, one latent head).
"""

from __future__ import annotations

import json

import pytest

from gpusize.core import kvcache
from gpusize.core.engines import engine
from gpusize.core.kinds import mixer_kind
from gpusize.core.params import layer_params
from gpusize.core.parse import parse_config
from gpusize.errors import ConfigError
from gpusize.sources.catalog import find_gpu
from tests.conftest import REFERENCE, load_reference
from tests.helpers import catalog_spec, cli, workload

V32, GLM5 = "DeepSeek-V3.2", "GLM-5"
#: (model, layers, fp8 bytes per token, bf16 bytes per token), from the arithmetic above.
PER_TOKEN = [(V32, 61, 61 * (656 + 132), 61 * (1152 + 132)), (GLM5, 78, 78 * 788, 78 * 1284)]


@pytest.mark.parametrize(("name", "layers", "fp8", "bf16"), PER_TOKEN)
@pytest.mark.parametrize("tp", [1, 2, 4, 8])
def test_kv_per_token_is_latent_plus_indexer_key_on_every_rank(
    name: str, layers: int, fp8: int, bf16: int, tp: int
) -> None:
    spec = catalog_spec(name)
    assert len(spec.attention_layers) == layers
    assert kvcache.kv_cache_bytes_per_token(spec, 1.0, tp) == fp8
    assert kvcache.kv_cache_bytes_per_token(spec, 2.0, tp) == bf16


def test_indexer_parameters_close_the_hub_gap_to_deepseek_v3() -> None:
    """Hub totals: V3.2 685,396,921,376 - V3 684,531,386,000 = 62 indexers (61 layers + MTP) of
    1536 x 64 x 128 (wq_b) + 7168 x 128 (wk) + 7168 x 64 (weights_proj) + 2 x 128 (k_norm) = 13,959,424
    + 51,088 F32 scales of the FP8 wq_b and wk (62 x (12 x 64 + 56))."""
    v32, v3 = catalog_spec(V32), catalog_spec("DeepSeek-V3")
    per_layer = 1536 * 64 * 128 + 7168 * 128 + 7168 * 64 + 2 * 128
    assert per_layer == 13_959_424
    layer = v32.layers[-1]
    assert layer_params(v32, layer).total - layer_params(v3, v3.layers[-1]).total == per_layer
    assert (v32.params.total + v32.params.mtp) - (v3.params.total + v3.params.mtp) == 62 * per_layer
    assert 62 * per_layer + 62 * (12 * 64 + 56) == 685_396_921_376 - 684_531_386_000


def test_glm5_with_mtp_is_the_hub_total_exactly() -> None:
    data = load_reference(REFERENCE / "configs" / "zai-org__GLM-5.json")
    spec = catalog_spec(GLM5)
    assert spec.params.total + spec.params.mtp == data["true_params"] == 753_864_139_008


def test_indexer_weights_are_replicated_on_every_rank() -> None:
    spec = catalog_spec(V32)
    mla_only = 7168 * 1536 + 7168 * 576  # q_a_proj + kv_a_proj_with_mqa
    assert layer_params(spec, spec.layers[0]).replicated_attention == mla_only + 13_959_424 - 256


def test_glm5_variants_parse_to_the_same_model() -> None:
    """GLM-5.1 and the FP8 build change rope and context, not sizes."""
    base = catalog_spec(GLM5)
    for name in ("GLM-5.1", "GLM-5-FP8"):
        spec = catalog_spec(name)
        assert spec.params.total == base.params.total
        assert mixer_kind(spec, spec.layers[5]) is mixer_kind(base, base.layers[5])


GLM5_INDEXER = 2048 * 32 * 128 + 6144 * 128 + 6144 * 32 + 2 * 128  # wq_b, wk, weights_proj, k_norm


@pytest.mark.parametrize("tp", [1, 2, 4, 8])
def test_glm52_shared_indexer_layers_keep_no_indexer(tp: int) -> None:
    """GLM-5.2's indexer_types: 21 full layers (0, 1, 2, then every 4th from 6), 57 shared ones that
    reuse the previous full layer's top-k and own no indexer (IndexShare; the MTP layer owns one):
    KV = 78 x 656 + 21 x 132 = 53,940 B in fp8, and 57 indexers fewer than GLM-5."""
    spec, base = catalog_spec("GLM-5.2"), catalog_spec(GLM5)
    full = [i for i, layer in enumerate(spec.layers) if not layer.shares_indexer]
    assert full == [0, 1, 2, *range(6, 78, 4)] and len(full) == 21
    assert kvcache.kv_cache_bytes_per_token(spec, 1.0, tp) == 78 * 656 + 21 * 132 == 53_940
    assert kvcache.kv_cache_bytes_per_token(spec, 2.0, tp) == 78 * 1152 + 21 * 132
    assert GLM5_INDEXER == 9_371_904
    assert base.params.total - spec.params.total == 57 * GLM5_INDEXER
    assert spec.params.mtp == base.params.mtp


def test_glm52_needs_vllm_with_index_cache() -> None:
    refused = cli("fit", "GLM-5.2", "--gpu", "H200", "--ctx", "32k", "--engine-version", "0.22.1")
    assert refused.code == 2 and "the first vLLM release that does is 0.23.0" in refused.stderr
    assert cli("fit", "GLM-5", "--gpu", "H200", "--ctx", "32k", "--engine-version", "0.22.1").code in (0, 1)


@pytest.mark.parametrize(
    ("types", "words"),
    [
        (["full"] * 77, "must list 78"),
        (["shared"] + ["full"] * 77, "must start with a full"),
        (["full"] * 77 + ["half"], "each full or shared"),
    ],
    ids=["short", "shared-first", "unknown"],
)
def test_bad_indexer_types_name_the_field(types: list[str], words: str) -> None:
    config = load_reference(REFERENCE / "configs" / "zai-org__GLM-5.json")["config"]
    with pytest.raises(ConfigError, match=f"indexer_types.*{words}"):
        parse_config({**config, "indexer_types": types})


@pytest.mark.parametrize(("name", "first", "before"), [(V32, "0.11.0", "0.10.2"), (GLM5, "0.16.0", "0.15.1")])
def test_release_before_the_family_is_refused_naming_the_first(name: str, first: str, before: str) -> None:
    refused = cli("fit", name, "--gpu", "H200", "--ctx", "32k", "--engine-version", before)
    assert refused.code == 2 and refused.stdout == ""
    assert f"the first vLLM release that does is {first}" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1
    assert cli("fit", name, "--gpu", "H200", "--ctx", "32k", "--engine-version", first).code in (0, 1)


def test_auto_kv_is_fp8_ds_mla_in_0_11_0_and_bf16_after() -> None:
    """0.11.0's DeepseekV32ForCausalLM.verify_and_update_config turned `auto` into fp8_ds_mla; from
    0.11.1 only an fp8 request does (see core/engines/vllm/families.py)."""
    spec = catalog_spec(V32)
    assert workload(spec, 32768, version="0.11.0").kv_cache_dtype == "fp8"
    assert workload(spec, 32768, version="0.11.1").kv_cache_dtype == "bf16"
    assert workload(spec, 32768, version="0.11.0", kv_dtype="bf16").kv_cache_dtype == "bf16"
    assert workload(catalog_spec("DeepSeek-V3"), 32768, version="0.11.0").kv_cache_dtype == "bf16"


def test_pool_blocks_span_latent_and_indexer_pages() -> None:
    """One KV group of 64-token blocks; a block id costs every layer's latent and indexer pages."""
    spec = catalog_spec(V32)
    layout = kvcache.kv_layout(spec, 1.0, 8)
    assert layout is not None and layout.block_size == 64
    assert layout.bytes_per_block == 64 * 61 * 788


@pytest.mark.parametrize("name", [V32, GLM5, "GLM-5.1", "GLM-5.2", "GLM-5-FP8"])
def test_fit_answers_at_32k(name: str) -> None:
    result = cli("fit", name, "--ctx", "32k", "--json")
    assert result.code in (0, 1), result.stderr
    data = json.loads(result.stdout)
    assert data["memory"]["kv_cache_bytes_per_token"] in (48_068, 78_324, 61_464, 100_152, 53_940, 92_628)


def test_eight_h200_hold_v32_at_32k() -> None:
    spec = catalog_spec(V32)
    best = engine("vllm").evaluate(spec, find_gpu("H200"), 8, workload(spec, 32768))
    assert best.fits and best.per_gpu is not None
    # 32,768 tokens x 78,324 B (bf16 latent + indexer key) = 2.39 GiB, the same on each of the 8
    assert best.per_gpu.kv_cache_bytes == -(-32768 // 64) * 64 * 78_324
