"""Calibration of gpusize's TensorRT-LLM constant against public start-up logs.

For each record of tests/data/trtllm_records.yaml without a stated miss, what the logged KV pool leaves
for the runtime: device total - logged tokens x bytes per token / fraction (the profiling peak) minus
gpusize's weights, activation estimate and CUDA context. Their mean is TRTLLM_RUNTIME_BYTES
(core/engines/trtllm.py); then every record is predicted with the constant in use.

Run: python bench/calibrate_trtllm.py
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the records and predictor live in tests/

from gpusize.core import kvcache, runtime  # noqa: E402
from gpusize.core.engines import trtllm  # noqa: E402
from gpusize.core.weights import weights_bytes  # noqa: E402
from tests.helpers import catalog_spec, workload  # noqa: E402
from tests.trtllm_records import RECORDS, gpu_of, predict_capacity  # noqa: E402

GIB = 2**30


def main() -> None:
    residuals: list[float] = []
    fits: list[tuple[dict[str, Any], float, int, float, int]] = []
    for rec in RECORDS:
        spec, gpu = catalog_spec(rec["catalog"]), gpu_of(rec)
        kv = rec.get("kv_cache_dtype", "auto")
        work = workload(
            spec, rec["max_seq_len"], dtype=rec.get("dtype", "auto"), kv_dtype=kv, engine_name="trtllm"
        )
        fraction = rec["kv_cache_free_gpu_memory_fraction"] or trtllm.FREE_GPU_MEMORY_FRACTION
        cell = kvcache.kv_cache_bytes_per_token(spec, work.kv_bytes, 1)
        peak = gpu.visible_bytes - rec["measured"]["kv_cache_tokens"] * cell / fraction
        known = weights_bytes(spec, work.weights, 1) + trtllm.activation_bytes(spec, work, 1)
        left = (peak - known - runtime.cuda_context_bytes(1, gpu.interconnect)) / GIB
        predicted, logged = predict_capacity(rec), rec["measured"]["kv_cache_tokens"]
        miss = " (stated miss, not fitted)" if "known_miss" in rec else ""
        print(f"{rec['id']}: runtime left {left:.3f} GiB; predicted {predicted:,} vs {logged:,} "
              f"({(predicted - logged) / logged:+.2%}){miss}")  # fmt: skip
        if not miss:
            residuals.append(left)
            fits.append((rec, left, cell, fraction, predicted))
    print(
        f"fitted runtime {statistics.mean(residuals):.3f} GiB "
        f"(in use {trtllm.TRTLLM_RUNTIME_BYTES / GIB:.3f})"
    )
    _leave_one_source_out(fits)


def _leave_one_source_out(fits: list[tuple[dict[str, Any], float, int, float, int]]) -> None:
    """Each source (a log's page) held out in turn: the constant refitted on the other sources' records,
    the held-out records predicted with it (a runtime constant larger by d GiB shrinks the pool by
    fraction x d / bytes per token)."""
    used = trtllm.TRTLLM_RUNTIME_BYTES / GIB
    errors = []
    for source in dict.fromkeys(rec["source"] for rec, *_ in fits):
        others = [left for rec, left, *_ in fits if rec["source"] != source]
        refit = statistics.mean(others)
        for rec, _, cell, fraction, predicted in (f for f in fits if f[0]["source"] == source):
            tokens = predicted - fraction * (refit - used) * GIB / cell
            logged = rec["measured"]["kv_cache_tokens"]
            errors.append(abs(tokens - logged) / logged)
            print(f"held out {rec['id']}: constant {refit:.3f} GiB, {tokens:,.0f} vs {logged:,} "
                  f"({(tokens - logged) / logged:+.2%})")  # fmt: skip
    print(f"leave-one-source-out: mean {statistics.mean(errors):.2%}, worst {max(errors):.2%}")


if __name__ == "__main__":
    main()
