"""What every engine memory model declares (pure): its name, the version it follows, the settings it
reads (any other is refused), and its fit test."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from gpusize.core.gpu import GpuSpec
from gpusize.core.plan import Evaluator
from gpusize.core.releases import Releases
from gpusize.core.spec import ModelSpec
from gpusize.core.workload import Workload

__all__ = ["ContextRefusal", "EffectiveSettings", "EngineModel", "UNVERSIONED"]

#: The settings an engine runs with for one plan (the user's, else its defaults), under the engine's own
#: option names: what a person passes to reproduce the plan.
EffectiveSettings = Callable[[ModelSpec, GpuSpec, int, Workload], dict[str, float | int | str]]


#: The engine's refusal to start for a context above the model's maximum, or for settings it refuses
#: together (llama.cpp: a quantized V cache without flash attention), as its own message; or None.
ContextRefusal = Callable[[ModelSpec, Workload], str | None]


def _none(spec: ModelSpec, gpu: GpuSpec, n: int, work: Workload) -> dict[str, float | int | str]:
    return {}


def _accepts(spec: ModelSpec, work: Workload) -> str | None:
    return None


#: Engines whose releases gpusize does not tell apart have one "release", the one its model follows.
UNVERSIONED = Releases("", ("0.0.0",))


@dataclass(frozen=True)
class EngineModel:
    name: str
    #: The release whose behaviour the model follows, as printed in assumptions and JSON.
    version: str
    #: One line on how the engine budgets memory, for the assumptions.
    note: str
    #: EngineSettings fields this engine reads; `core.workload.resolve` refuses the others.
    settings: frozenset[str]
    evaluate: Evaluator
    effective_settings: EffectiveSettings = _none
    releases: Releases = UNVERSIONED
    refuses_context: ContextRefusal = _accepts
