"""Kimi-K3 as each vLLM release allocates it, 0.27.0 (the first that registers it) to 0.33.0.

Read out of the PyPI wheels with `python bench/release_sources.py read vllm VERSION PATH` (file sizes in
bytes; "=" the same file as the release before):

| vllm/models/kimi_k3/...  | 0.27.0 | 0.27.1 | 0.28.0 | 0.29.0 | 0.30.0 | 0.31.0 | 0.32.0 | 0.33.0 |
| nvidia/model.py          | 78,340 | =      | 85,353 | 87,313 | 88,517 | 87,120 | 87,629 | 81,007 |
| nvidia/mla.py            | 32,175 | =      | 43,735 | 46,583 | 46,510 | 46,048 | 46,657 | 46,941 |
| nvidia/kda.py            | 29,501 | =      | 31,425 | 40,195 | 52,533 | 49,536 | 53,895 | 59,767 |
| nvidia/kda_metadata.py   | 19,391 | =      | =      | 29,356 | 32,335 | 31,316 | 30,715 | 30,765 |
| common/mtp.py            | 2,639  | =      | =      | =      | =      | =      | =      | =      |
| (vllm/transformers_utils/) configs/kimi_k3.py: 5,311 in all, other bytes from 0.31.0*  |

(* the same size.) What each release builds for the released config, and how it compares
with what gpusize computes:

- weights (nvidia/model.py, the module attributes of `KimiMoE`, `KimiDecoderLayer`, `KimiLinearModel`,
  `KimiK3ForConditionalGeneration`): the same list in every release (gate_up/down, GateLinear router,
  shared experts, routed_expert_down_proj / up_proj ReplicatedLinear, routed_expert_norm, the four
  attention-residual tensors per layer, output_attn_res_norm / _proj, MoonViT3d tower and
  KimiK25MultiModalProjector); 0.33.0 adds `DeepGemmMegaMoEExperts`, built only under
  `--moe-backend deep_gemm_mega_moe` (the same experts in another kernel's layout). The MLA output
  gate is a ColumnParallelLinear `g_proj` in 0.27.0-0.28.0 and shard 2 of `fused_qkv_a_g_proj`
  (linear.py `KimiK3MergedQKVGateLinear`: "the latent shards stay replicated ... while the gate
  shard is tensor-parallel") from 0.29.0: the same bytes per GPU. KDA: in_proj_qkvgfab (q, k, v, g
  of P + f_a replicated + b), f_b_proj, conv1d, A_log, o_norm, o_proj in every release. Not counted
  (under 0.01% of a GPU's weights): the zero rows padding each rank's in_proj_qkvgfab to 16 (8 rows at
  TP4, 4 at TP8), the conv weights kept in fp32, and the fp32 `decode_conv1d_weight` copy.
- MLA KV (nvidia/mla.py `get_kv_cache_spec`): MLAAttentionSpec head_size kv_lora_rank +
  qk_rope_head_dim = 576, one head on every rank, cache dtype `cache_config.cache_dtype` ("auto" in
  vllm/config/cache.py of every release: the model dtype, bf16): 1,152 B per layer per token at every
  TP. fp8_ds_mla (656 B, `state_content_bytes` from 0.28.0) only when asked for.
- KDA state (model_executor/layers/mamba/mamba_utils.py `kda_state_shape`, `kda_state_dtype`): one
  packed conv window (3 P / tp, kernel - 1) in the conv dtype + (heads / tp, 128, 128) fp32 in every
  release; from 0.30.0 `--mamba-ssm-cache-dtype float32|bfloat16` chooses the recurrent dtype ("auto"
  stays fp32; gpusize offers no such flag, so its default is the release's). 0.29.0-0.32.0 append a
  RecoverSSM record only with `cache_config.use_kda_recoverssm` (init=False, speculative decoding).
- hybrid pages, the two rules gpusize had otherwise: (1) platforms/interface.py
  `_align_hybrid_block_size`: from 0.27.0 an MLA hybrid's block is a multiple of 128
  (`hybrid.MLA_HYBRID_ALIGNMENT`), not of the MLA kernel's 64; (2) blocks per request in a state
  group (v1/kv_cache_interface.py `MambaSpec.max_memory_usage_bytes`): 1 in 0.27.x (prefix caching
  off for hybrids, engine/arg_utils.py), 2 from 0.28.0 (prefix caching on, mamba_cache_mode
  "align"), 3 from 0.29.0 where KimiK3DeltaAttention's prefill backend is FlashKDA (compute
  capability 9, 10 or 12: `num_prefill_checkpoint_blocks`).
- attention residuals (nvidia/model.py `KimiLinearModel.forward`): `block_residual =
  hidden_states.new_empty(tokens, num_attn_res_blocks, hidden)`, num_attn_res_blocks =
  cdiv(end_layer, attn_res_block_size), in every release.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from gpusize.core import kvcache
from gpusize.core.engines import engine
from gpusize.core.engines.vllm import hybrid
from gpusize.core.engines.vllm.overhead import activation_bytes
from gpusize.core.engines.vllm.scheduler import SchedulerLimits
from gpusize.core.params import ATTN_RES_LAYER_VECTORS, ATTN_RES_MODEL_VECTORS, count_params
from gpusize.core.releases import VLLM
from tests.helpers import catalog_spec, find_gpu, workload

H = 7168
#: Config-derived total (tests/core/test_family_kimi_k3.py), the same in every release read.
PARAMS = 2_779_931_834_976
#: The MLA latent, 512 + 64, in bf16.
MLA_BYTES = 576 * 2
#: One KDA layer's state on one GPU at TP1: conv 3 x 3 x 12,288 x 2 B + recurrent 96 x 128 x 128 x 4 B.
KDA_PAGE = 3 * 3 * 12_288 * 2 + 96 * 128 * 128 * 4
#: The releases whose vllm/models/kimi_k3 was read; a newer one (0.34.0) is modelled with the newest
#: read's code until its own is read.
FIRST, NEWEST = "0.27.0", "0.33.0"


def _k3_layout(version: str, tp: int) -> kvcache.KvLayout:
    spec = catalog_spec("Kimi-K3")
    layout = hybrid.with_state_pages(
        spec, kvcache.kv_layout(spec, 2.0, tp), workload(spec, 32768, version=version), tp
    )
    assert layout is not None
    return layout


def test_newest_read_is_0_33_0() -> None:
    """The table above stops at the newest release whose Kimi-K3 code was read (0.33.0); 0.34.0, the
    newest gpusize models, keeps its figures (its extensible KV cache and 64-token default blocks
    apart: core/engines/vllm/extensible.py) until its own code is read."""
    assert NEWEST == "0.33.0" and VLLM.newest.text == "0.34.0"
    newer = workload(catalog_spec("Kimi-K3"), 32768, version="0.34.0")
    older = workload(catalog_spec("Kimi-K3"), 32768, version=NEWEST)
    assert newer.kv_bytes == older.kv_bytes


@pytest.mark.parametrize("version", [FIRST, NEWEST])
@pytest.mark.parametrize("tp", [1, 2, 4, 8])
def test_figures_pinned_at_first_and_newest_release(version: str, tp: int) -> None:
    spec = catalog_spec("Kimi-K3")
    work = workload(spec, 32768, version=version)
    assert spec.params.total == PARAMS
    layer = spec.attention_layers[0]
    assert (
        kvcache.kv_bytes_per_token_per_layer(spec, work.kv_bytes, tp, layer.num_key_value_heads, layer)
        == 1152
    )
    assert kvcache.kv_cache_bytes_per_token(spec, work.kv_bytes, tp) == 24 * MLA_BYTES == 27_648
    conv, ssm = hybrid.state_dtypes(spec, work)
    assert (conv, ssm) == ("bf16", "bf16")  # the recurrent part stays fp32 regardless (kimi_delta)
    assert hybrid.mamba_page_bytes(spec, tp, conv, ssm) == KDA_PAGE // tp
    limits = SchedulerLimits(max_num_seqs=256, max_num_batched_tokens=8192)
    plain = replace(spec, attn_res_block_size=0)
    assert activation_bytes(spec, limits, tp) - activation_bytes(plain, limits, tp) == 8192 * 8 * H * 2
    vectors = 93 * ATTN_RES_LAYER_VECTORS + ATTN_RES_MODEL_VECTORS
    assert count_params(spec).small - count_params(plain).small == H * vectors


@pytest.mark.parametrize(
    ("tp", "block", "before"),
    # 128 x cdiv(page, 128 x 1,152) against 64 x cdiv(page, 64 x 1,152): TP1 6,512,640 / 147,456 =
    # 44.2 -> 45 blocks of 128 = 5,760 (64 x 89 = 5,696 before); TP2 22.1 -> 23 = 2,944 (2,880); TP4
    # 11.04 -> 12 = 1,536 (1,472); TP8 5.5 -> 6 = 768 (64 x 12 = 768: the same).
    [(1, 5760, 5696), (2, 2944, 2880), (4, 1536, 1472), (8, 768, 768)],
)
@pytest.mark.parametrize("version", [FIRST, NEWEST])
def test_mla_hybrid_block_is_a_multiple_of_128(version: str, tp: int, block: int, before: int) -> None:
    """Before: gpusize raised the block by the MLA kernel's 64 tokens (5,696 at TP1): vLLM 0.27.0 and
    later make it a multiple of 128 (`_align_hybrid_block_size`), so the padded state page is
    5,760 x 1,152 = 6,635,520 B at TP1."""
    layout = _k3_layout(version, tp)
    assert layout.block_size == block
    assert layout.page_bytes == block * MLA_BYTES >= KDA_PAGE // tp
    assert before == 64 * -(-(KDA_PAGE // tp) // (64 * MLA_BYTES))


@pytest.mark.parametrize(("version", "block"), [("0.26.0", 960), ("0.27.0", 1024)])
def test_kimi_linear_alignment_changes_at_0_27_0(version: str, block: int) -> None:
    """Kimi-Linear (MLA + KDA, served before 0.27.0) at TP2: state page 1,085,440 B, MLA 1,152 B per
    token: 64 x cdiv(1,085,440, 73,728) = 960 in 0.26.0, 128 x cdiv(1,085,440, 147,456) = 1,024 from
    0.27.0."""
    spec = catalog_spec("Kimi-Linear-48B-A3B-Instruct")
    layout = hybrid.with_state_pages(
        spec, kvcache.kv_layout(spec, 2.0, 2), workload(spec, 32768, version=version), 2
    )
    assert layout is not None and layout.block_size == block


#: Blocks per request per state group: prefix caching off for hybrids up to 0.27.1 (one block), on
#: from 0.28.0 ("align": two), plus FlashKDA's prefill checkpoint block from 0.29.0 on compute
#: capability 9, 10 or 12 (H200 9.0; the A100's 8.0 takes the Triton prefill, no checkpoint).
STATE_BLOCKS = [
    ("0.27.0", "H200", 1),
    ("0.27.1", "H200", 1),
    ("0.28.0", "H200", 2),
    ("0.29.0", "H200", 3),
    ("0.29.0", "A100-SXM", 2),
    ("0.33.0", "H200", 3),
    ("0.33.0", "B200", 3),
    ("0.33.0", "A100-SXM", 2),
]


@pytest.mark.parametrize(("version", "gpu", "held"), STATE_BLOCKS)
@pytest.mark.parametrize(("tp", "block"), [(1, 5760), (2, 2944), (4, 1536), (8, 768)])
def test_state_blocks_per_request_follow_the_release(
    version: str, gpu: str, held: int, tp: int, block: int
) -> None:
    """Before: one state block per request in every release. 24 MLA layers make one full group of 24
    and the 69 KDA layers three state groups; a 32k request at TP8 in 0.33.0 on an H200 holds
    cdiv(32,768, 768) = 43 full blocks + 3 x 3 state blocks = 52 (46 in 0.27.0)."""
    spec = catalog_spec("Kimi-K3")
    work = workload(spec, 32768, version=version)
    assert hybrid.state_blocks(spec, work, find_gpu(gpu)) == held
    layout = hybrid.with_state_pages(
        spec, kvcache.kv_layout(spec, 2.0, tp, 1.5), work, tp, 1.5, find_gpu(gpu)
    )
    assert layout is not None and layout.block_size == block and layout.group_size == 24
    assert [g.kind for g in layout.groups] == ["full", "state", "state", "state"]
    assert kvcache.blocks_per_request(layout, 32768, 8192) == -(-32768 // block) + 3 * held


@pytest.mark.parametrize(("version", "held"), [("0.27.1", 1), ("0.28.0", 2), ("0.33.0", 2)])
def test_kimi_linear_takes_align_mode_without_the_kda_checkpoint(version: str, held: int) -> None:
    """Kimi-Linear's KDA layer (KimiLinearGatedDeltaNetAttention, no full-rank gate) exports no
    prefill checkpoint: two blocks from 0.28.0 on an H200, not three."""
    spec = catalog_spec("Kimi-Linear-48B-A3B-Instruct")
    assert hybrid.state_blocks(spec, workload(spec, 32768, version=version), find_gpu("H200")) == held


def test_fit_holds_fewer_k3_requests_from_0_28_0() -> None:
    """More blocks per request: Kimi-K3 on 8 x B300 (compute capability 10.3) at 32k holds 50.6
    requests in 0.27.0 (46 blocks each), 41.8 in 0.33.0 (52 blocks each; the pool is smaller too)."""
    spec = catalog_spec("Kimi-K3")
    b300 = find_gpu("B300")
    old = engine("vllm").evaluate(spec, b300, 8, workload(spec, 32768, version="0.27.0"))
    new = engine("vllm").evaluate(spec, b300, 8, workload(spec, 32768, version="0.33.0"))
    assert old.max_concurrency is not None and new.max_concurrency is not None
    assert new.max_concurrency < old.max_concurrency
