"""core/search.cheapest_first_fits: the ranking's cheapest of every option's first fit, as evaluating
every option gives it, whatever fits (ties of price, GPUs and memory included)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusize.core.search import Ranking, Slot, cheapest_first_fits, first_fit

RANKING = Ranking(("a", "b"))
#: One option: a GPU type's price per GPU (None: unpriced), memory per GPU, its counts, and the
#: counts at which it fits.
OPTION = st.tuples(
    st.sampled_from([None, 1.0, 2.0, 2.5]),
    st.sampled_from([1, 2]),
    st.lists(st.sampled_from([1, 2, 4, 8]), min_size=0, max_size=4, unique=True).map(sorted),
    st.sets(st.sampled_from([1, 2, 4, 8])),
)


def slots(i: int, price: float | None, memory: int, counts: list[int]) -> list[Slot]:
    return [Slot("a", f"gpu{i % 3}", n, memory * n, price * n if price else None) for n in counts]


@settings(max_examples=300, deadline=None)
@given(options=st.lists(OPTION, max_size=8), want=st.integers(1, 4), drop=st.sets(st.integers(0, 7)))
def test_cheapest_first_fits_equals_ranking_every_first_fit(
    options: list[tuple[float | None, int, list[int], set[int]]], want: int, drop: set[int]
) -> None:
    built = [slots(i, price, memory, counts) for i, (price, memory, counts, _fit) in enumerate(options)]
    tried: list[tuple[int, int]] = []

    def made(i: int, slot: Slot) -> Slot | None:
        tried.append((i, slot.num_gpus))
        return slot if slot.num_gpus in options[i][3] else None

    def keep(i: int, _s: Slot) -> bool:
        return i not in drop

    def at(i: int, n: int) -> Slot | None:  # option i's slot at n GPUs when it fits there
        return next(x for x in built[i] if x.num_gpus == n) if n in options[i][3] else None

    every = [
        (i, s)
        for i, opt in enumerate(built)
        for s in first_fit([x.num_gpus for x in opt], lambda n, i=i: at(i, n))
    ]
    kept = [s for i, s in every if keep(i, s)]
    assert cheapest_first_fits(RANKING, built, made, want, keep) == RANKING.cheapest(kept, want)
    assert len(tried) == len(set(tried))  # each slot evaluated once at most


def test_slots_out_of_count_order_are_refused() -> None:
    cheaper_at_two = [Slot("a", "x", 1, 10, 2.0), Slot("a", "x", 2, 20, 1.0)]
    with pytest.raises(ValueError, match="count order"):
        cheapest_first_fits(RANKING, [cheaper_at_two], lambda i, s: s, 1)
