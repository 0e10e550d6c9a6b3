"""Throughput and time to first token under load (pure): continuous batching of the sequences the KV
cache and the scheduler admit, each request's prefill sharing the steps with the others' decode.
Every figure is an ESTIMATE with a range (`spread`).

Three load shapes, as the public benchmarks run them:
- `steady`: `users` clients each keep one request in flight (`vllm bench serve --max-concurrency N`;
  what `serve --users N` means);
- `burst`: N requests arrive at once (`--request-rate inf`), served in waves of what fits;
- `static_batch_seconds`: one batch prefilled together then decoded (`benchmark_latency`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gpusize.core.gpu import GpuSpec
from gpusize.core.spec import ModelSpec
from gpusize.core.workload import Workload
from gpusize.serving import calibrated
from gpusize.serving.throughput import LlamaCppPlacement, Speed, decode_step, prefill_seconds

__all__ = ["LoadPoint", "burst", "spread", "static_batch_seconds", "steady"]


@dataclass(frozen=True)
class LoadPoint:
    """One engine instance under load: the sequences decoding together, the speed each sees, the
    instance's output tokens per second and the mean time to first token."""

    sequences: int
    per_request_tokens_per_s: float
    aggregate_tokens_per_s: float
    ttft_s: float | None
    step: Speed


def spread(engine: str, figure: str) -> tuple[float, float]:
    """(low, high) multipliers of an estimate of `figure` (decode | aggregate | ttft) for `engine`:
    the 10th / 90th percentile of measured / predicted over the calibration records
    (`calibrated.SPREAD`); an engine without its own uses vLLM's."""
    return calibrated.SPREAD.get((engine, figure)) or calibrated.SPREAD.get(("vllm", figure), (1.0, 1.0))


def steady(
    spec: ModelSpec,
    work: Workload,
    gpu: GpuSpec,
    tp: int,
    users: int,
    prompt: int,
    output: int,
    capacity: int,
    llamacpp: LlamaCppPlacement | None = None,
    context: int | None = None,
    cached: int = 0,
) -> LoadPoint | None:
    """`users` clients each sending their next request when the last one ends, `capacity` sequences
    admitted at once (KV cache, max_num_seqs; the rest queue), each decoding at `context` tokens on
    average (default: the prompt and half the output); `cached` prompt tokens per request come from
    the engine's prefix cache (not prefilled).

    time per output token = step(batch) + (batch - 1) / output x prefill(prompt): every other
    sequence's prefill is chunked into the steps of this one's decode;
    time to first token = request_s + prefill(prompt) + one step + the wait for a free slot;
    aggregate = batch x output / (time to first token + (output - 1) x time per output token)."""
    batch = max(1, min(users, capacity))
    step = decode_step(spec, work, gpu, tp, batch, context or prompt + output // 2, llamacpp)
    if step is None:
        return None
    t_pf = prefill_seconds(spec, work, gpu, tp, prompt, cached=cached)
    split = llamacpp.gpus if llamacpp and llamacpp.split_mode == "row" else 1
    prefill = (t_pf or 0.0) / split
    tpot = step.step_s + (batch - 1) / max(output, 1) * prefill
    first = calibrated.engine_speed(work.engine.name).request_s + prefill + step.step_s
    cycle = first + (max(output, 1) - 1) * tpot
    queued = max(users - batch, 0) / batch * cycle  # clients beyond capacity wait for a slot
    ttft = first + queued if t_pf is not None else None
    return LoadPoint(batch, 1 / tpot, batch * max(output, 1) / cycle, ttft, step)


def burst(
    spec: ModelSpec,
    work: Workload,
    gpu: GpuSpec,
    tp: int,
    requests: int,
    prompt: int,
    output: int,
    capacity: int,
    cached: int = 0,
) -> LoadPoint | None:
    """`requests` arriving at once, admitted `capacity` at a time (continuous batching refills a
    slot as a sequence ends): total time = every prefill + requests x output / batch steps; mean
    time to first token = request_s + half the first wave's prefills + half the later waves' wait."""
    batch = max(1, min(requests, capacity))
    step = decode_step(spec, work, gpu, tp, batch, prompt + output // 2)
    t_pf = prefill_seconds(spec, work, gpu, tp, prompt, cached=cached)
    if step is None or t_pf is None:
        return None
    out = max(output, 1)
    duration = requests * t_pf + requests * out / batch * step.step_s
    waves = math.ceil(requests / batch)
    wave_s = batch * t_pf + out * step.step_s
    ttft = calibrated.engine_speed(work.engine.name).request_s + (batch + 1) / 2 * t_pf
    ttft += (waves - 1) / 2 * wave_s
    # a sequence admitted early decodes while the rest of its wave is prefilled (chunked prefill)
    tpot = step.step_s + (batch - 1) / 2 * t_pf / out
    return LoadPoint(batch, 1 / tpot, requests * out / duration, ttft, step)


def static_batch_seconds(
    spec: ModelSpec,
    work: Workload,
    gpu: GpuSpec,
    tp: int,
    batch: int,
    prompt: int,
    output: int,
    cached: int = 0,
) -> float | None:
    """One batch of `batch` prompts prefilled together, then `output` decode steps (vLLM
    benchmark_latency's end-to-end latency)."""
    step = decode_step(spec, work, gpu, tp, batch, prompt + output // 2)
    t_pf = prefill_seconds(spec, work, gpu, tp, prompt, batch, cached)
    if step is None or t_pf is None:
        return None
    return t_pf + output * step.step_s
