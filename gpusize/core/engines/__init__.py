"""Engine memory models, one module each: vLLM (the default), SGLang, llama.cpp and transformers.

Each module states the releases it follows and exposes `ENGINE`, an EngineModel whose `evaluate`
returns a `core.plan.Candidate`, so plans and reports treat engines alike.
"""

from __future__ import annotations

import importlib

from gpusize.core.engines.base import UNVERSIONED, EngineModel
from gpusize.core.registry import ENGINE_MODULES
from gpusize.core.spec import ModelSpec
from gpusize.core.workload import EngineSettings, Request, Workload, resolve
from gpusize.errors import InputError

__all__ = ["ENGINE_MODULES", "EngineModel", "engine", "engine_label", "prepare"]

# Each engine's module (core/registry.py) is imported on first use: a vLLM answer then never loads the
# transformers engine's allocator replay or llama.cpp's GGUF placement (start-up, bench/bench_cli.py).


def engine(name: str) -> EngineModel:
    model: EngineModel = importlib.import_module(f"{__name__}.{ENGINE_MODULES[name]}").ENGINE
    return model


def prepare(spec: ModelSpec, request: Request) -> Workload:
    """The request resolved for its engine (settings, release), refused (InputError) where the engine
    itself would refuse to start: a context above the model's maximum for vLLM and SGLang."""
    model = engine(request.engine.name)
    work = resolve(spec, request, model.settings, model.releases)
    refusal = model.refuses_context(spec, work)
    if refusal:
        raise InputError(refusal)
    return work


def engine_label(settings: EngineSettings) -> str:
    """The engine and release a plan follows, as printed ('vLLM 0.19.0')."""
    model = engine(settings.name)
    return model.version if model.releases is UNVERSIONED else model.releases.resolve(settings.version).label
