"""The caching-allocator replay gives the same peaks as before its hot path was rewritten (issue 24:
integer block keys, inlined pool operations): random traces of small, medium and large requests,
default and expandable segments, unlimited and at four capacities; the figures were computed with the
tuple-keyed pools of 3badaeb."""

from __future__ import annotations

import hashlib
import json
import random

from gpusize.core.allocator import Replayer, Trace, replay

MIB = 1 << 20
#: sha256 of the JSON of every row below, as 3badaeb's allocator computed them.
PINNED_SHA256 = "b5527e89d3a07ffe3dee75c0f0d2e527773c6d8b73c54d626987e5b76bd23f5a"
#: The row of seed 0 with expandable segments, spelled out.
SEED0_EXPANDABLE = [
    19980706816, 22292725760,
    10362123776, 11112808448, True, 11112808448, 11385438208,
    16199249408, 17479761920, True, 17479761920, 17878220800,
    19546741760, 21109932032, True, 21109932032, 21382561792,
    19980706816, 22292725760, False, 22292725760, None,
]  # fmt: skip


def _trace(seed: int) -> Trace:
    rng = random.Random(seed)
    t, live = Trace(), []
    for _ in range(3000):
        if live and rng.random() < 0.45:
            t.free(live.pop(rng.randrange(len(live))))
        else:
            kind = rng.random()
            if kind < 0.3:
                size = rng.randrange(1, MIB)
            elif kind < 0.6:
                size = rng.randrange(MIB, 10 * MIB)
            else:
                size = rng.randrange(10 * MIB, 400 * MIB)
            live.append(t.alloc(size))
    return t


def test_replays_are_those_of_the_tuple_keyed_allocator() -> None:
    rows: list[list[object]] = []
    for seed in range(6):
        t = _trace(seed)
        for expandable in (False, True):
            free = replay(t, expandable)
            replayer = Replayer(t, expandable)
            row: list[object] = [free.allocated_bytes, free.reserved_bytes]
            for fraction in (0.5, 0.8, 0.95, 1.0):
                capacity = int(free.reserved_bytes * fraction)
                peaks = replayer.at(capacity)
                assert peaks == replay(t, expandable, capacity)
                row += [
                    peaks.allocated_bytes,
                    peaks.reserved_bytes,
                    peaks.out_of_memory,
                    peaks.capacity_low,
                    peaks.capacity_high,
                ]
            rows.append(row)
    assert rows[1] == SEED0_EXPANDABLE
    assert hashlib.sha256(json.dumps(rows).encode()).hexdigest() == PINNED_SHA256
