"""PyTorch's CUDA caching allocator, replayed (pure): from a sequence of tensor allocations and frees,
the allocated peak (`torch.cuda.max_memory_allocated`) and the reserved peak
(`torch.cuda.max_memory_reserved`: what the allocator took from the driver), with the default
allocator or `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True`; and the memory outside it (CUDA
context, NCCL communicators) that makes up what `nvidia-smi` shows.

The rules are those of `c10/cuda/CUDACachingAllocator.cpp` (pytorch/pytorch @ 001074d2, the same
constants as the torch 2.11.0 header `c10/core/AllocatorConfig.h`):

- every request is rounded up to 512 B (`round_size`);
- requests up to 1 MiB come from the small pool, in 2 MiB segments; larger ones from the large pool:
  1-10 MiB requests open a 20 MiB segment, >= 10 MiB ones a segment of exactly the request rounded
  up to 2 MiB (`get_allocation_size`);
- a request takes the smallest cached free block that holds it (best fit, `get_free_block`); the
  block is split when more than 1 MiB would be left (large pool) or at least 512 B (small pool,
  expandable segments) (`should_split`); freed blocks merge with free neighbours of the same segment,
  never across segments;
- cached memory goes back to the driver only when a cudaMalloc fails (`release_cached_blocks`), so
  without a capacity the reserved figure only grows;
- expandable segments: one segment per pool that grows in 2 MiB (small) / 20 MiB (large) pages.

A `Trace` is built by the inference and training models from their own tensor sequences; only the
order and the sizes matter here.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from dataclasses import field
from itertools import accumulate
from operator import neg
from typing import TYPE_CHECKING

from gpusize.dataclass import dataclass
from gpusize.units import MIB

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = [
    "CUBLAS_WORKSPACE_BYTES",
    "CUBLAS_WORKSPACE_BYTES_SM90",
    "CUBLAS_WORKSPACES",
    "KIB512",
    "LARGE_BUFFER",
    "MIN_LARGE_ALLOC",
    "NCCL_CONNECTION_BYTES",
    "ROUND_LARGE",
    "SMALL_BUFFER",
    "SMALL_SIZE",
    "SNAPSHOT_BYTES",
    "AllocatorPeaks",
    "Replayer",
    "Trace",
    "allocated_bounds",
    "cublas_workspace_bytes",
    "nccl_buffer_bytes",
    "replay",
    "round_size",
    "segment_size",
]

#: kMinBlockSize: every request is rounded up to a multiple of 512 bytes.
KIB512 = 512
#: kSmallSize: requests up to 1 MiB are "small" and share 2 MiB segments (kSmallBuffer).
SMALL_SIZE = 1 * MIB
SMALL_BUFFER = 2 * MIB
#: kMinLargeAlloc: 1-10 MiB requests open a 20 MiB segment (kLargeBuffer); larger ones a segment of
#: their own size rounded up to kRoundLarge (2 MiB).
MIN_LARGE_ALLOC = 10 * MIB
LARGE_BUFFER = 20 * MIB
ROUND_LARGE = 2 * MIB

#: cuBLAS workspace per (handle, stream), taken from the caching allocator (aten/src/ATen/cuda/
#: CublasHandlePool.cpp: `sm90 ? 4096 * 8 * 1024 : 4096 * 1024 * 2 + 16 * 1024 * 8`). Measured on the
#: H200 (tests/data/reference/measured): exactly 32 MiB after the first matmul, 64 MiB once cuBLASLt has
#: run too; we count both from the start.
CUBLAS_WORKSPACE_BYTES_SM90 = 4096 * 8 * 1024
CUBLAS_WORKSPACE_BYTES = 4096 * 1024 * 2 + 16 * 1024 * 8
CUBLAS_WORKSPACES = 2
#: NCCL device buffers per connection with the LL, LL128 and SIMPLE protocols (NVIDIA/nccl @ 5067397c,
#: src/include/device.h: 524,288 + 4,915,200 + 4,194,304 B = 9.19 MiB).
NCCL_CONNECTION_BYTES = 524_288 + 4_915_200 + 4_194_304


def round_size(size: int) -> int:
    """A request as the allocator accounts it: at least 512 B, rounded up to 512 B."""
    return max(KIB512, -(-size // KIB512) * KIB512)


def segment_size(size: int) -> int:
    """The segment a request opens when no cached block holds it (get_allocation_size)."""
    if size <= SMALL_SIZE:
        return SMALL_BUFFER
    if size < MIN_LARGE_ALLOC:
        return LARGE_BUFFER
    return -(-size // ROUND_LARGE) * ROUND_LARGE


def cublas_workspace_bytes(architecture: str) -> int:
    """cuBLAS + cuBLASLt workspaces inside PyTorch's allocated memory: 2 x 32 MiB on Hopper and later
    (sm90+), 2 x 8.125 MiB before."""
    hopper = architecture.split()[0] in ("Hopper", "Blackwell")
    return CUBLAS_WORKSPACES * (CUBLAS_WORKSPACE_BYTES_SM90 if hopper else CUBLAS_WORKSPACE_BYTES)


def nccl_buffer_bytes(num_gpus: int, channels: int, peers: int = 2) -> int:
    """NCCL device buffers of one data-parallel communicator per GPU: channels x peers per channel
    (ring: send and receive neighbour) x one connection's buffers. 0 on one GPU."""
    if num_gpus <= 1:
        return 0
    return channels * peers * NCCL_CONNECTION_BYTES


