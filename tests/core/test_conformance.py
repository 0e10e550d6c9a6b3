"""Conformance: every vLLM 0.19 H100 record in engine-logs.yaml whose model is in the catalog.

Predicted `kv_cache_capacity_tokens` within 3% of the logged "GPU KV cache size", and the fits /
OOM outcome right. The records are the calibration data of the vLLM engine model's constants
(gpusize/core/engines/vllm.py); they stay here so a change to the model that breaks one of them
fails loudly.
"""

from __future__ import annotations

from typing import Any

import pytest

from gpusize.core.engines import vllm
from gpusize.core.parse import parse_config
from gpusize.core.weights import weight_format, weights_bytes
from gpusize.sources.catalog import find_gpu, find_model
from tests.helpers import workload
from tests.vllm_records import V019_RECORDS, predict_v019

TOLERANCE = 0.03
#: Records the planner does not model, with the reason (none at present).
NOT_MODELLED: dict[str, str] = {}
#: Outcomes the model gets wrong, with the reason (strict xfail: fixing one must update this).
KNOWN_MISSES = {
    "llmd-v019-27": "gpt-oss-20b sized right (KV within 1%) but vLLM then OOMed warming up the "
    "sampler at utilization 0.95 with 1.78 GiB reserved-but-unallocated "
    "(fragmentation); no config-level rule in the records predicts it",
}


def test_every_catalog_record_is_checked() -> None:
    assert len(V019_RECORDS) >= 17


@pytest.mark.parametrize("rec", V019_RECORDS, ids=lambda r: r["id"])
def test_kv_capacity_within_tolerance(rec: dict[str, Any]) -> None:
    if rec["id"] in NOT_MODELLED:
        pytest.skip(NOT_MODELLED[rec["id"]])
    predicted = predict_v019(rec).kv_cache_capacity_tokens
    logged = rec["measured"]["gpu_kv_cache_tokens"]
    assert predicted is not None
    assert abs(predicted - logged) / logged <= TOLERANCE, (predicted, logged)


@pytest.mark.parametrize("rec", V019_RECORDS, ids=lambda r: r["id"])
def test_outcome(rec: dict[str, Any]) -> None:
    if rec["id"] in NOT_MODELLED:
        pytest.skip(NOT_MODELLED[rec["id"]])
    right = predict_v019(rec).fits == (rec["outcome"] == "fits")
    if rec["id"] in KNOWN_MISSES:
        assert not right, "now predicted right: remove it from KNOWN_MISSES"
        pytest.xfail(KNOWN_MISSES[rec["id"]])
    assert right


def test_qwen3_32b_one_h100_holds_16k_not_32k() -> None:
    """llmdb-emp-02/03: vLLM at utilization 0.9 on one H100 serves 16,000 tokens, fails at 32,000."""
    spec = parse_config(find_model("Qwen3-32B").config)
    h100 = find_gpu("H100")
    fits = [
        vllm.evaluate(spec, h100, 1, workload(spec, ctx, gpu_memory_utilization=0.9, version="0.19.0")).fits
        for ctx in (16000, 32000, 32768)
    ]
    assert fits == [True, False, False]


def test_weights_match_vllm_logs_within_2_percent() -> None:
    """Logged 'Model loading took' for quantized checkpoints (engine-logs.yaml)."""
    cases = [
        ("gpt-oss-120b", 1, 64.38),
        ("gpt-oss-20b", 1, 13.64),
        ("RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic", 1, 67.72),
        ("RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic", 2, 33.88),
        ("RedHatAI/Meta-Llama-3.1-8B-Instruct-quantized.w4a16", 1, 5.38),
        ("Llama-3.1-8B", 2, 7.51),
        ("Llama-4-Scout", 4, 53.12),
    ]
    for name, tp, logged in cases:
        spec = parse_config(find_model(name).config)
        got = weights_bytes(spec, weight_format(spec, "auto"), tp) / 2**30
        assert abs(got - logged) / logged <= 0.02, (name, tp, got, logged)
