"""Calibration of gpusize's vLLM constants against public start-up logs, and the per-release table.

Fits (each prints the value it finds next to the constant core/engines/vllm/overhead.py uses):
1. 0.17+ activation model: least squares of the logged 'torch peak increase' of the 0.19 H100 records
   (tests/data/reference/engine-logs.yaml) on sampler rows x vocab x 4 B and tokens x hidden x 2 B.
2. CUDA-graph estimate: least squares of the '(estimated)' graph memory the 0.19 logs print on
   captures, captures x decoder layers and captures at TP>=2.
3. Sort sampler (0.10-0.16), FlashInfer sampler, distributed init inside the 0.10 budget and the
   0.11-0.16 NVSwitch non-torch increase: from the `calibration` records of tests/data/engine_records.yaml,
   what the log leaves besides weights and KV (budget - logged weights - logged KV) minus gpusize's other
   terms, per fp32 sampler-logits copy (or in GiB).
4. Vision encoder profile (core/engines/vllm/multimodal.py): the Qwen-VL `calibration` records, what
   the log leaves beyond gpusize's other terms, per 16-bit copy of (width + MLP width) per patch.
5. V0 forward pass (0.7-0.10 V0, core/engines/vllm/overhead.py V0_FORWARD_MLP_COPIES): the two
   Llama-3.1-8B RTX 3090 logs of the reference set at 20,000 and 29,000 tokens (vllm-10517-a/-b; a
   0.6.4 log, whose profile run is the eager forward 0.7-0.10 V0 keeps), the 16-bit values per token
   per (MLP width + hidden) their peak above the weights implies.
Then every record with a known GPU is predicted: mean and worst KV-capacity error per release, and for
the records no fit reads (`holdout`) on their own.

Run: python bench/calibrate_vllm.py
"""

from __future__ import annotations

import re
import statistics
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the records and predictor live in tests/

from gpusize.core.engines import vllm  # noqa: E402
from gpusize.core.engines.vllm import multimodal  # noqa: E402
from gpusize.core.parse import parse_config  # noqa: E402
from gpusize.core.releases import parse_version  # noqa: E402
from gpusize.errors import UnknownNameError  # noqa: E402
from gpusize.sources.catalog import find_gpu, find_model  # noqa: E402
from tests.conftest import engine_records  # noqa: E402
from tests.vllm_records import (  # noqa: E402
    GIB,
    KNOWN_MISSES,
    V019_RECORDS,
    load_records,
    predict,
    predict_v019,
    residual,
    spec_of,
    workload_of,
)

_ESTIMATE = re.compile(r"CUDA graph pool memory: ([\d.]+) GiB \(actual\), ([\d.]+) GiB \(estimated\)")


def least_squares(rows: list[tuple[list[float], float]]) -> list[float]:
    """Solve min |X b - y| by the normal equations (a few columns; no numpy at run time)."""
    n = len(rows[0][0])
    a = [[sum(x[i] * x[j] for x, _ in rows) for j in range(n)] for i in range(n)]
    b = [sum(x[i] * y for x, y in rows) for i in range(n)]
    for col in range(n):  # Gauss-Jordan
        pivot = max(range(col, n), key=lambda r: abs(a[r][col]))
        a[col], a[pivot], b[col], b[pivot] = a[pivot], a[col], b[pivot], b[col]
        for r in range(n):
            if r != col and a[col][col]:
                f = a[r][col] / a[col][col]
                a[r] = [v - f * w for v, w in zip(a[r], a[col], strict=True)]
                b[r] -= f * b[col]
    return [b[i] / a[i][i] for i in range(n)]


def fit_activation() -> None:
    rows = []
    for rec in V019_RECORDS:
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
        rows.append(([1024 * spec.vocab_size * 4, 8192 * spec.hidden_size * 2], target))
    sampler, hidden = least_squares(rows)
    print(
        f"1. activation (0.17+), {len(rows)} records: sampler copies {sampler:.2f}, hidden copies "
        f"{hidden:.2f}  (vllm.py: {vllm.SAMPLER_LOGITS_COPIES}, {vllm.HIDDEN_STATE_COPIES})"
    )


