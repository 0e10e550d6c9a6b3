"""Small helpers shared by the family test modules."""

from __future__ import annotations

from gpusize import plan
from gpusize.catalog import find_gpu, find_model
from gpusize.model import ModelSpec, parse_config
from gpusize.params import ParamCounts, count_params


def catalog_spec(name: str) -> tuple[ModelSpec, ParamCounts]:
    spec = parse_config(find_model(name).config)
    return spec, count_params(spec)


def evaluate(name: str, gpu: str, tp: int, ctx: int, batch: int = 1, dtype: str = "auto") -> plan.Candidate:
    spec, counts = catalog_spec(name)
    return plan.evaluate(spec, counts, find_gpu(gpu), tp, plan.Workload(ctx, batch, dtype, "auto"))
