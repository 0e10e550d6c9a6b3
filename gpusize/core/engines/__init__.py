"""Engine memory models, one module each: vLLM (the default), SGLang, llama.cpp and transformers.

Each module states the release it follows and exposes `ENGINE`, an EngineModel whose `evaluate`
returns a `core.plan.Candidate`, so plans and reports treat engines alike.
"""

from __future__ import annotations

from gpusize.core.engines import hf, llamacpp, sglang, vllm
from gpusize.core.engines.base import EngineModel

__all__ = ["ENGINES", "EngineModel", "engine"]

ENGINES: dict[str, EngineModel] = {
    e.name: e for e in (vllm.ENGINE, sglang.ENGINE, llamacpp.ENGINE, hf.ENGINE)
}


def engine(name: str) -> EngineModel:
    return ENGINES[name]
