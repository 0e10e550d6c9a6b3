"""The search and ranking fix suggestions share (pure): `fit`'s (core/suggest.py) and `train`'s
(training/suggest.py) suggestions are ranked alike, cheapest first: the catalog's price per hour for
all the GPUs where priced, else fewer GPUs, then less memory; among equals the least intrusive lever.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from itertools import pairwise
from typing import NamedTuple, Protocol, TypeVar

__all__ = ["Ranked", "Ranking", "Slot", "cheapest_first_fits", "first_fit", "undominated"]


class Ranked(Protocol):
    """What the ranking reads of a suggestion."""

    @property
    def lever(self) -> str: ...
    @property
    def gpu(self) -> str: ...
    @property
    def num_gpus(self) -> int: ...
    @property
    def memory_bytes(self) -> int: ...
    @property
    def usd_per_hour(self) -> float | None: ...


S = TypeVar("S", bound=Ranked)
T = TypeVar("T")


class Ranking(NamedTuple):
    """Cheapest first, with `levers` from least to most intrusive breaking a tie of price and GPUs (a
    NamedTuple for start-up, as core/settings.Setting)."""

    levers: tuple[str, ...]

    def key(self, s: Ranked) -> tuple[bool, float, int, int, int]:
        price = s.usd_per_hour
        return (price is None, price or 0.0, s.num_gpus, s.memory_bytes, self.levers.index(s.lever))

    def cheapest(self, found: Sequence[S], limit: int) -> list[S]:
        return sorted(found, key=self.key)[:limit]

    def best_per_lever(self, found: Sequence[S], per_gpu: bool) -> list[S]:
        """One suggestion per lever (and GPU type, when one type was asked for), the cheapest."""
        best: dict[tuple[str, str], S] = {}
        for s in sorted(found, key=self.key):
            key = (s.lever, s.gpu if per_gpu or s.lever == "gpu" else "")
            best.setdefault(key, s)
        return list(best.values())


def undominated(found: Sequence[S]) -> list[S]:
    """Drop a lever that needs at least as many GPUs as adding GPUs alone does (two changes where
    one is enough)."""
    more = {s.gpu: s.num_gpus for s in found if s.lever == "gpus"}
    return [s for s in found if s.lever == "gpus" or s.num_gpus < more.get(s.gpu, 1 << 30)]


def first_fit(counts: Iterable[int], made: Callable[[int], T | None]) -> list[T]:
    """The suggestion at the first GPU count where `made` gives one (the fewest GPUs it needs)."""
    for n in counts:
        found = made(n)
        if found is not None:
            return [found]
    return []


class Slot(NamedTuple):
    """A suggestion's place in the ranking before it is evaluated: what `Ranking.key` reads of it."""

    lever: str
    gpu: str
    num_gpus: int
    memory_bytes: int
    usd_per_hour: float | None


def cheapest_first_fits(
    ranking: Ranking,
    options: Sequence[Sequence[Slot]],
    made: Callable[[int, Slot], S | None],
    want: int,
    keep: Callable[[int, S], bool] | None = None,
) -> list[S]:
    """`ranking.cheapest` of each option's `first_fit` (an option: one lever on one GPU type, its
    slots the counts to try, fewest first), keeping only the first fits `keep` accepts, cut to
    `want`, as evaluating every option would give, but evaluating only the slots ranked before the
    answer's last: all slots in ranking order (ties in option order, as the stable sort of the full
    list has them), an option's first slot that `made` gives being its first fit. That holds because
    an option's slots rank in count order (one GPU type: its price grows with the count, and
    the count is the next key), which is checked: a ValueError otherwise."""
    order: list[tuple[tuple[bool, float, int, int, int], int, int]] = []
    for i, slots in enumerate(options):
        keys = [ranking.key(slot) for slot in slots]
        if any(a >= b for a, b in pairwise(keys)):
            raise ValueError(f"option {i}: its slots do not rank in count order")
        order += [(key, i, j) for j, key in enumerate(keys)]
    order.sort()
    done: set[int] = set()
    found: list[S] = []
    for _key, i, j in order:
        if i in done:
            continue
        got = made(i, options[i][j])
        if got is None:
            continue
        done.add(i)
        if keep is None or keep(i, got):
            found.append(got)
            if len(found) >= want:
                break
    return found
