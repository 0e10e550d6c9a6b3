"""What a fix suggestion may change on an engine (pure), declared by each engine (`EngineModel.levers`).

A lever is a workload variant: the flags a person passes and the workload they give, evaluated by the
same engine model as the plan (core/suggest.py searches and ranks them). The levers every engine shares
(more GPUs, another GPU type, a shorter context, fewer sequences) live in core/suggest.py; what differs
by engine (its flag names, whether it quantizes while loading, its own settings, offload, a pipeline
across servers) is declared here by the engine's own module, so no module compares an engine's name.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

from gpusize.core.gpu import GpuSpec
from gpusize.core.plan import Evaluator
from gpusize.core.spec import ModelSpec
from gpusize.core.workload import Workload

__all__ = ["NO_LEVERS", "Change", "Levers", "Offload", "SettingLevers", "Variant", "one"]


class Change(NamedTuple):
    """One flag to pass, under the engine's own name where the engine has the setting (a NamedTuple
    for start-up, as core/settings.Setting; serialized as {flag, value})."""

    flag: str
    value: str


class Variant(NamedTuple):
    """A workload with one lever pulled: its name (core/suggest.py ranks by it), the flags, a summary,
    what the change needs or why it works, and the workload to evaluate (a NamedTuple for start-up)."""

    lever: str
    changes: tuple[Change, ...]
    summary: str
    note: str | None
    work: Workload


def one(lever: str, flag: str, value: str, summary: str, note: str | None, work: Workload) -> Variant:
    """A variant that changes one flag."""
    return Variant(lever, (Change(flag, value),), summary, note, work)


#: The engine's own settings that leave the KV cache more room on this GPU (vLLM: fewer sequences per
#: step, a higher memory utilization), each a variant.
SettingLevers = Callable[[Workload, GpuSpec], Sequence[Variant]]
#: Layers left in system RAM (llama.cpp -ngl): the variant with the most layers on `n` GPUs that fit,
#: judged by the engine's `Evaluator` the search passes (its kept evaluations: the search judges the
#: same variant next).
Offload = Callable[[ModelSpec, Workload, GpuSpec, int, Evaluator], Variant | None]


def _no_settings(work: Workload, gpu: GpuSpec) -> list[Variant]:
    return []


class Levers(NamedTuple):
    """The fix-suggestion levers of one engine (a NamedTuple: built on every start, made far faster
    than a frozen dataclass, never serialized; see core/settings.Setting)."""

    #: The flag of the GPU count and of the context, under the engine's name (gpusize takes both).
    count_flag: str = "--gpus"
    context_flag: str = "--ctx"
    #: The quantized KV cache types a suggestion tries, best quality first (a lighter one is kept only
    #: where it needs fewer GPUs): the shared fp8, or the engine's own names (llama.cpp's q8_0, q4_0).
    kv_types: tuple[str, ...] = ("fp8",)
    #: How the engine's own launch spells that cache ("{kind}" is the type), where it differs.
    kv_note: str | None = None
    #: A paged KV pool within this fraction of what the requests need is no suggestion (the model's
    #: error on public start-up logs); None: no such margin.
    thin_margin: float | None = None
    settings: SettingLevers = _no_settings
    #: Setting levers whose variants come from least to most room: where one fits on n GPUs, every
    #: later variant of the lever fits there too (vLLM's halvings of --max-num-seqs, which only shrink
    #: the sampler, CUDA-graph and batched-token reservations). A search tries such a lever's last
    #: variant first and skips the lever where that one does not fit (`core.suggest.evaluate.
    #: chain_floors`; tests/core/test_suggest_bounded.py holds the order to the engine's evaluation).
    chained: frozenset[str] = frozenset()
    offload: Offload | None = None


#: An engine with only the shared levers (transformers).
NO_LEVERS = Levers()
