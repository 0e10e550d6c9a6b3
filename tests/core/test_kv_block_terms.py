"""`largest_context`'s bisection sums each distinct group of a KV layout once, times its count
(`_block_terms`, `_summed_blocks`): the blocks a request reserves are `blocks_per_request`'s, and
both are those of the per-group rule as it was written before (`_per_group`, vLLM's block counts
per group kind), for random layouts of every group kind, window and block size, at contexts from
none to 1M tokens."""

from __future__ import annotations

import random

from gpusize.core.kvcache import KvGroup, KvLayout, _block_terms, _summed_blocks, blocks_per_request


def _per_group(layout: KvLayout, context: int, max_num_batched_tokens: int) -> int:
    total = 0
    for group in layout.groups:
        bs = group.block_size or layout.block_size
        if group.kind == "state":
            total += group.state_blocks
        elif group.kind == "full" or group.window is None:
            total += -(-context // bs)
        elif group.kind == "sliding":
            total += -(-min(group.window - 1 + max_num_batched_tokens, context) // bs) + 1
        else:
            total += -(-min(group.window + max_num_batched_tokens, context) // bs)
    return total


def test_the_summed_terms_are_the_blocks_per_request() -> None:
    rng = random.Random(24)
    for _ in range(3_000):
        groups = tuple(
            KvGroup(
                rng.choice(["full", "sliding", "chunked", "state"]),
                rng.choice([None, 128, 512, 1024, 4096]),
                rng.choice([0, 0, 16, 32, 64]),
                rng.choice([1, 1, 2, 3]),
            )
            for _ in range(rng.randint(1, 12))
        )
        layout = KvLayout(1_024, rng.choice([16, 64, 256]), 1, groups)
        terms = _block_terms(layout)
        for context in (0, 1, 15, 16, 17, 1_000, 32_768, 131_072, 1_048_576):
            batched = rng.choice([512, 2_048, 8_192])
            expected = _per_group(layout, context, batched)
            assert (
                _summed_blocks(terms, context, batched)
                == blocks_per_request(layout, context, batched)
                == expected
            )
