"""Reverse query (pure): every model of a catalog that fits given hardware, fastest first."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gpusize import plan, throughput
from gpusize.catalog import GpuSpec
from gpusize.errors import ConfigError
from gpusize.model import parse_config
from gpusize.params import count_params


@dataclass(frozen=True)
class ModelFit:
    name: str
    hf_id: str
    params_total: int
    fits: bool
    tensor_parallel: int | None
    headroom_bytes: int | None
    max_concurrency: float | None
    kv_cache_capacity_tokens: int | None
    tokens_per_s: float | None  # one sequence, estimate
    reason: str | None


def fit_one(
    name: str, hf_id: str, config: dict[str, Any], gpu: GpuSpec, max_gpus: int, work: plan.Workload
) -> ModelFit:
    try:
        spec = parse_config(config)
    except ConfigError as exc:
        return ModelFit(name, hf_id, 0, False, None, None, None, None, None, str(exc))
    counts = count_params(spec)
    sizes = tuple(tp for tp in plan.TP_SIZES if tp <= max_gpus)
    best = plan.smallest_fit(spec, counts, gpu, work, sizes)[-1]
    if not best.fits or best.per_gpu is None:
        return ModelFit(name, hf_id, counts.total, False, None, None, None, None, None, best.reason)
    fmt = plan.weight_format_for(spec, counts, work)
    speed = throughput.decode_speed(
        spec,
        counts,
        fmt,
        gpu,
        best.tensor_parallel,
        1,
        work.context // 2,
        plan.kv_element_bytes(spec, work.kv_dtype),
        plan.scheduler_limits(gpu).max_num_batched_tokens,
    )
    return ModelFit(
        name,
        hf_id,
        counts.total,
        True,
        best.tensor_parallel,
        best.per_gpu.headroom_bytes,
        best.max_concurrency,
        best.kv_cache_capacity_tokens,
        speed.per_sequence_tokens_per_s if speed else None,
        None,
    )


def models_that_fit(
    entries: list[tuple[str, str, dict[str, Any]]], gpu: GpuSpec, max_gpus: int, work: plan.Workload
) -> list[ModelFit]:
    """Fitting models first, fastest first; then the rest with their reasons."""
    rows = [fit_one(name, hf_id, config, gpu, max_gpus, work) for name, hf_id, config in entries]
    fitting = sorted((r for r in rows if r.fits), key=lambda r: -(r.tokens_per_s or 0))
    return fitting + [r for r in rows if not r.fits]
