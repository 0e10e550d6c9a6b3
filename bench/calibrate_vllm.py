"""Calibration of gpusize's vLLM 0.19 constants against the logged H100 records.

1. Least-squares fit of the activation model's two coefficients: the logged 'torch peak increase'
   minus the config-derived MoE-workspace and encoder terms, regressed on
   (sampler rows x vocab x 4 B) and (batched tokens x hidden x 2 B) with no intercept.
2. The conformance table: predicted vs logged KV-cache tokens for every record the planner models.

Run: python bench/calibrate_vllm.py   (the records and the prediction are tests/core/test_conformance.py's)
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the conformance records live in tests/

from gpusize.core.engines import vllm  # noqa: E402
from gpusize.core.parse import parse_config  # noqa: E402
from gpusize.sources.catalog import find_model  # noqa: E402
from tests.core.test_conformance import RECORDS, predict  # noqa: E402

GIB = 2**30


def fit_activation(recs: list[dict]) -> tuple[float, float, int]:
    rows = []
    for rec in recs:
        if rec["pipeline_parallel_size"] != 1:
            continue  # a PP log reports the first stage's peak, without the sampler
        spec = parse_config(find_model(rec["model"]).config)
        tp = rec["tensor_parallel_size"]
        fused = spec.quantization is None or spec.quantization.method != "mxfp4"
        limits = vllm.SchedulerLimits(1024, 8192)
        base = vllm.activation_bytes(spec, limits, tp, fused) - (
            vllm.SAMPLER_LOGITS_COPIES * 1024 * spec.vocab_size * 4
            + vllm.HIDDEN_STATE_COPIES * 8192 * spec.hidden_size * 2
        )
        target = rec["measured"]["activation_peak_gib"] * GIB - base
        rows.append((1024 * spec.vocab_size * 4, 8192 * spec.hidden_size * 2, target))
    sxx = sum(a * a for a, _, _ in rows)
    sxy = sum(a * b for a, b, _ in rows)
    syy = sum(b * b for _, b, _ in rows)
    sxt = sum(a * t for a, _, t in rows)
    syt = sum(b * t for _, b, t in rows)
    det = sxx * syy - sxy * sxy
    return (sxt * syy - syt * sxy) / det, (syt * sxx - sxt * sxy) / det, len(rows)


def main() -> None:
    recs = RECORDS
    sampler, hidden, points = fit_activation(recs)
    print(
        f"least-squares activation fit over {points} records (PP excluded): sampler copies {sampler:.2f}, "
        f"hidden copies {hidden:.2f} (core/engines/vllm.py uses {vllm.SAMPLER_LOGITS_COPIES}, "
        f"{vllm.HIDDEN_STATE_COPIES})"
    )
    errors = []
    print(f"{'record':14} {'model':45} {'TP':>2} {'logged':>9} {'predicted':>9} {'error':>7}")
    for rec in recs:
        cand = predict(rec)
        assert cand.kv_cache_capacity_tokens is not None
        logged = rec["measured"]["gpu_kv_cache_tokens"]
        err = (cand.kv_cache_capacity_tokens - logged) / logged
        errors.append(abs(err))
        print(
            f"{rec['id']:14} {rec['model'][:45]:45} {rec['tensor_parallel_size']:>2} "
            f"{logged:>9,} {cand.kv_cache_capacity_tokens:>9,} {err * 100:>+6.2f}%"
        )
    print(f"mean |error| {statistics.mean(errors) * 100:.2f}%, worst {max(errors) * 100:.2f}%")


if __name__ == "__main__":
    main()
