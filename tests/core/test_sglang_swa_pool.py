"""SGLang's hybrid SWA pool (core/engines/sglang_swa.py), worked by hand from SGLang's code read in the
wheels on PyPI (bench/release_sources.py) and compared with the full-pool tokens gpusize's SGLang
engine reports (`kv_cache_capacity_tokens`), at TP 1, 2, 4, 8.

Per-token bytes of each layer group (F x n_full, S x n_swa; bf16, K and V rows):
- gemma-4-31B-it (utils/hf_transformers/config.py `_apply_gemma4_attention_overrides`; the full
  layers' shape is the base one, attention_k_eq_v still keeps a V row): 10 full layers of
  max(1, 4 // tp) x (512 + 512) x 2, 50 sliding of max(1, 16 // tp) x (256 + 256) x 2;
- gemma-4-26B-A4B-it: 5 full of max(1, 2 // tp) x 1024 x 2, 25 sliding of max(1, 8 // tp) x 512 x 2;
- gpt-oss-120b: 18 full and 18 sliding (window 128) of max(1, 8 // tp) x (64 + 64) x 2.

The split (r = swa_full_tokens_ratio = 0.8):
- 0.5.23 model_executor/pool_configurator.py `HybridSWAPoolConfigurator._recompute_cell_size`:
  cell = F n_full + r x S n_swa; `calculate_pool_sizes`: full = int(available // cell);
  `_solve_pool_sizes`: swa = int(full x r) (page size 1);
- 0.5.10 model_runner_kv_cache_mixin.py `_resolve_hybrid_swa_tokens`: capacity = available //
  (F n_full + S n_swa) (`profile_max_num_token`), full = int(capacity x (F n_full + S n_swa) /
  (F n_full + r S n_swa));
- 0.5.8 model_runner_kv_cache_mixin.py `set_num_tokens_hybrid_swa`: capacity = available // (F x L)
  (`get_cell_size_per_token`: every layer the base shape), full = int(capacity x L / (r n_swa +
  n_full));
- 0.4.9.post3 to 0.5.6 model_runner.py `set_num_token_hybrid` (any model with a sliding window
  but Llama-4 and the families server_args.py turns off): the one-shape formula of 0.5.8;
- gpt-oss before 0.5.8 (turned off from its first release, 0.5.0rc0, to 0.5.6; not listed in 0.5.7):
  one pool, every layer for the whole context.
"""

from __future__ import annotations

import pytest

from gpusize.core.engines import engine
from gpusize.core.kvcache import kv_cache_bytes_per_token
from gpusize.core.reserves import total_bytes
from gpusize.sources.catalog import find_gpu
from tests.helpers import catalog_spec, cli, workload

TPS = (1, 2, 4, 8)
R = 0.8


def _pool(
    name: str, tp: int, version: str | None = None, ctx: int = 8192, **settings: object
) -> tuple[int, int]:
    """(available bytes for the KV pool, full-pool tokens gpusize reports) on H200 at `tp`."""
    spec = catalog_spec(name)
    extra = {"version": version} if version else {}
    work = workload(spec, ctx, engine_name="sglang", **extra, **settings)  # type: ignore[arg-type]
    got = engine("sglang").evaluate(spec, find_gpu("H200-SXM"), tp, work)
    g = got.per_gpu
    assert g is not None and got.kv_cache_capacity_tokens is not None
    return g.usable_bytes - g.weights_bytes - total_bytes(g.reserves), got.kv_cache_capacity_tokens


