"""Start-up logs of vLLM run under the flags gpusize models as reserves (issue 20): what each log shows
against gpusize's terms, beyond the KV capacity that tests/core/test_vllm_releases.py checks for every
record of tests/data/engine_records.yaml."""

from __future__ import annotations

from gpusize.core.engines import vllm
from gpusize.core.engines.vllm.multimodal import TOWER_SKIPPED_SINCE, skipped_tower_bytes
from gpusize.sources.catalog import find_gpu
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
    assert weights("0.10.0", TEXT_ONLY) == weights("0.10.0")
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