@dataclass
class Trace:
    """A sequence of tensor allocations and frees. `alloc` returns a handle for `free`; `persistent`
    sizes are allocated first and never freed (weights, caches) in the order given."""

    events: list[int] = field(default_factory=list)
    _next: int = 0

    def alloc(self, size: int) -> int:
        """Allocate `size` bytes (0 is ignored); returns the handle to free it with."""
        handle = self._next = self._next + 1
        if size > 0:
            self.events += (handle, size)
        return handle

    def free(self, handle: int) -> None:
        self.events += (-handle, 0)

    def temp(self, size: int) -> None:
        """A tensor allocated and freed at once (an op's workspace or a short-lived result)."""
        self.free(self.alloc(size))

    def allocs(self, sizes: Sequence[int]) -> list[int]:
        """`alloc` of each size in turn, in one step: their handles (the training trace makes ~4,000
        tensors a step; a call each was ~15M of a `train` command's instructions; the slices below
        fill the events without a Python step per tensor)."""
        first, count = self._next + 1, len(sizes)
        self._next += count
        handles = list(range(first, first + count))
        if count and min(sizes) > 0:
            pairs = [0] * (2 * count)
            pairs[0::2], pairs[1::2] = handles, sizes
            self.events += pairs
        else:  # a size 0 takes a handle and no event, as in `alloc`
            self.events += [x for pair in zip(handles, sizes, strict=True) if pair[1] > 0 for x in pair]
        return handles

    def frees(self, handles: Sequence[int]) -> None:
        """`free` of each handle in turn, in one step."""
        pairs = [0] * (2 * len(handles))
        pairs[0::2] = map(neg, handles)
        self.events += pairs


@dataclass(frozen=True)
class AllocatorPeaks:
    """Peaks of one replay, in bytes."""

    allocated_bytes: int
    reserved_bytes: int
    #: With a capacity: a request that no release of cached memory could satisfy.
    out_of_memory: bool = False
    #: With a capacity: the replay takes the same path (so gives the same peaks) for every capacity
    #: in [capacity_low, capacity_high); None: no bound above. Its only branches on the capacity are
    #: the comparisons `reserved + new segment > capacity`, so any capacity on the same side of
    #: each value compared replays identically (training/device.py caches replays by this range).
    capacity_low: int = 0
    capacity_high: int | None = None

    @property
    def fragmentation_bytes(self) -> int:
        """Reserved but not allocated at the reserved peak's worst: what the allocator's cache adds."""
        return self.reserved_bytes - self.allocated_bytes


