"""Small helpers shared by the test modules."""

from __future__ import annotations

from gpusize.core.engines import engine, prepare
from gpusize.core.parse import parse_config
from gpusize.core.plan import Candidate, smallest_fit
from gpusize.core.spec import ModelSpec, ParamCounts
from gpusize.core.workload import EngineSettings, Request, Workload
from gpusize.sources.catalog import find_gpu, find_model


def catalog_spec(name: str) -> ModelSpec:
    return parse_config(find_model(name).config)


def workload(
    spec: ModelSpec,
    ctx: int,
    batch: int = 1,
    dtype: str = "auto",
    kv_dtype: str = "auto",
    engine_name: str = "vllm",
    **settings: object,
) -> Workload:
    request = Request(
        context_tokens=ctx,
        batch=batch,
        dtype=dtype,
        kv_dtype=kv_dtype,
        engine=EngineSettings(name=engine_name, **settings),  # type: ignore[arg-type]
    )
    return prepare(spec, request)


def evaluate(name: str, gpu: str, tp: int, ctx: int, batch: int = 1, dtype: str = "auto") -> Candidate:
    spec = catalog_spec(name)
    return engine("vllm").evaluate(spec, find_gpu(gpu), tp, workload(spec, ctx, batch, dtype))


def smallest(name: str, gpu: str, ctx: int, dtype: str = "auto", engine_name: str = "vllm") -> Candidate:
    spec = catalog_spec(name)
    work = workload(spec, ctx, 1, dtype, engine_name=engine_name)
    return smallest_fit(spec, find_gpu(gpu), work, engine(engine_name).evaluate)[-1]


def catalog_counts(name: str) -> tuple[ModelSpec, ParamCounts]:
    spec = catalog_spec(name)
    return spec, spec.params