def _graph_rows() -> list[tuple[list[float], float]]:
    rows = []
    seen = set()
    for rec in engine_records() + load_records():
        version = str(rec.get("engine_version") or "")
        if not version.startswith(("0.19.0", "0.19.1")) or (rec.get("pipeline_parallel_size") or 1) > 1:
            continue
        name = rec.get("catalog") or rec.get("model")
        try:
            spec = parse_config(find_model(str(name)).config)
        except (UnknownNameError, ValueError):
            continue
        for line in rec.get("quote") or []:
            match = _ESTIMATE.search(str(line))
            if match and rec["id"] not in seen:
                seen.add(rec["id"])
                captures = vllm.capture_sizes(rec.get("max_num_seqs") or 1024)
                tpn = captures if rec["tensor_parallel_size"] > 1 else 0
                rows.append(([captures, captures * spec.num_hidden_layers, tpn], float(match.group(2))))
    return rows


def fit_graphs() -> None:
    rows = _graph_rows()
    per, per_layer, per_tpn = least_squares(rows)
    errors = [
        abs(sum(c * x for c, x in zip((per, per_layer, per_tpn), xs, strict=True)) - y) for xs, y in rows
    ]
    print(
        f"2. CUDA-graph estimate, {len(rows)} 0.19 logs: per capture {per:.4f} GiB + {per_layer:.5f} GiB x "
        f"layers (+ {per_tpn:.4f} at TP>=2); mean error {statistics.mean(errors):.2f} GiB, worst "
        f"{max(errors):.2f}  (vllm.py: {vllm.CUDA_GRAPH_PER_CAPTURE / GIB:.4f}, "
        f"{vllm.CUDA_GRAPH_PER_CAPTURE_LAYER / GIB:.5f}, {vllm.CUDA_GRAPH_PER_CAPTURE_TPN / GIB:.4f})"
    )


def fit_early_releases() -> None:
    calibration = [r for r in load_records() if r["use"] == "calibration"]
    sort_rows, flashinfer_rows, nccl, nvswitch_0_11 = [], [], [], []
    for rec in calibration:
        res = residual(rec)
        assert res is not None, rec["id"]
        spec = parse_config(find_model(rec["catalog"]).config)
        work_version = rec["engine_version"]
        beh = vllm.behaviour(parse_version(work_version), spec)
        tp = rec["tensor_parallel_size"]
        gpu = find_gpu(rec["gpu"])
        target = res.logged - res.rest
        if spec.vision is not None:  # fitted by fit_vision
            continue
        if tp == 1 and rec.get("flashinfer_sampler"):
            flashinfer_rows.append(([res.sampler_copy], target))
        elif tp == 1 and beh.sort_sampler and spec.vision is None:
            sort_rows.append(([res.sampler_copy], target - vllm.SAMPLER_LOGITS_COPIES * res.sampler_copy))
        elif tp > 1 and vllm.nvls(gpu) and beh.nccl_init_in_budget:
            nccl.append(
                res.logged - res.rest - res.sampler_copies * res.sampler_copy + vllm.NCCL_INIT_TPN / GIB
            )
        elif tp > 1 and vllm.nvls(gpu):
            nvswitch_0_11.append(
                res.logged - res.rest - res.sampler_copies * res.sampler_copy + vllm.NON_TORCH_TPN_0_11 / GIB
            )
    (extra,) = least_squares(sort_rows)
    (flashinfer,) = least_squares(flashinfer_rows)
    print(
        f"3. sort sampler (0.10-0.16), {len(sort_rows)} records: {extra:.2f} extra copies "
        f"(vllm.py: {vllm.SORT_SAMPLER_EXTRA_COPIES}); FlashInfer sampler, {len(flashinfer_rows)} records: "
        f"{flashinfer:.2f} copies (vllm.py: {vllm.FLASHINFER_SAMPLER_COPIES})"
    )
    print(
        f"   0.10 distributed init inside the budget (NVSwitch), {len(nccl)} records: "
        f"{statistics.mean(nccl):.2f} GiB "
        f"(vllm.py: {vllm.NCCL_INIT_TPN / GIB:.2f}); 0.11-0.16 NVSwitch non-torch, {len(nvswitch_0_11)} "
        f"records: {statistics.mean(nvswitch_0_11):.2f} GiB (vllm.py: {vllm.NON_TORCH_TPN_0_11 / GIB:.2f})"
    )


