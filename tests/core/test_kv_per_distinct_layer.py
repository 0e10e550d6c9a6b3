"""The KV sums run once per distinct layer (`ModelSpec.attention_layer_counts`, for speed): on every
catalog model they equal the sums over every layer, in the same first-seen order."""

from __future__ import annotations

import pytest

from gpusize.core import kvcache
from gpusize.core.parse import parse_config
from gpusize.errors import ConfigError
from gpusize.sources.catalog import load_models


def each_layer_sum(spec, kv_bytes, tp):  # type: ignore[no-untyped-def]
    return sum(
        kvcache.kv_bytes_per_token_per_layer(spec, kv_bytes, tp, la.num_key_value_heads, la)
        for la in spec.attention_layers
    )


def each_layer_groups(spec, kv_bytes, tp):  # type: ignore[no-untyped-def]
    counts: dict[tuple[str, int | None, int], int] = {}
    for la in spec.attention_layers:
        kind = "full" if la.window is None else ("chunked" if la.chunked else "sliding")
        width = kvcache.kv_bytes_per_token_per_layer(spec, kv_bytes, tp, la.num_key_value_heads, la)
        counts[kind, la.window, width] = counts.get((kind, la.window, width), 0) + 1
    return counts


@pytest.mark.parametrize("entry", load_models(), ids=lambda e: e.name)
def test_distinct_layer_sums_equal_every_layer_sums(entry) -> None:  # type: ignore[no-untyped-def]
    try:
        spec = parse_config(entry.config)
    except ConfigError:
        pytest.skip("not sized")
    counted = [(la, n) for la, n in spec.layer_counts if la in spec.attention_layers]
    assert spec.attention_layer_counts == tuple(counted)
    assert sum(n for _, n in spec.attention_layer_counts) == len(spec.attention_layers)
    order = list(dict.fromkeys(spec.attention_layers))
    assert [la for la, _ in spec.attention_layer_counts] == order
    for tp in (1, 2, 8):
        for kv_bytes in (1.0, 2.0):
            assert kvcache.kv_cache_bytes_per_token(spec, kv_bytes, tp) == each_layer_sum(spec, kv_bytes, tp)
            groups = each_layer_groups(spec, kv_bytes, tp)
            per_layer = [
                kvcache.kv_bytes_per_token_per_layer(spec, kv_bytes, tp, la.num_key_value_heads, la)
                for la in spec.attention_layers
            ]
            if spec.attention_layers:
                assert sum(per_layer) == sum(w * n for (_, _, w), n in groups.items())
