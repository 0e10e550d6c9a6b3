"""Decode speed and time to first token from rooflines (pure). Every figure here is an ESTIMATE.

Decode step time on one tensor-parallel group = max(memory time, compute time) + TP communication:
- memory: bytes read per step per GPU / (bandwidth x BANDWIDTH_EFFICIENCY), where the bytes are the
  active weights on the GPU (MoE: the experts the batch touches) + the KV cache of every sequence;
- compute: 2 x active parameters x sequences / TP / (dense BF16 TFLOPS x DECODE_MFU);
- communication: two all-reduces per layer of sequences x hidden x 2 B, ring algorithm over the
  GPUs' link (NVLink, else PCIe), each with a fixed latency.
Prefill (time to first token) is compute-bound: 2 x active parameters x prompt tokens (+ causal
attention) / (TFLOPS x PREFILL_MFU x TP) + communication. Constants are fitted in
bench/calibrate_throughput.py against published measurements (figures in bench/RESULTS.md).
"""

from __future__ import annotations

from dataclasses import dataclass

from gpusize.core import kvcache
from gpusize.core.gpu import GpuSpec
from gpusize.core.spec import ModelSpec
from gpusize.core.weights import WeightFormat, rope_cache_bytes, weights_bytes

__all__ = [
    "ALLREDUCE_LATENCY_S",
    "BANDWIDTH_EFFICIENCY",
    "DECODE_MFU",
    "PCIE_GBPS",
    "PREFILL_MFU",
    "Speed",
    "allreduce_s",
    "decode_speed",
    "experts_touched",
    "link",
    "prefill_seconds",
    "read_bytes_per_step",
]

#: Fraction of peak memory bandwidth a decode step achieves: the median of 9 published single-stream
#: measurements (0.42-0.78; bench/calibrate_throughput.py, figures in bench/RESULTS.md).
BANDWIDTH_EFFICIENCY = 0.58
#: Fraction of dense tensor peak reached by batched decode GEMMs and by prefill: an ASSUMPTION (no
#: cited prefill measurement to fit it against); the output labels TTFT as an estimate.
DECODE_MFU = 0.5
PREFILL_MFU = 0.5
#: Per-direction link bandwidth (GB/s) of PCIe x16 by generation (PCI-SIG), and all-reduce latencies
#: (assumptions in the range NCCL reports for small messages: ~10 us over NVLink, ~30 us over PCIe).
PCIE_GBPS = {3: 16.0, 4: 32.0, 5: 64.0, 6: 128.0}
ALLREDUCE_LATENCY_S = {"nvlink": 10e-6, "pcie": 30e-6}


@dataclass(frozen=True)
class Speed:
    step_s: float
    per_sequence_tokens_per_s: float
    aggregate_tokens_per_s: float
    bound: str  # memory | compute
    comm_s: float


def link(gpu: GpuSpec) -> tuple[str, float]:
    """('nvlink' | 'pcie', per-direction GB/s) used for tensor-parallel traffic."""
    if gpu.nvlink_gbps and gpu.interconnect in ("nvswitch", "bridge-pairs"):
        return "nvlink", gpu.nvlink_gbps / 2
    return "pcie", PCIE_GBPS.get(gpu.pcie_gen or 4, 32.0)


def allreduce_s(gpu: GpuSpec, tp: int, n_bytes: float) -> float:
    if tp == 1:
        return 0.0
    kind, gbps = link(gpu)
    if kind == "nvlink" and gpu.interconnect == "bridge-pairs" and tp > 2:
        kind, gbps = "pcie", PCIE_GBPS.get(gpu.pcie_gen or 4, 32.0)  # bridges join pairs only
    return ALLREDUCE_LATENCY_S[kind] + 2 * (tp - 1) / tp * n_bytes / (gbps * 1e9)


def experts_touched(spec: ModelSpec, sequences: int) -> float:
    """Expected fraction of a layer's experts a batch of `sequences` tokens routes to (uniform
    routing): 1 - (1 - k/E)^N."""
    if spec.moe is None:
        return 1.0
    k, e = spec.moe.num_experts_per_tok, spec.moe.num_experts
    return 1 - (1 - k / e) ** max(sequences, 1)


def read_bytes_per_step(
    spec: ModelSpec,
    fmt: WeightFormat,
    tp: int,
    sequences: int,
    context: int,
    kv_bytes: float,
    max_batched: int,
) -> float:
    """Weights and KV read by one GPU for one decode step of `sequences` sequences."""
    counts = spec.params
    weights: float = weights_bytes(spec, fmt, tp) - rope_cache_bytes(spec, fmt)
    weights -= counts.lookup_only * fmt.other_bytes / tp  # one embedding row is read, not the table
    expert_bytes = counts.experts * fmt.linear_bytes / tp
    weights -= expert_bytes * (1 - experts_touched(spec, sequences))
    layout = kvcache.kv_layout(spec, kv_bytes, tp)
    kv = kvcache.request_kv_bytes(layout, context, max_batched) if layout else 0
    return weights + sequences * kv


def decode_speed(
    spec: ModelSpec,
    fmt: WeightFormat,
    gpu: GpuSpec,
    tp: int,
    sequences: int,
    context: int,
    kv_bytes: float,
    max_batched: int,
) -> Speed | None:
    """Estimated decode speed of one TP group serving `sequences` sequences at `context` tokens."""
    if not gpu.bandwidth_gbps:
        return None
    read = read_bytes_per_step(spec, fmt, tp, sequences, context, kv_bytes, max_batched)
    t_mem = read / (gpu.bandwidth_gbps * 1e9 * BANDWIDTH_EFFICIENCY)
    t_cmp = 0.0
    if gpu.bf16_tflops:
        t_cmp = 2 * spec.params.active * sequences / tp / (gpu.bf16_tflops * 1e12 * DECODE_MFU)
    layers = len(spec.layers)
    comm = 2 * layers * allreduce_s(gpu, tp, sequences * spec.hidden_size * 2)
    step = max(t_mem, t_cmp) + comm
    return Speed(step, 1 / step, sequences / step, "memory" if t_mem >= t_cmp else "compute", comm)


def prefill_seconds(spec: ModelSpec, gpu: GpuSpec, tp: int, prompt: int) -> float | None:
    """Estimated time to first token for one prompt (compute-bound prefill + TP all-reduces)."""
    if not gpu.bf16_tflops:
        return None
    attn_width = spec.num_attention_heads * spec.head_dim
    attention = 2 * len(spec.attention_layers) * prompt * prompt * attn_width  # causal QK^T + PV
    flops = 2 * spec.params.active * prompt + attention
    comm = 2 * len(spec.layers) * allreduce_s(gpu, tp, prompt * spec.hidden_size * 2)
    return flops / (tp * gpu.bf16_tflops * 1e12 * PREFILL_MFU) + comm
