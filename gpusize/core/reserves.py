"""Memory an engine reserves under its own flags (pure): LoRA adapter slots, a draft model, an
encoder cache, ... Each is a named `Reserve` on one GPU, in bytes, counted inside the engine's
budget before the KV pool (so it takes KV blocks away) and shown as its own row and JSON entry.

An engine module lists the functions that compute its reserves (`ReserveTerm`); each returns a
Reserve or None when its flags are not given. A new reserve is one function and one entry in that
engine's list.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import NamedTuple

from gpusize.core.gpu import GpuSpec
from gpusize.core.spec import ModelSpec
from gpusize.core.workload import Workload

__all__ = ["Reserve", "ReserveTerm", "outside_bytes", "reserves_of", "total_bytes"]


class Reserve(NamedTuple):
    """One reserve on one GPU: `name` is its JSON key stem (e.g. "lora_slots"), `bytes` what it holds,
    `how` one line saying what it is and where the rule comes from, `estimate` when it is not exact,
    `outside` when the engine allocates it after its budget is spent, from the memory left outside
    the budget (SGLang's draft model and draft KV pool), not from the KV pool. A NamedTuple for
    start-up (core/settings.Setting); serialized as an object of its fields."""

    name: str
    bytes: int
    how: str
    estimate: bool = False
    outside: bool = False


#: (spec, GPU, tensor parallel size, workload) -> the reserve on one GPU, or None when not asked for.
ReserveTerm = Callable[[ModelSpec, GpuSpec, int, Workload], Reserve | None]


def reserves_of(
    terms: Iterable[ReserveTerm], spec: ModelSpec, gpu: GpuSpec, tp: int, work: Workload
) -> tuple[Reserve, ...]:
    """The reserves `terms` give for this plan, in their order, those not asked for left out."""
    found = (term(spec, gpu, tp, work) for term in terms)
    return tuple(r for r in found if r is not None)


def total_bytes(reserves: Iterable[Reserve]) -> int:
    """Bytes the reserves take inside the engine's budget (those `outside` it left out)."""
    return sum(r.bytes for r in reserves if not r.outside)


def outside_bytes(reserves: Iterable[Reserve]) -> int:
    """Bytes the reserves take outside the engine's budget."""
    return sum(r.bytes for r in reserves if r.outside)