def _gemma4_31b(tp: int) -> tuple[int, int]:
    return 10 * max(1, 4 // tp) * 1024 * 2, 50 * max(1, 16 // tp) * 512 * 2


def _gemma4_26b(tp: int) -> tuple[int, int]:
    return 5 * max(1, 2 // tp) * 1024 * 2, 25 * max(1, 8 // tp) * 512 * 2


def _gpt_oss_120b(tp: int) -> tuple[int, int]:
    row = max(1, 8 // tp) * 128 * 2
    return 18 * row, 18 * row


@pytest.mark.parametrize("tp", TPS)
@pytest.mark.parametrize(
    ("name", "groups"), [("gemma-4-31B-it", _gemma4_31b), ("gemma-4-26B-A4B-it", _gemma4_26b)]
)
def test_gemma4_full_pool_is_available_over_full_plus_ratio_sliding(
    name: str, groups: object, tp: int
) -> None:
    """gemma-4-31B-it at TP 1: F n_full = 81,920, S n_swa = 819,200, cell 81,920 + 0.8 x 819,200 =
    737,280 B per full-pool token (gpusize divided by 901,120 before); 26B-A4B: 20,480 + 0.8 x 204,800 =
    184,320 (was 225,280)."""
    full, swa = groups(tp)  # type: ignore[operator]
    pool, tokens = _pool(name, tp)
    assert tokens == int(pool // (full + R * swa))
    if tp == 1:
        assert (full + R * swa) in (737_280, 184_320)


@pytest.mark.parametrize("tp", TPS)
def test_gpt_oss_split_per_release(tp: int) -> None:
    full, swa = _gpt_oss_120b(tp)
    pool, tokens = _pool("gpt-oss-120b", tp)  # 0.5.23
    assert tokens == int(pool // (full + R * swa))
    pool, tokens = _pool("gpt-oss-120b", tp, "0.5.10")
    assert tokens == int(pool // (full + swa) * (full + swa) / (full + R * swa))
    pool, tokens = _pool("gpt-oss-120b", tp, "0.5.8")
    layer = full // 18
    assert tokens == int(pool // (layer * 36) * 36 / (R * 18 + 18))
    pool, tokens = _pool("gpt-oss-120b", tp, "0.5.7")
    assert tokens == pool // (full + swa)  # one pool before is_hybrid_swa_model


def test_gemma3_stays_in_one_pool() -> None:
    """server_args.py: "Disable hybrid SWA memory for Gemma3ForConditionalGeneration"."""
    spec = catalog_spec("gemma-3-27b-it")
    for version in ("0.5.1", None):
        pool, tokens = _pool("gemma-3-27b-it", 2, version)
        assert tokens == pool // kv_cache_bytes_per_token(spec, 2, 2)


@pytest.mark.parametrize("tp", TPS)
def test_gemma2_and_3_were_split_in_the_first_swa_releases(tp: int) -> None:
    """0.4.9.post3 model_runner.py `set_num_token_hybrid`: every model with a sliding window but
    Llama-4, total_tokens = max_total_num_tokens x L, full = int(total_tokens / (r n_swa + n_full)).
    gemma-3-27b-it: 62 layers (52 sliding, 10 full), 16 KV heads of 128, one layer max(1, 16 // tp) x
    256 x 2 B; gemma-2-27b-it: 46 layers (23 sliding), 16 KV heads of 128. Gemma 2 is kept whole from
    0.4.10.post2, Gemma 3 from 0.5.0rc0 (0.5.1)."""
    for name, layers, sliding, version, split in (
        ("gemma-3-27b-it", 62, 52, "0.4.9.post3", True),
        ("gemma-3-27b-it", 62, 52, "0.4.10.post2", True),
        ("gemma-2-27b-it", 46, 23, "0.4.9.post3", True),
        ("gemma-2-27b-it", 46, 23, "0.4.10.post2", False),
    ):
        layer = max(1, 16 // tp) * 128 * 2 * 2
        pool, tokens = _pool(name, tp, version, ctx=4096)
        one = pool // (layer * layers)
        assert tokens == (int(one * layers / (R * sliding + layers - sliding)) if split else one), name


@pytest.mark.parametrize("tp", (4, 8))  # its 309B FP8 weights need 4 H200
def test_mimo_v2_flash_is_split_from_0_5_7(tp: int) -> None:
    """0.5.7 `is_hybrid_model` returns 1 for MiMoV2FlashForCausalLM; the one-shape cell is the full
    layers' 4 KV heads x (192 + 128) x 2 B x 48 layers (9 full, 39 sliding); 0.5.23 divides by
    F n_full + r S n_swa with the sliding layers' 8 KV heads."""
    full_row = max(1, 4 // tp) * (192 + 128) * 2
    swa_row = max(1, 8 // tp) * (192 + 128) * 2
    pool, tokens = _pool("MiMo-V2-Flash", tp, "0.5.7")
    assert tokens == int(pool // (full_row * 48) * 48 / (R * 39 + 9))
    pool, tokens = _pool("MiMo-V2-Flash", tp)
    assert tokens == int(pool // (9 * full_row + R * 39 * swa_row))


def test_the_ratio_flag_moves_memory_between_the_pools() -> None:
    full, swa = _gemma4_31b(1)
    pool, tokens = _pool("gemma-4-31B-it", 1, swa_full_tokens_ratio=0.5)
    assert tokens == int(pool // (full + 0.5 * swa))


def test_a_sequence_holds_its_window_in_the_sliding_pool() -> None:
    """gpt-oss-120b at 100 tokens (below its 128-token window): each sequence takes 100 tokens of
    both pools, and the SWA pool is 0.8 of the full one, so it bounds the sequences."""
    spec = catalog_spec("gpt-oss-120b")
    work = workload(spec, 100, engine_name="sglang")
    got = engine("sglang").evaluate(spec, find_gpu("H200-SXM"), 2, work)
    assert got.kv_cache_capacity_tokens is not None and got.max_concurrency is not None
    assert got.max_concurrency == round(int(got.kv_cache_capacity_tokens * R) / 100, 2)
    long = engine("sglang").evaluate(
        spec, find_gpu("H200-SXM"), 2, workload(spec, 8192, engine_name="sglang")
    )
    assert long.max_concurrency == round(long.kv_cache_capacity_tokens / 8192, 2)  # type: ignore[operator]


def test_the_ratio_is_an_sglang_flag_from_0_4_9_post3() -> None:
    r = cli(
        "fit",
        "gpt-oss-20b",
        "--engine",
        "sglang",
        "--engine-version",
        "0.4.9",
        "--swa-full-tokens-ratio",
        "0.5",
    )
    assert r.code == 2 and "--swa-full-tokens-ratio does not exist in SGLang 0.4.9" in r.stderr
    bad = cli("fit", "gpt-oss-20b", "--engine", "sglang", "--swa-full-tokens-ratio", "1.5")
    assert bad.code == 2 and "--swa-full-tokens-ratio" in bad.stderr
    vllm = cli("fit", "gpt-oss-20b", "--swa-full-tokens-ratio", "0.5")
    assert vllm.code == 2 and "--engine sglang" in vllm.stderr


def test_gpt_oss_on_blackwell_keeps_one_pool_before_0_5_10() -> None:
    """0.5.8 / 0.5.9 server_args.py: trtllm_mha, gpt-oss's default on compute capability 10, turns the
    SWA pool off ("Disable hybrid SWA memory for GPT-OSS model with trtllm_mha attention backend")."""
    spec = catalog_spec("gpt-oss-120b")
    full, swa = _gpt_oss_120b(2)
    for version, split in (("0.5.9", False), ("0.5.10", True)):
        work = workload(spec, 8192, engine_name="sglang", version=version)
        got = engine("sglang").evaluate(spec, find_gpu("B200"), 2, work)
        g = got.per_gpu
        assert g is not None
        pool = g.usable_bytes - g.weights_bytes - total_bytes(g.reserves)
        one = pool // (full + swa)
        assert (got.kv_cache_capacity_tokens == one) is not split
