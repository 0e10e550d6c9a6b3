"""DeepSeek-V4 (`deepseek_v4`, Flash and Pro): compressed attention with per-layer compress_ratios.

Worked examples from vLLM's vllm/models/deepseek_v4/attention.py (commit 0484480b) and compressor.py
(commit 01cc1d3e), V4-Flash's config (43 layers: ratios 0, 0, then 4 and 128 alternating, 21 of 4
and 20 of 128), in vLLM's fp8_ds_mla layout ("448B NoPE + 128B RoPE + 8B fp8 scale = 584B per
token") and the FP8 indexer key (128 + 4 = 132 B):
- per token: 21 x (584 + 132) / 4 + 20 x ceil(584 / 128) = 21 x 179 + 20 x 5 = 3,859 B (the
  ratio-128 share rounded up from 4.5625 B: an estimate), the same on every TP rank;
- per sequence: the 128-token window of all 43 layers 43 x 128 x 584 = 3,214,336 B, the ratio-4
  compressor states 21 x (2 x 4 tokens x 2 x 2 x 512 x 4 B + the indexer's 8 x 2 x 2 x 128 x 4 B) =
  21 x 81,920 and the ratio-128 ones 20 x 128 x 2 x 512 x 4 B = 20 x 524,288: 15,420,416 B.
DeepSeek's technical report: V4-Pro keeps 9.62 GiB per 1M-token sequence in bf16 (indexer keys in
bf16 too): 2^20 x (30 x (1024 + 256) / 4 + 31 x 1024 / 128) + 61 x 128 x 1024 B = 9.6246 GiB.
"""

from __future__ import annotations

import json

import pytest

from gpusize.core import kvcache
from gpusize.core.engines import engine
from gpusize.core.kinds.compressed_mla import compressed_bytes_per_token, window_state_bytes
from gpusize.core.parse import parse_config
from gpusize.core.weights import FP4_EXPERT_BYTES
from gpusize.errors import ConfigError
from gpusize.sources.catalog import find_gpu
from tests.conftest import REFERENCE, load_reference
from tests.helpers import catalog_spec, cli, workload

FLASH, PRO = "DeepSeek-V4-Flash", "DeepSeek-V4-Pro"


@pytest.mark.parametrize("tp", [1, 2, 4, 8])
def test_flash_kv_per_token_on_every_rank(tp: int) -> None:
    spec = catalog_spec(FLASH)
    ratios = [layer.compress_ratio for layer in spec.layers]
    assert (ratios.count(4), ratios.count(128), ratios.count(0)) == (21, 20, 2)
    assert kvcache.kv_cache_bytes_per_token(spec, 1.0, tp) == 21 * 179 + 20 * 5 == 3_859
    assert kvcache.kv_cache_bytes_per_token(spec, 2.0, tp) == 21 * (1024 + 132) // 4 + 20 * 8


def test_flash_window_and_compressor_state_per_sequence() -> None:
    spec = catalog_spec(FLASH)
    assert window_state_bytes(spec, 1.0) == 43 * 128 * 584 + 21 * 81_920 + 20 * 524_288 == 15_420_416


def test_pro_matches_the_technical_reports_million_token_cache() -> None:
    """The report's 9.62 GiB (bf16, indexer keys in bf16): the kind's bf16 entries + 256 B keys."""
    spec = catalog_spec(PRO)
    per_token = sum(
        compressed_bytes_per_token(spec, layer, 2.0)
        + (256 - 132) // 4 * (layer.compress_ratio == 4)  # vLLM's fp8 key -> the report's bf16 key
        for layer in spec.layers
    )
    window = len(spec.layers) * 128 * 1024
    assert round((2**20 * per_token + window) / 2**30, 2) == 9.62


def test_parameters_match_the_model_card() -> None:
    """Model card: Flash 284B, Pro 1.6T (without the MTP layer)."""
    flash, pro = catalog_spec(FLASH), catalog_spec(PRO)
    assert abs(flash.params.total / 284e9 - 1) < 0.005
    assert round(pro.params.total / 1e12, 1) == 1.6
    assert flash.params.mtp > 0 and pro.params.mtp > 0


def test_fp4_experts_under_the_fp8_config() -> None:
    """expert_dtype fp4: experts at 4 bits + a ue8m0 scale per 32; the sgl-project FP8 build keeps
    its experts in FP8 (no expert_dtype), the same parameters."""
    spec, fp8 = catalog_spec(FLASH), catalog_spec("DeepSeek-V4-Flash-FP8")
    fp4_work, fp8_work = workload(spec, 32768), workload(fp8, 32768)
    assert fp4_work.weights.expert_bytes == FP4_EXPERT_BYTES == 0.53125
    assert fp8_work.weights.expert_bytes is None and fp8.params.total == spec.params.total
    h200 = find_gpu("H200")
    small = engine("vllm").evaluate(spec, h200, 2, fp4_work)
    large = engine("vllm").evaluate(fp8, h200, 2, fp8_work)
    assert small.fits and small.per_gpu is not None and 70 * 2**30 < small.per_gpu.weights_bytes < 78 * 2**30
    assert not large.fits


def test_output_groups_bound_tensor_parallel() -> None:
    spec = catalog_spec(FLASH)  # 64 heads, 8 output groups
    best = engine("vllm").evaluate(spec, find_gpu("H200"), 16, workload(spec, 32768))
    assert not best.fits and "8 output groups" in (best.reason or "")


def test_window_state_is_a_reserve_in_the_json() -> None:
    result = cli("fit", FLASH, "--gpu", "H200", "--ctx", "32k", "--batch", "4", "--json")
    assert result.code == 0, result.stderr
    data = json.loads(result.stdout)
    reserves = {r["name"]: r for r in data["memory"]["reserves"]}
    assert reserves["window_state"]["bytes"] == 4 * 15_420_416 and reserves["window_state"]["estimate"]
    assert data["memory"]["kv_cache_bytes_per_token"] == 3_859 and data["workload"]["kv_cache_dtype"] == "fp8"


@pytest.mark.parametrize("name", [FLASH, PRO, "DeepSeek-V4-Flash-FP8", "DeepSeek-V4-Pro-FP8"])
def test_fit_answers_at_32k(name: str) -> None:
    assert cli("fit", name, "--ctx", "32k").code in (0, 1)


@pytest.mark.parametrize(
    ("ratios", "words"), [([0, 4, 8], "does not run"), ([0, 4], "at least 3")], ids=["bad-ratio", "short"]
)
def test_bad_compress_ratios_name_the_field(ratios: list[int], words: str) -> None:
    config = load_reference(REFERENCE / "configs" / "deepseek-ai__DeepSeek-V4-Flash.json")["config"]
    with pytest.raises(ConfigError, match=f"compress_ratios.*{words}"):
        parse_config({**config, "num_hidden_layers": 3, "compress_ratios": ratios})


def test_releases_before_deepseek_v4_are_refused() -> None:
    refused = cli("fit", FLASH, "--gpu", "H200", "--ctx", "32k", "--engine-version", "0.19.1")
    assert refused.code == 2 and "the first vLLM release that does is 0.20.0" in refused.stderr
    assert cli("fit", FLASH, "--gpu", "H200", "--ctx", "32k", "--engine-version", "0.20.0").code == 0


def test_launch_line_names_the_fp8_cache() -> None:
    """Before PR #45091 vLLM's FlashMLA path refused `auto`: the printed command passes fp8."""
    result = cli("serve", FLASH, "--gpu", "H200", "--ctx", "32k", "--users", "10")
    assert result.code == 0 and "--kv-cache-dtype fp8" in result.stdout