#: Inside the replay every size and address is in units of KIB512 (every request is rounded to it,
#: every segment and page is a multiple of it): the figures stay below 2^30 units (512 GiB), Python's
#: one-digit integers, whose arithmetic, comparisons and hashes take the fast paths.
_UNIT = 9
_SMALL_UNITS = SMALL_SIZE >> _UNIT
#: A block is keyed by its address: a segment is placed after the last one, one unit apart (so no
#: block of one ends where a block of the next begins, and neighbours never merge across segments),
#: in the order the segments were made, so addresses sort as the (segment, offset) pairs of the best
#: fit (get_free_block's BlockComparatorSize). A free block is listed as `size << _KEY | address`:
#: integers sort as (size, segment, offset) and cost no tuple per request (addresses < 2^48 units).
_KEY = 48
_KEY_MASK = (1 << _KEY) - 1


def _segment_units(size: int) -> int:
    """segment_size in units (a segment is a multiple of 2 MiB)."""
    return segment_size(size << _UNIT) >> _UNIT


class _Pool:
    """One pool (small or large) of the default allocator: segments of blocks, free blocks by size,
    in units of KIB512. (`_run` inlines `malloc` and `release`: keep the two in step.)"""

    def __init__(self, small: bool) -> None:
        self.small = small
        #: the smallest remainder that is split off a block (should_split: one unit in the small
        #: pool, more than 1 MiB in the large one)
        self.split_min = 1 if small else _SMALL_UNITS + 1
        # free blocks as `size << _KEY | address`, sorted; per block address -> size << 1 | free, and
        # per block end (address + size) -> address
        self.free: list[int] = []
        self.blocks: dict[int, int] = {}
        self.ends: dict[int, int] = {}
        #: the address of the next segment
        self.top = 0
        self.reserved = 0
        #: segment address -> size
        self.segment_sizes: dict[int, int] = {}

    def copy(self) -> _Pool:
        """An independent copy."""
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        new.free, new.blocks, new.ends = list(self.free), dict(self.blocks), dict(self.ends)
        new.segment_sizes = dict(self.segment_sizes)
        return new

    def cached(self, size: int) -> bool:
        """Whether a cached free block holds `size` (no new segment needed)."""
        free = self.free
        return bool(free) and free[-1] >= size << _KEY

    def new_segment_units(self, size: int) -> int:
        return _segment_units(size)

    def new_segment(self, size: int) -> tuple[int, int]:
        """Open the segment for `size` (its whole range one block, not yet listed): (address, size)."""
        block, key = _segment_units(size), self.top
        self.top += block + 1
        self.reserved += block
        self.segment_sizes[key] = block
        self.ends[key + block] = key
        return key, block

    def release_cached(self) -> None:
        """release_cached_blocks: give every segment that is one free block back to the driver."""
        # the segments that are one free block, found here rather than tracked on every request
        # (only a capacity-limited replay asks; the order of giving them back changes nothing)
        blocks = self.blocks
        idle = [seg for seg, size in self.segment_sizes.items() if blocks.get(seg) == size << 1 | 1]
        for seg in idle:
            self._drop(seg)
            self.reserved -= self.segment_sizes.pop(seg)

    def _put(self, key: int, size: int, free: bool) -> None:
        self.blocks[key] = size << 1 | free
        self.ends[key + size] = key
        if free:
            insort(self.free, size << _KEY | key)

    def _drop(self, key: int) -> None:
        value = self.blocks.pop(key)
        size = value >> 1
        del self.ends[key + size]
        if value & 1:
            free = self.free
            del free[bisect_left(free, size << _KEY | key)]

    def malloc(self, size: int) -> tuple[int, int]:
        """Take a block for `size` (already rounded); returns (block address, block size). (_drop and
        _put inlined, an entry rewritten only where it changes.)"""
        free, blocks, ends = self.free, self.blocks, self.ends
        i = bisect_left(free, size << _KEY)
        if i < len(free):  # its entries stay: `ends` of its end, `blocks` rewritten below
            entry = free.pop(i)
            block, key = entry >> _KEY, entry & _KEY_MASK
        else:
            key, block = self.new_segment(size)
        if block - size >= self.split_min:
            rest = key + size
            blocks[rest] = (block - size) << 1 | 1
            ends[key + block], ends[rest] = rest, key
            insort(free, (block - size) << _KEY | rest)
            block = size
        blocks[key] = block << 1
        return key, block

    def release(self, key: int, size: int) -> None:
        """Free the (allocated) block of `size` bytes at `key`, merged with its free neighbours."""
        blocks, ends, free = self.blocks, self.ends, self.free
        del blocks[key]
        end = key + size
        nxt = blocks.get(end)
        if nxt is not None and nxt & 1:
            extra = nxt >> 1
            del blocks[end], ends[end]
            del free[bisect_left(free, extra << _KEY | end)]
            end += extra  # ends[end] is set below
        prev = ends.get(key)
        if prev is not None and blocks[prev] & 1:
            extra = blocks.pop(prev) >> 1
            del ends[key]
            del free[bisect_left(free, extra << _KEY | prev)]
            key = prev
        blocks[key] = (end - key) << 1 | 1
        ends[end] = key
        insort(free, (end - key) << _KEY | key)


