"""Calibration of throughput.BANDWIDTH_EFFICIENCY against published decode measurements.

Part 1: single-stream decode, efficiency = measured tok/s / (bandwidth / weight bytes per token).
The median is the constant. Part 2: gpusize's full estimate (weights + KV + TP all-reduces, catalog
GPUs) for the measurements whose model and GPU are in the catalogs, as predicted / measured.

Sources (each figure quoted from the page; gathered 2026-11-30):
 1-2  llama.cpp PR ggml-org/llama.cpp#4766 (tg128, master column): LLaMA-7B Q4_0 on RTX 3090 / P40
 3    llama.cpp tools/llama-bench/README.md: Qwen2.5-7B Q4_K_M on RTX 4080, tg128
 4-5  llama.cpp PRs #2917 / #2959 (Metal): LLaMA-7B Q4_0 on M2 Ultra / M2 Max 30-core
 6-8  LMDeploy v0.1.0a1 docs/en/benchmark/a100_fp16.md, batch 1, 1 in / 128 out
 9    NVIDIA NIM 1.8.0 benchmarking page: Llama-3.3-70B FP8 TP2 on H100, concurrency 1, ITL 18.58 ms
 B1   LMDeploy as 6, batch 16 and 64 (aggregate output tok/s)
Run: python bench/calibrate_throughput.py
"""

from __future__ import annotations

import statistics

from gpusize.core.parse import parse_config
from gpusize.core.weights import activation_dtype, weight_format
from gpusize.serving import throughput
from gpusize.sources.catalog import find_gpu, find_model
from gpusize.units import DTYPE_BYTES

# (label, weight bytes read per token, bandwidth GB/s, measured tok/s)
SINGLE_STREAM = [
    ("LLaMA-7B Q4_0, RTX 3090, llama.cpp", 3.82e9, 936, 121.82),
    ("LLaMA-7B Q4_0, P40, llama.cpp", 3.82e9, 347, 56.79),
    ("Qwen2.5-7B Q4_K_M, RTX 4080, llama.cpp", 4.677e9, 716.8, 119.84),
    ("LLaMA-7B Q4_0, M2 Ultra, llama.cpp Metal", 3.82e9, 800, 88.54),
    ("LLaMA-7B Q4_0, M2 Max, llama.cpp Metal", 3.82e9, 400, 61.22),
    ("Llama-2-7B fp16, A100 80GB, LMDeploy", 13.48e9, 2039, 100.02),
    ("Llama-2-13B fp16, A100 80GB, LMDeploy", 26.0e9, 2039, 57.49),
    ("Llama-2-70B fp16, 4x A100 TP4, LMDeploy", 138e9, 4 * 2039, 33.94),
    ("Llama-3.3-70B FP8, 2x H100 TP2, NVIDIA NIM", 72.6e9, 2 * 3350, 53.8),
]

# (label, catalog model, dtype, gpu, tp, sequences, mean context, measured aggregate tok/s)
END_TO_END = [
    ("Llama-2-7B fp16 A100, batch 1", "Llama-2-7b-hf", "auto", "A100-80GB", 1, 1, 65, 100.02),
    ("Llama-2-7B fp16 A100, batch 16", "Llama-2-7b-hf", "auto", "A100-80GB", 1, 16, 65, 1504.72),
    ("Llama-2-7B fp16 A100, batch 64", "Llama-2-7b-hf", "auto", "A100-80GB", 1, 64, 65, 4154.81),
    ("Llama-3.3-70B FP8 2x H100, concurrency 1", "Llama-3.3-70B", "fp8", "H100", 2, 1, 5250, 53.8),
]


def main() -> None:
    ratios = []
    print(f"{'measurement':45} {'roofline':>9} {'measured':>9} {'efficiency':>10}")
    for label, weight_bytes, bandwidth, measured in SINGLE_STREAM:
        roof = bandwidth * 1e9 / weight_bytes
        ratios.append(measured / roof)
        print(f"{label:45} {roof:>9.1f} {measured:>9.2f} {measured / roof:>10.2f}")
    print(
        f"median efficiency {statistics.median(ratios):.2f} (throughput.py uses "
        f"{throughput.BANDWIDTH_EFFICIENCY}); range {min(ratios):.2f}-{max(ratios):.2f}\n"
    )
    print(f"{'end to end (gpusize estimate)':45} {'predicted':>9} {'measured':>9} {'ratio':>10}")
    for label, name, dtype, gpu_name, tp, seqs, ctx, measured in END_TO_END:
        spec = parse_config(find_model(name).config)
        fmt = weight_format(spec, dtype)
        kv_bytes = DTYPE_BYTES[activation_dtype(spec)]
        speed = throughput.decode_speed(spec, fmt, find_gpu(gpu_name), tp, seqs, ctx, kv_bytes, 8192)
        assert speed is not None
        print(
            f"{label:45} {speed.aggregate_tokens_per_s:>9.1f} {measured:>9.2f} "
            f"{speed.aggregate_tokens_per_s / measured:>10.2f}"
        )


if __name__ == "__main__":
    main()
