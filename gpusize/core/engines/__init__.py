"""Engine memory models, one module each: vLLM (the default), SGLang, llama.cpp and transformers.

Each module states the releases it follows and exposes `ENGINE`, an EngineModel whose `evaluate`
returns a `core.plan.Candidate`, so plans and reports treat engines alike.
"""

from __future__ import annotations

from gpusize.core.engines import hf, llamacpp, sglang, vllm
from gpusize.core.engines.base import UNVERSIONED, EngineModel
from gpusize.core.spec import ModelSpec
from gpusize.core.workload import EngineSettings, Request, Workload, resolve
from gpusize.errors import InputError

__all__ = ["ENGINES", "EngineModel", "engine", "engine_label", "prepare"]

ENGINES: dict[str, EngineModel] = {
    e.name: e for e in (vllm.ENGINE, sglang.ENGINE, llamacpp.ENGINE, hf.ENGINE)
}


def engine(name: str) -> EngineModel:
    return ENGINES[name]


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