def table() -> None:
    by_release: dict[str, list[float]] = defaultdict(list)
    holdout: list[float] = []
    modelled: list[float] = []  # holdout without the known misses
    print(
        f"\n{'record':46} {'release':8} {'GPU':10} {'TP':>2} {'logged':>9} {'predicted':>9} {'error':>7}  use"
    )
    rows: list[tuple[str, dict[str, Any], float]] = []
    for rec in V019_RECORDS:
        logged = rec["measured"]["gpu_kv_cache_tokens"]
        predicted = predict_v019(rec).kv_cache_capacity_tokens or 0
        rows.append(
            ("0.19.0", {**rec, "gpu": "H100-SXM", "use": "calibration (0.19)"}, (predicted - logged) / logged)
        )
    for rec in load_records():
        if rec["use"] not in ("calibration", "holdout") or "gpu_kv_cache_tokens" not in rec["measured"]:
            continue
        logged = rec["measured"]["gpu_kv_cache_tokens"]
        predicted = predict(rec).kv_cache_capacity_tokens or 0
        rows.append((rec["engine_version"], rec, (predicted - logged) / logged))
    for release, rec, err in rows:
        logged = rec["measured"]["gpu_kv_cache_tokens"]
        by_release[release].append(abs(err))
        if rec["use"] == "holdout":
            holdout.append(abs(err))
            if rec["id"] not in KNOWN_MISSES:
                modelled.append(abs(err))
        print(
            f"{rec['id'][:46]:46} {release:8} {rec['gpu'][:10]:10} {rec['tensor_parallel_size']:>2} "
            f"{logged:>9,} {int(logged * (1 + err)):>9,} "
            f"{err * 100:>+6.1f}%  {rec['use']}{' (known miss)' if rec['id'] in KNOWN_MISSES else ''}"
        )
    print(f"\n{'release':8} {'records':>7} {'mean |error|':>12} {'worst':>7}")
    for release in sorted(by_release, key=lambda v: tuple(int(p) for p in v.split("."))):
        errs = by_release[release]
        print(f"{release:8} {len(errs):>7} {statistics.mean(errs) * 100:>11.2f}% {max(errs) * 100:>6.1f}%")
    print(
        f"holdout (never read by a fit): {len(holdout)} records, mean {statistics.mean(holdout) * 100:.2f}%, "
        f"worst {max(holdout) * 100:.1f}%; without the {len(holdout) - len(modelled)} known misses "
        f"(tests/vllm_records.py): mean {statistics.mean(modelled) * 100:.2f}%, "
        f"worst {max(modelled) * 100:.1f}%"
    )


def fit_vision() -> None:
    copies = []
    for rec in load_records():
        spec = spec_of(rec) if rec["use"] == "calibration" else None
        if spec is None or spec.vision is None:
            continue
        gpu, work, res = find_gpu(rec["gpu"]), workload_of(rec, spec), residual(rec)
        eb = multimodal.profiled_budget(spec, gpu, work)
        assert res is not None and eb is not None, rec["id"]
        held = multimodal.encoder_profile_bytes(spec.vision, spec.hidden_size, eb) / GIB
        logged = res.logged - (res.sampler_copies * res.sampler_copy + res.rest - held)
        bare = multimodal.encoder_profile_bytes(spec.vision, spec.hidden_size, eb, 0) / GIB
        per_copy = multimodal.encoder_profile_bytes(spec.vision, spec.hidden_size, eb, 1) / GIB - bare
        copies.append((logged - bare) / per_copy)
    print(
        f"4. vision encoder profile, {len(copies)} records: {statistics.mean(copies):.2f} copies "
        f"(multimodal.py: {multimodal.VISION_ACTIVATION_COPIES})"
    )


def fit_v0_forward() -> None:
    copies = []
    for rec in engine_records():
        if not str(rec.get("id", "")).startswith("vllm-10517-"):
            continue
        spec = parse_config(find_model(str(rec["model"])).config)
        measured = rec["measured"]
        peak = (measured["peak_torch_memory_gib_incl_weights"] - measured["weights_gib"]) * GIB
        per_token = (spec.intermediate_size + spec.hidden_size) * 2
        copies.append(peak / (rec["max_model_len"] * per_token))
    print(
        f"5. V0 forward, {len(copies)} records: {statistics.mean(copies):.2f} copies per token of "
        f"(MLP width + hidden) (overhead.py: {vllm.V0_FORWARD_MLP_COPIES}, {vllm.V0_FORWARD_HIDDEN_COPIES})"
    )


def main() -> None:
    fit_activation()
    fit_graphs()
    fit_early_releases()
    fit_vision()
    fit_v0_forward()
    table()


if __name__ == "__main__":
    main()
