"""Start-up logs of vLLM run under the flags gpusize models as reserves (issue 20): what each log shows
against gpusize's terms, beyond the KV capacity that tests/core/test_vllm_releases.py checks for every
record of tests/data/engine_records.yaml."""

from __future__ import annotations

import pytest

from gpusize.core import kvcache
from gpusize.core.engines import engine, vllm
from gpusize.core.engines.sglang_dp import attention_tp
from gpusize.core.engines.vllm.multimodal import TOWER_SKIPPED_SINCE, skipped_tower_bytes
from gpusize.sources.catalog import find_gpu
from tests.conftest import engine_records
from tests.helpers import catalog_spec, workload
from tests.vllm_records import GIB, load_records, predict

TEXT_ONLY = '{"image":0,"video":0}'


def test_text_only_drops_the_vision_tower_weights() -> None:
    """0 items of every tower modality: vLLM builds no vision tower (vllm-project/vllm#22299), so its
    weights go from the pool, from TOWER_SKIPPED_SINCE on."""
    spec = catalog_spec("Qwen3.6-35B-A3B")
    assert spec.vision is not None
    gpu = find_gpu("DGX-Spark")

    def weights(version: str, limits: str | None = None) -> int:
        work = workload(spec, 8192, version=version, limit_mm_per_prompt=limits)
        per_gpu = vllm.evaluate(spec, gpu, 1, work).per_gpu
        assert per_gpu is not None
        return per_gpu.weights_bytes

    tower = spec.params.vision * 2  # BF16
    assert weights("0.19.2") - weights("0.19.2", TEXT_ONLY) == tower
    # before it the tower stays (Gemma 3: Qwen3.6 itself needs vLLM 0.17.0, core/engines/family_support.py)
    old = catalog_spec("gemma-3-27b-it")
    assert old.vision is not None
    older = [workload(old, 8192, version="0.10.0", limit_mm_per_prompt=m) for m in (TEXT_ONLY, None)]
    assert len({vllm.evaluate(old, gpu, 1, w).per_gpu.weights_bytes for w in older}) == 1  # type: ignore[union-attr]
    assert str(TOWER_SKIPPED_SINCE) == "0.10.1"
    one_left = workload(spec, 8192, version="0.19.2", limit_mm_per_prompt='{"image":0,"video":1}')
    assert skipped_tower_bytes(spec, one_left, 1) == 0


def test_language_model_only_log_matches_the_text_tower() -> None:
    """vllm-gb10-dj-qwen36-35b-bf16 (0.19.2, --language-model-only): 'Model loading took 64.69 GiB',
    the BF16 checkpoint less its 418,904,944-parameter vision tower."""
    rec = {r["id"]: r for r in load_records()}["vllm-gb10-dj-qwen36-35b-bf16"]
    per_gpu = predict(rec).per_gpu
    assert per_gpu is not None
    got = per_gpu.weights_bytes / GIB
    assert abs(got - rec["measured"]["weights_gib"]) / rec["measured"]["weights_gib"] < 0.005, got


def test_sglang_dp_attention_pool_per_rank_matches_the_log() -> None:
    """sglang-pr17392 (Qwen3-30B-A3B, TP4 with 4 attention-DP ranks on ~140 GiB GPUs): each DP rank
    holds every KV head ('K size: 47.12 GB' for 1,029,388 tokens: 48 layers x 4 heads x 128 x 2 B).
    The launch command is not in the excerpt; its 'Memory pool end. avail mem=27.62 GB' after
    'avail mem=121.95 GB' implies mem_fraction_static 0.80, and at that fraction each rank's pool is
    within 3% of the log (gpusize's capacity is the sum of the dp pools)."""
    rec = {r["id"]: r for r in engine_records()}["sglang-pr17392"]
    logged = rec["measured"]
    spec = catalog_spec("Qwen3-30B-A3B")
    gpu = find_gpu("H200")
    kv_gib = logged["k_size_gib"] + logged["v_size_gib"]
    fraction = round(1 - (logged["avail_after_load_gib"] - kv_gib) / (gpu.visible_bytes / GIB), 3)
    assert fraction == 0.802
    dp = 4
    work = workload(
        spec, 8192, engine_name="sglang", enable_dp_attention=True, dp_size=dp, mem_fraction_static=fraction
    )
    per_token = kvcache.kv_cache_bytes_per_token(spec, 2, attention_tp(4, dp))
    assert per_token * logged["kv_tokens"] == pytest.approx(kv_gib * GIB, rel=0.001)
    tokens = engine("sglang").evaluate(spec, gpu, 4, work).kv_cache_capacity_tokens
    assert tokens is not None
    assert abs(tokens / dp - logged["kv_tokens"]) / logged["kv_tokens"] <= 0.03, tokens / dp


def test_sglang_mtp_draft_weights_match_the_fractions_the_log_reports() -> None:
    """sglang-inferencex-2128 (DeepSeek-V4-Pro, TP8 on H200): the smallest --mem-fraction-static that
    starts is 0.9113 without MTP and 0.9335 with it, of the 137.9 GB the log accounts for (12.25 GB
    left + 125.65 GB of weights): the draft adds 3.06 GB per GPU, gpusize's draft_weights reserve is
    within 3% of it. (The target's own weights are not checked here: gpusize holds 102.4 GiB per GPU
    against the logged 125.65.)"""
    rec = {r["id"]: r for r in engine_records()}["sglang-inferencex-2128"]
    logged = rec["measured"]
    total = logged["avail_after_load_gb"] + logged["weights_per_gpu_gb"]
    implied = (logged["min_viable_mem_fraction_mtp"] - logged["min_viable_mem_fraction"]) * total
    spec = catalog_spec("DeepSeek-V4-Pro")
    work = workload(spec, 9216, engine_name="sglang", mem_fraction_static=0.95, speculative_algorithm="NEXTN")
    per_gpu = engine("sglang").evaluate(spec, find_gpu("H200"), 8, work).per_gpu
    assert per_gpu is not None
    draft = {r.name: r.bytes for r in per_gpu.reserves}["draft_weights"] / GIB
    assert abs(draft - implied) / implied <= 0.03, (draft, implied)
