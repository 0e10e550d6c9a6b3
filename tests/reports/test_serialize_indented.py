"""`to_json` writes what `json.dumps(..., indent=2, allow_nan=False)` writes (its own indented writer,
for speed: reports/serialize.py)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from gpusize.reports.serialize import to_data, to_json

finite = st.floats(allow_nan=False, allow_infinity=False)
scalars = st.none() | st.booleans() | st.integers() | finite | st.text()
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(values)
def test_the_indented_writer_is_json_dumps(value: Any) -> None:
    assert to_json(value) == json.dumps(to_data(value), indent=2, allow_nan=False)


def test_edge_values() -> None:
    for value in ({}, [], {"a": {}}, [[]], 1e300, -0.0, "\ud800", 'é\n"\\', {"k": (1, 2)}, 10**40):
        assert to_json(value) == json.dumps(to_data(value), indent=2, allow_nan=False)
