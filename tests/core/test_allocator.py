"""The caching-allocator replay: exact rules of c10/cuda/CUDACachingAllocator.cpp (torch 2.11) on small
sequences, and invariants (hypothesis)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from gpusize.core import allocator
from gpusize.core.allocator import Trace, replay, round_size, segment_size
from tests.core.test_allocator_pinned import _trace as _pinned_trace

MIB = 1 << 20


def test_rounding_and_segments() -> None:
    # kMinBlockSize 512; small requests (<= 1 MiB) share 2 MiB segments, 1-10 MiB open 20 MiB ones,
    # larger ones a segment of their own rounded up to 2 MiB.
    assert round_size(1) == 512 and round_size(513) == 1024 and round_size(4096) == 4096
    assert segment_size(1 * MIB) == 2 * MIB
    assert segment_size(1 * MIB + 512) == 20 * MIB and segment_size(10 * MIB - 512) == 20 * MIB
    assert segment_size(10 * MIB) == 10 * MIB and segment_size(10 * MIB + 1) == 12 * MIB


def test_a_freed_block_is_split_and_the_next_large_request_needs_a_new_segment() -> None:
    t = Trace()
    t.free(t.alloc(100 * MIB))  # cached: one 100 MiB segment
    t.alloc(30 * MIB)  # best fit splits it: 30 used, 70 cached
    t.alloc(100 * MIB)  # 70 MiB is too small: a second 100 MiB segment
    peaks = replay(t)
    assert peaks.allocated_bytes == 130 * MIB and peaks.reserved_bytes == 200 * MIB
    # expandable segments: the free tail grows into the request, 20 MiB pages
    assert replay(t, expandable_segments=True).reserved_bytes == 140 * MIB


def test_medium_requests_share_20_mib_segments_and_small_ones_2_mib() -> None:
    t = Trace()
    for _ in range(5):
        t.alloc(5 * MIB)  # 4 per 20 MiB segment (the 5th opens a second one)
    for _ in range(3):
        t.alloc(512 * 1024)  # 4 per 2 MiB small segment
    assert replay(t).reserved_bytes == 2 * 20 * MIB + 2 * MIB


def test_a_block_is_not_split_when_one_mib_or_less_would_be_left() -> None:
    t = Trace()
    t.free(t.alloc(12 * MIB))
    t.alloc(11 * MIB + 512 * 1024)  # 0.5 MiB left: the whole 12 MiB block is handed out and counted
    assert replay(t).allocated_bytes == 12 * MIB


def test_freed_neighbours_merge_inside_a_segment_only() -> None:
    t = Trace()
    a, b = t.alloc(40 * MIB), t.alloc(40 * MIB)
    t.free(a)
    t.free(b)  # two segments: 40 + 40 MiB cached, never merged
    t.alloc(60 * MIB)
    assert replay(t).reserved_bytes == 140 * MIB
    t = Trace()
    whole = t.alloc(80 * MIB)
    t.free(whole)
    a, b = t.alloc(40 * MIB), t.alloc(40 * MIB)  # both halves of one segment
    t.free(a)
    t.free(b)  # merged back into 80 MiB
    t.alloc(60 * MIB)
    assert replay(t).reserved_bytes == 80 * MIB


def test_near_full_the_allocator_frees_its_cache_and_retries() -> None:
    t = Trace()
    t.free(t.alloc(100 * MIB))
    t.alloc(30 * MIB)
    t.free(t.alloc(50 * MIB))  # reuses the 70 MiB remainder
    t.alloc(120 * MIB)
    assert replay(t).reserved_bytes == 220 * MIB
    # with room for 200 MiB the 120 MiB segment does not fit at first: nothing is unsplit and free,
    # so it runs out of memory; with 160 MiB of room a fresh start would have fit
    assert replay(t, capacity=200 * MIB).out_of_memory
    t = Trace()
    t.free(t.alloc(100 * MIB))  # one free, unsplit segment: released when memory runs short
    t.alloc(150 * MIB)
    tight = replay(t, capacity=160 * MIB)
    assert not tight.out_of_memory and tight.reserved_bytes == 150 * MIB


def test_memory_outside_pytorch() -> None:
    assert allocator.cublas_workspace_bytes("Hopper") == 64 * MIB
    assert allocator.cublas_workspace_bytes("Ampere") == 2 * (8 * MIB + 128 * 1024)
    assert allocator.NCCL_CONNECTION_BYTES == 9_633_792  # LL + LL128 + SIMPLE
    assert allocator.nccl_buffer_bytes(1, 32) == 0
    assert allocator.nccl_buffer_bytes(8, 32, 3) == 32 * 3 * 9_633_792


events = st.lists(
    st.tuples(st.booleans(), st.integers(1, 64 * MIB)),
    min_size=1,
    max_size=80,
)


def _trace_of(steps: list[tuple[bool, int]]) -> Trace:
    """The trace of `events`' steps: a free of one live block (picked by the size drawn), else an
    allocation of that size."""
    t, live = Trace(), []
    for free, size in steps:
        if free and live:
            t.free(live.pop(size % len(live)))
        else:
            live.append(t.alloc(size))
    return t


@settings(max_examples=80, deadline=None)
@given(events, st.booleans())
def test_reserved_never_below_allocated(steps: list[tuple[bool, int]], expandable: bool) -> None:
    t, live, made = Trace(), [], []
    for free, size in steps:
        if free and live:
            t.free(live.pop(size % len(live)))
        else:
            live.append(t.alloc(size))
            made.append(size)
    peaks = replay(t, expandable_segments=expandable)
    assert peaks.reserved_bytes >= peaks.allocated_bytes >= max(round_size(s) for s in made)
    # with room for exactly the unlimited reserved peak, nothing runs out
    assert not replay(t, expandable_segments=expandable, capacity=peaks.reserved_bytes).out_of_memory


@settings(max_examples=80, deadline=None)
@given(events, st.booleans(), st.integers(0, 1 << 12), st.integers(0, 1 << 20))
def test_a_replay_holds_for_its_whole_capacity_range(
    steps: list[tuple[bool, int]], expandable: bool, mib: int, pick: int
) -> None:
    # training/device.py reuses a capacity-limited replay for any capacity in its range: a replay at
    # another capacity of that range gives the same peaks and the same range
    t = _trace_of(steps)
    first = replay(t, expandable_segments=expandable, capacity=mib * MIB)
    low, high = first.capacity_low, first.capacity_high
    assert low <= mib * MIB and (high is None or mib * MIB < high)
    for other in {low, (high or low + (1 << 40)) - 1, low + pick % max((high or low + 1) - low, 1)}:
        assert replay(t, expandable_segments=expandable, capacity=other) == first


@settings(max_examples=80, deadline=None)
@given(events, st.booleans(), st.lists(st.integers(0, 1 << 12), min_size=1, max_size=6))
def test_a_replayer_gives_what_a_fresh_replay_gives(
    steps: list[tuple[bool, int]], expandable: bool, mibs: list[int]
) -> None:
    t = _trace_of(steps)
    saved = allocator.SNAPSHOT_BYTES
    try:
        allocator.SNAPSHOT_BYTES = 8 * MIB  # snapshots every few requests of these small traces
        replayer = allocator.Replayer(t, expandable_segments=expandable)
    finally:
        allocator.SNAPSHOT_BYTES = saved
    assert replayer.free == replay(t, expandable_segments=expandable)
    for mib in mibs:
        assert replayer.at(mib * MIB) == replay(t, expandable_segments=expandable, capacity=mib * MIB)


@given(st.lists(st.integers(-3, 5 * MIB), max_size=40), st.integers(0, 4))
def test_allocs_and_frees_write_the_events_of_one_call_each(sizes: list[int], before: int) -> None:
    one, bulk = Trace(), Trace()
    for t in (one, bulk):
        for _ in range(before):
            t.alloc(1)
    handles = [one.alloc(size) for size in sizes]
    for h in reversed(handles):
        one.free(h)
    assert bulk.allocs(sizes) == handles
    bulk.frees(handles[::-1])
    assert bulk == one


@settings(max_examples=150, deadline=None)
@given(events, st.booleans(), st.integers(0, 5))
def test_allocated_bounds_hold_the_replayed_allocated_peak(
    steps: list[tuple[bool, int]], expandable: bool, seed: int
) -> None:
    # training/device.py decides a fit from a capacity-limited replay at these bounds' capacities,
    # without the unlimited replay: the true allocated peak must lie between them
    t = _trace_of(steps)
    for trace in (t, _pinned_trace(seed)):
        low, high = allocator.allocated_bounds(trace, expandable)
        assert low <= replay(trace, expandable_segments=expandable).allocated_bytes <= high
        if expandable:  # every block holds exactly its request
            assert low == high
