"""SGLang's own KV dtype for DeepSeek Sparse Attention when --kv-cache-dtype is auto, resolved per GPU
(core/engines/sglang_kv.py `dsa_kv_default`, applied by core/engines `on_gpu`), worked from SGLang's
code read in the wheels on PyPI (bench/release_sources.py):

- 0.5.3 / 0.5.4.post1 server_args.py `_handle_model_specific_adjustments`: `if is_deepseek_nsa(...)`
  ... `major, _ = torch.cuda.get_device_capability(); if major >= 10: self.kv_cache_dtype =
  "fp8_e4m3"` (whatever was asked), then flashmla_kv, the scaled fp8 row;
- 0.5.4.post2 to 0.5.14 server_args.py (`_set_default_nsa_kv_cache_dtype` in 0.5.10,
  `_set_default_dsa_kv_cache_dtype` in 0.5.14), 0.5.16 to 0.5.23 arg_groups/overrides.py
  `_dsa_kv_cache_dtype_default`: `if kv_cache_dtype == "auto": "fp8_e4m3" if major >= 10 else
  "bfloat16"`; from 0.5.10 fp8 on compute capability >= 10 takes the TRT-LLM backends, the raw row.

Per token (the cell `profile_max_num_token` divides by; no TP split, every rank holds the latent):
bf16 row 576 x 2 + 132 = 1,284 B per layer, fp8 raw row 576 + 132 = 708, fp8 scaled row 656 + 132 = 788.
DeepSeek-V3.2 61 layers: bf16 78,324, fp8 raw 43,188, fp8 scaled 48,068. GLM-5 78 layers: bf16
100,152, fp8 raw 55,224. The same at TP 1, 2, 4 and 8.
"""

from __future__ import annotations

import json
import shlex

import pytest

from gpusize.core.engines import engine, on_gpu
from gpusize.core.engines.sglang_kv import sglang_kv_bytes_per_token
from gpusize.core.reserves import total_bytes
from gpusize.serving.launch import sglang_command
from gpusize.sources.catalog import find_gpu
from tests.helpers import catalog_spec, cli, workload

TPS = (1, 2, 4, 8)
INDEXER = 128 + 128 // 128 * 4  # 132 uint8 per layer
BF16_ROW = (512 + 64) * 2 + INDEXER  # 1,284
RAW_FP8_ROW = 512 + 64 + INDEXER  # 708 (TRT-LLM, from 0.5.10 on compute capability >= 10)
SCALED_FP8_ROW = 512 + 512 // 128 * 4 + 64 * 2 + INDEXER  # 788 (FlashMLA)
DSA = [("DeepSeek-V3.2", 61), ("GLM-5", 78)]


def _auto_cell(name: str, gpu: str, tp: int, version: str | None = None, kv: str = "auto") -> tuple[str, int]:
    """(KV dtype, bytes per token) of SGLang on `gpu` for --kv-dtype `kv`, as every plan sees it."""
    spec = catalog_spec(name)
    settings = {"version": version} if version else {}
    work = on_gpu(spec, find_gpu(gpu), workload(spec, 4096, kv_dtype=kv, engine_name="sglang", **settings))
    return work.kv_cache_dtype, sglang_kv_bytes_per_token(spec, find_gpu(gpu), work, tp)


@pytest.mark.parametrize(("name", "layers"), DSA)
@pytest.mark.parametrize("tp", TPS)
def test_auto_is_fp8_on_blackwell_bf16_on_hopper(name: str, layers: int, tp: int) -> None:
    """0.5.23: B200 (10.0) auto -> fp8_e4m3, the raw row (V3.2 43,188 B, GLM-5 55,224 B per token);
    H200 (9.0) auto -> bfloat16 (78,324 / 100,152). gpusize sized bf16 on both before."""
    assert _auto_cell(name, "B200", tp) == ("fp8", layers * RAW_FP8_ROW)
    assert _auto_cell(name, "GB200", tp) == ("fp8", layers * RAW_FP8_ROW)
    assert _auto_cell(name, "H200-SXM", tp) == ("bf16", layers * BF16_ROW)
    assert _auto_cell(name, "MI300X", tp) == ("bf16", layers * BF16_ROW)  # ROCm: torch reports 9.4


@pytest.mark.parametrize("tp", TPS)
def test_auto_in_the_first_releases_is_fp8_with_flashmlas_scaled_row(tp: int) -> None:
    """0.5.3 and 0.5.4.post1 set fp8_e4m3 on compute capability >= 10 and flashmla_kv: 61 x 788 =
    48,068 B per token on B200; Hopper keeps bf16 (78,324)."""
    for version in ("0.5.3", "0.5.4.post1"):
        assert _auto_cell("DeepSeek-V3.2", "B200", tp, version) == ("fp8", 61 * SCALED_FP8_ROW)
        assert _auto_cell("DeepSeek-V3.2", "H200-SXM", tp, version) == ("bf16", 61 * BF16_ROW)
    # GLM-5's first release (0.5.9): auto-only rule, scaled row before the TRT-LLM default (0.5.10)
    assert _auto_cell("GLM-5", "B200", tp, "0.5.9") == ("fp8", 78 * SCALED_FP8_ROW)
    assert _auto_cell("GLM-5", "B200", tp, "0.5.10") == ("fp8", 78 * RAW_FP8_ROW)


