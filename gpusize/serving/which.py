"""Reverse query (pure): every model of a catalog that fits given hardware, fastest first."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gpusize.core.engines import engine, prepare
from gpusize.core.gpu import GpuSpec
from gpusize.core.parse import parse_config
from gpusize.core.plan import TP_SIZES, smallest_fit
from gpusize.core.workload import Request
from gpusize.errors import ConfigError, InputError
from gpusize.serving import throughput

__all__ = ["ModelFit", "fit_one", "models_that_fit"]


@dataclass(frozen=True, kw_only=True)
class ModelFit:
    name: str
    hf_id: str
    params_total: int
    fits: bool
    tensor_parallel: int | None = None
    headroom_bytes: int | None = None
    max_concurrency: float | None = None
    kv_cache_capacity_tokens: int | None = None
    tokens_per_s: float | None = None  # one sequence at half the context, estimate (calibrated model)
    reason: str | None = None


def fit_one(
    name: str, hf_id: str, config: dict[str, Any], gpu: GpuSpec, max_gpus: int, request: Request
) -> ModelFit:
    """One catalog model on up to `max_gpus` GPUs; a config that cannot be read is a row with its reason."""
    model = engine(request.engine.name)
    try:
        spec = parse_config(config)
        work = prepare(spec, request)
    except (ConfigError, InputError) as exc:
        return ModelFit(name=name, hf_id=hf_id, params_total=0, fits=False, reason=str(exc))
    sizes = tuple(tp for tp in TP_SIZES if tp <= max_gpus)
    best = smallest_fit(spec, gpu, work, model.evaluate, sizes)[-1]
    if not best.fits or best.per_gpu is None:
        return ModelFit(
            name=name, hf_id=hf_id, params_total=spec.params.total, fits=False, reason=best.reason
        )
    placement = throughput.LlamaCppPlacement(best.num_gpus) if work.engine.name == "llamacpp" else None
    speed = throughput.decode_step(
        spec, work, gpu, best.tensor_parallel, 1, work.context_tokens // 2, placement
    )
    return ModelFit(
        name=name,
        hf_id=hf_id,
        params_total=spec.params.total,
        fits=True,
        tensor_parallel=best.tensor_parallel,
        headroom_bytes=best.per_gpu.headroom_bytes,
        max_concurrency=best.max_concurrency,
        kv_cache_capacity_tokens=best.kv_cache_capacity_tokens,
        tokens_per_s=speed.per_sequence_tokens_per_s if speed else None,
    )


def models_that_fit(
    entries: list[tuple[str, str, dict[str, Any]]], gpu: GpuSpec, max_gpus: int, request: Request
) -> list[ModelFit]:
    """Fitting models first, fastest first; then the rest with their reasons."""
    rows = [fit_one(name, hf_id, config, gpu, max_gpus, request) for name, hf_id, config in entries]
    fitting = sorted((r for r in rows if r.fits), key=lambda r: -(r.tokens_per_s or 0))
    return fitting + [r for r in rows if not r.fits]