class _ExpandablePool(_Pool):
    """One expandable segment (segment 0, so a block's key is its offset): best fit among free blocks,
    else the end of the mapped range grows (the trailing free block is extended). Reserved = the
    mapped range in pages. In units, as `_Pool`."""

    def __init__(self, page: int) -> None:
        super().__init__(True)
        self.page = page >> _UNIT
        self.end = 0

    def new_segment_units(self, size: int) -> int:
        tail = self.ends.get(self.end)
        grow = size - (self.blocks[tail] >> 1 if tail is not None and self.blocks[tail] & 1 else 0)
        return -(-(self.end + grow) // self.page) * self.page - self.reserved

    def release_cached(self) -> None:
        """Unmap the free pages at the end of the segment."""
        tail = self.ends.get(self.end)
        if tail is not None and self.blocks[tail] & 1:
            self._drop(tail)
            self.end = tail
        self.reserved = -(-self.end // self.page) * self.page

    def malloc(self, size: int) -> tuple[int, int]:
        free = self.free
        i = bisect_left(free, size << _KEY)
        if i < len(free):
            entry = free[i]
            block, off = entry >> _KEY, entry & _KEY_MASK
            self._drop(off)
        else:
            off = self.end
            tail = self.ends.get(self.end)
            if tail is not None and self.blocks[tail] & 1:
                self._drop(tail)
                off = tail
            block = size
            self.end = off + size
            self.reserved = max(self.reserved, -(-self.end // self.page) * self.page)
        if block - size >= 1:  # one unit
            self._put(off + size, block - size, True)
            block = size
        self._put(off, block, False)
        return off, block


def replay(trace: Trace, expandable_segments: bool = False, capacity: int | None = None) -> AllocatorPeaks:
    """Replay `trace` through the caching allocator: the allocated and reserved peaks. Without a
    `capacity` no cudaMalloc fails and reserved only grows. With one (bytes the allocator may take),
    a segment that would not fit first makes the allocator free every cached segment that holds no
    tensor (release_cached_blocks) and retry, as PyTorch does before raising out-of-memory;
    `out_of_memory` says when even that failed."""
    return _run(_State.fresh(expandable_segments), trace.events, capacity)


def allocated_bounds(trace: Trace, expandable_segments: bool = False) -> tuple[int, int]:
    """Bounds of `replay(trace, expandable_segments).allocated_bytes` without the replay, in one pass
    over the events (a fifth of a replay's time): the peak of the requests rounded (no block is
    smaller than its request), and the peak with each large-pool block as large as it can be: a
    block is split unless what is left is at most kSmallSize (should_split), so it holds at most
    that much more than its request; small-pool blocks, and every block with expandable segments,
    are split whenever one unit is left, so they hold exactly their request. A free counts as the
    replay counts it: once, for a handle allocated before it."""
    ev = trace.events
    slack = 0 if expandable_segments else _SMALL_UNITS
    low_of, high_of = {}, {}
    for size in set(ev[1::2]):  # a trace has few distinct sizes
        rounded = max(1, (size + KIB512 - 1) >> _UNIT)
        low_of[size], high_of[size] = rounded, rounded + slack if rounded > _SMALL_UNITS else rounded
    live: dict[int, int] = {}
    lows: list[int] = []
    highs: list[int] = []
    for handle, size in zip(ev[0::2], ev[1::2], strict=True):
        if handle > 0:
            live[handle] = size
            lows.append(low_of[size])
            highs.append(high_of[size])
        else:
            got = live.pop(-handle, None)
            if got is not None:
                lows.append(-low_of[got])
                highs.append(-high_of[got])
    return max(accumulate(lows), default=0) << _UNIT, max(accumulate(highs), default=0) << _UNIT


#: Bytes of reserved-memory growth between two snapshots kept by a `Replayer` (16 GiB: a few
#: snapshots for a GPU's worth; a capacity replay starts at most that far before it can differ). Any
#: spacing gives the same peaks; since a capacity replay is skipped where the allocated peak alone is
#: above the GPU (training/device.py), most traces get one or none, and copying the allocator costs
#: more than the replay it saves: 4 -> 16 GiB, the replays of `train Qwen3-8B --method full --seq
#: 128k` 0.40 -> 0.36 CPU s (bench/RESULTS.md, issue 24; 1 GiB -> 4 GiB before, 0.46 -> 0.41 s).
SNAPSHOT_BYTES = 16 << 30


class Replayer:
    """One trace replayed without a capacity (`free`), keeping snapshots of the allocator on the way;
    `at(capacity)` replays with a capacity from the last snapshot up to which no request would have
    met it, giving exactly `replay(trace, expandable, capacity)`: until a request's new segment would
    pass the capacity, a capacity-limited replay takes the unlimited one's path."""

    def __init__(self, trace: Trace, expandable_segments: bool = False) -> None:
        self.events, self.expandable = trace.events, expandable_segments
        self.snapshots: list[_State] = []
        self.free = _run(_State.fresh(expandable_segments), self.events, None, self.snapshots)

    def at(self, capacity: int) -> AllocatorPeaks:
        start = _State.fresh(self.expandable)
        for snap in self.snapshots:  # in replay order, `low` (the largest need before it) grows
            if snap.low > capacity:
                break
            start = snap
        return _run(start.copy(), self.events, capacity)


@dataclass
class _State:
    """The allocator part-way through a trace: next event `k`; allocated, peaks and pools in units of
    KIB512; `low`: the largest need in bytes (reserved + the new segment) of the requests before it
    that needed a new segment."""

    pools: tuple[_Pool, _Pool]
    live: dict[int, tuple[int, int, int]]
    k: int = 0
    allocated: int = 0
    peak: int = 0
    reserved_peak: int = 0
    low: int = 0

    @classmethod
    def fresh(cls, expandable: bool) -> _State:
        pools: tuple[_Pool, _Pool] = (
            (_ExpandablePool(SMALL_BUFFER), _ExpandablePool(LARGE_BUFFER))
            if expandable
            else (_Pool(True), _Pool(False))
        )
        return cls(pools, {})

    def copy(self) -> _State:
        return _State(
            (self.pools[0].copy(), self.pools[1].copy()),
            dict(self.live),
            self.k,
            self.allocated,
            self.peak,
            self.reserved_peak,
            self.low,
        )


def _run(
    state: _State, ev: list[int], capacity: int | None, snapshots: list[_State] | None = None
) -> AllocatorPeaks:
    """Replay events from `state` on (which it changes); with `snapshots` (and no capacity) keep a copy
    of the state before a request that needs a new segment, each SNAPSHOT_BYTES of growth. The
    default pools' `malloc` and `release` are inlined (the hot loop: ~8,000 events a `train`)."""
    pools, live = state.pools, state.live
    allocated, peak, reserved_peak, low = state.allocated, state.peak, state.reserved_peak, state.low
    high: int | None = None  # the capacities that take every branch below as `capacity` does: [low, high)
    oom = False
    next_snapshot = 0
    tracking = capacity is not None or snapshots is not None
    small, large = pools
    inline = type(small) is _Pool and type(large) is _Pool
    parts = tuple((p.free, p.blocks, p.ends, p.split_min) for p in pools)
    find, put, key_bits, key_mask = bisect_left, insort, _KEY, _KEY_MASK
    for k in range(state.k, len(ev), 2):
        handle = ev[k]
        if handle > 0:
            rounded = (ev[k + 1] + KIB512 - 1) >> _UNIT  # round_size in units, inlined
            if rounded < 1:
                rounded = 1
            index = 0 if rounded <= _SMALL_UNITS else 1
            free, blocks, ends, split_min = parts[index]
            i = find(free, rounded << key_bits)
            fresh = i == len(free)  # no cached block holds it: a new segment
            if fresh and tracking:
                pool = pools[index]
                need = (small.reserved + large.reserved + pool.new_segment_units(rounded)) << _UNIT
                if capacity is None:
                    assert snapshots is not None
                    if need >= next_snapshot:
                        state.k, state.allocated, state.peak, state.reserved_peak = (
                            k,
                            allocated,
                            peak,
                            reserved_peak,
                        )
                        state.low = low
                        snapshots.append(state.copy())
                        next_snapshot = need + SNAPSHOT_BYTES
                    low = max(low, need)
                else:
                    low, high = _side(need, capacity, low, high)
                    if need > capacity:
                        small.release_cached()
                        large.release_cached()
                        need = (small.reserved + large.reserved + pool.new_segment_units(rounded)) << _UNIT
                        low, high = _side(need, capacity, low, high)
                        if need > capacity:
                            oom = True
                            break
            if not inline:
                key, block = pools[index].malloc(rounded)
            else:  # _Pool.malloc
                if fresh:
                    key, block = pools[index].new_segment(rounded)
                else:
                    entry = free.pop(i)
                    block, key = entry >> key_bits, entry & key_mask
                if block - rounded >= split_min:
                    rest = key + rounded
                    blocks[rest] = (block - rounded) << 1 | 1
                    ends[key + block], ends[rest] = rest, key
                    # below the block taken; a new segment's remainder anywhere (the free list may
                    # have shrunk since `i` was found: the capacity check's release_cached)
                    put(free, (block - rounded) << key_bits | rest, 0, len(free) if fresh else i)
                    block = rounded
                blocks[key] = block << 1
            live[handle] = (index, key, block)
            allocated += block
            if allocated > peak:
                peak = allocated
            if fresh:  # a block from the cache leaves the reserved figure as it was
                reserved = small.reserved + large.reserved
                if reserved > reserved_peak:
                    reserved_peak = reserved
        else:
            got = live.pop(-handle, None)
            if got is None:
                continue
            index, key, block = got
            allocated -= block
            if not inline:
                pools[index].release(key, block)
                continue
            free, blocks, ends, _ = parts[index]  # _Pool.release
            del blocks[key]
            end = key + block
            lo = 0  # the merged block lists above every neighbour it absorbed
            if blocks.get(end, 0) & 1:
                extra = blocks.pop(end) >> 1
                del ends[end]
                lo = find(free, extra << key_bits | end)
                del free[lo]
                end += extra
            prev = ends.get(key)
            if prev is not None and blocks[prev] & 1:
                extra = blocks.pop(prev) >> 1
                del ends[key]
                lo = find(free, extra << key_bits | prev)
                del free[lo]
                key = prev
            blocks[key] = (end - key) << 1 | 1
            ends[end] = key
            put(free, (end - key) << key_bits | key, lo)
    if capacity is None:
        low = 0
    return AllocatorPeaks(
        allocated_bytes=peak << _UNIT,
        reserved_bytes=reserved_peak << _UNIT,
        out_of_memory=oom,
        capacity_low=low,
        capacity_high=high,
    )


def _side(need: int, capacity: int, low: int, high: int | None) -> tuple[int, int | None]:
    """The range [low, high) narrowed to the capacities for which `need > capacity` is as for this one."""
    if need > capacity:
        return low, need if high is None else min(high, need)
    return max(low, need), high