@pytest.mark.parametrize(("name", "layers"), DSA)
def test_an_explicit_bf16_stays_bf16_from_0_5_4_post2(name: str, layers: int) -> None:
    assert _auto_cell(name, "B200", 1, kv="bf16") == ("bf16", layers * BF16_ROW)
    assert _auto_cell(name, "B200", 1, kv="fp8") == ("fp8", layers * RAW_FP8_ROW)


def test_the_first_releases_refuse_a_bf16_cache_on_blackwell() -> None:
    """0.5.3 / 0.5.4.post1 overwrite --kv-cache-dtype with fp8_e4m3 on compute capability >= 10: a
    bf16 plan there is not what runs, so it is refused, naming the release that keeps bf16."""
    spec = catalog_spec("DeepSeek-V3.2")
    work = workload(spec, 4096, kv_dtype="bf16", engine_name="sglang", version="0.5.3")
    got = engine("sglang").evaluate(spec, find_gpu("B200"), 8, work)
    assert not got.fits and "fp8_e4m3" in str(got.reason) and "0.5.4.post2" in str(got.reason)
    assert engine("sglang").evaluate(spec, find_gpu("H200-SXM"), 8, work).per_gpu is not None


def test_the_engine_divides_the_pool_by_the_fp8_row_on_blackwell_under_auto() -> None:
    spec = catalog_spec("DeepSeek-V3.2")
    work = workload(spec, 4096, engine_name="sglang")
    got = engine("sglang").evaluate(spec, find_gpu("B200"), 8, work)
    g = got.per_gpu
    assert g is not None
    pool = g.usable_bytes - g.weights_bytes - total_bytes(g.reserves)
    assert got.kv_cache_capacity_tokens == pool // (61 * RAW_FP8_ROW)


def test_vllm_auto_is_unchanged_on_blackwell() -> None:
    """vLLM keeps the bf16 latent under auto from 0.11.1 on every GPU (engines/vllm/families.py)."""
    spec = catalog_spec("DeepSeek-V3.2")
    work = workload(spec, 4096)
    assert on_gpu(spec, find_gpu("B200"), work).kv_cache_dtype == "bf16"
    old = workload(spec, 4096, version="0.11.0")
    assert on_gpu(spec, find_gpu("H200-SXM"), old).kv_cache_dtype == "fp8"


def _kv_flag(kv: str, gpu: str) -> list[str]:
    spec = catalog_spec("DeepSeek-V3.2")
    g = find_gpu(gpu)
    work = on_gpu(spec, g, workload(spec, 4096, kv_dtype=kv, engine_name="sglang"))
    words = shlex.split(
        str(sglang_command("deepseek-ai/DeepSeek-V3.2", None, 8, work, 0.85, spec, g).command)
    )
    return words[words.index("--kv-cache-dtype") :][:2] if "--kv-cache-dtype" in words else []


def test_the_launch_line_names_the_kv_dtype_only_where_sglangs_auto_differs() -> None:
    assert _kv_flag("auto", "B200") == []  # SGLang's auto is the fp8 sized
    assert _kv_flag("fp8", "B200") == []
    assert _kv_flag("bf16", "B200") == ["--kv-cache-dtype", "bfloat16"]
    assert _kv_flag("auto", "H200-SXM") == []
    assert _kv_flag("fp8", "H200-SXM") == ["--kv-cache-dtype", "fp8_e4m3"]


def test_fit_json_and_assumptions_show_the_resolved_dtype() -> None:
    r = cli("fit", "DeepSeek-V3.2", "--gpu", "B200", "--engine", "sglang", "--ctx", "32k", "--json")
    data = json.loads(r.stdout)
    assert data["workload"]["kv_cache_dtype"] == "fp8"
    assert data["assumptions"]["kv_cache_dtype"] == "fp8"
    assert data["memory"]["kv_cache_bytes_per_token"] < 61 * BF16_ROW
    assert any("fp8_e4m3 on compute capability 10" in n for n in data["assumptions"]["notes"])
    hopper = json.loads(cli("fit", "DeepSeek-V3.2", "--gpu", "H200", "--engine", "sglang", "--json").stdout)
    assert hopper["workload"]["kv_cache_dtype"] == "bf16"


def test_quote_prices_blackwell_under_auto_as_the_fp8_it_runs() -> None:
    """quote's speed reads the KV bytes of each GPU's own workload: auto on B200 is the fp8 cache."""
    args = ("quote", "DeepSeek-V3.2", "--engine", "sglang", "--gpu", "B200", "--users", "32", "--json")
    auto = json.loads(cli(*args).stdout)["options"][0]
    fp8 = json.loads(cli(*args, "--kv-dtype", "fp8").stdout)["options"][0]
    assert auto["per_request_tokens_per_s"] == fp8["per_request_tokens_per_s"]
    assert auto["kv_cache_capacity_tokens"] == fp8["kv_cache_capacity_tokens"]
