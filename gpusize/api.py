"""The library's one-call entry point: plan a model on one GPU type (pure)."""

from __future__ import annotations

from gpusize.core.engines import engine, prepare
from gpusize.core.gpu import GpuSpec
from gpusize.core.plan import TP_SIZES, Candidate, smallest_fit
from gpusize.core.spec import ModelSpec
from gpusize.core.workload import EngineSettings, Request

__all__ = ["fit"]


def fit(
    spec: ModelSpec,
    gpu: GpuSpec,
    context_tokens: int,
    batch: int = 1,
    dtype: str = "auto",
    kv_dtype: str = "auto",
    engine_settings: EngineSettings | None = None,
    sizes: tuple[int, ...] = TP_SIZES,
) -> list[Candidate]:
    """Candidates of increasing size on `gpu` up to the first that fits (vLLM unless told otherwise)."""
    settings = engine_settings or EngineSettings()
    request = Request(
        context_tokens=context_tokens, batch=batch, dtype=dtype, kv_dtype=kv_dtype, engine=settings
    )
    model = engine(settings.name)
    return smallest_fit(spec, gpu, prepare(spec, request), model.evaluate, sizes)
