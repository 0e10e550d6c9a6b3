"""The one serializer: a report (dataclasses all the way down) -> plain JSON data.

A NamedTuple (the small values built at start-up: a Reserve, a Change) is written as an object of
its fields, like a dataclass.

Every dataclass field is written under its own name, except fields marked `metadata={"json": False}`;
a class may list computed properties to add in `__json_properties__`. Floats that are not finite
become null (JSON has no Infinity), so the output is always valid JSON. A lone surrogate (from a
config.json escape such as "\\ud800", or a non-UTF-8 byte in a path given on the command line) becomes
U+FFFD in every string and key: `json.dumps` would write it as a "\\ud800" escape that strict parsers
(and any UTF-8 encoder) reject. This is the one place; the text output shows the escape instead (`safe`).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import fields, is_dataclass
from typing import Any

__all__ = ["to_data", "to_json"]

# Every surrogate code point: a Python str never holds a valid pair (those decode to one code point).
_SURROGATE = re.compile("[\ud800-\udfff]")


def to_data(value: Any) -> Any:
    if is_dataclass(value) and not isinstance(value, type):
        out = {f.name: to_data(getattr(value, f.name)) for f in fields(value) if f.metadata.get("json", True)}
        for name in getattr(type(value), "__json_properties__", ()):
            out[name] = to_data(getattr(value, name))
        return out
    if isinstance(value, tuple) and hasattr(value, "_asdict"):  # a NamedTuple value: an object
        return {name: to_data(v) for name, v in value._asdict().items()}
    if isinstance(value, dict):
        return {_text(str(k)): to_data(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, frozenset, set)):
        items = sorted(value) if isinstance(value, (frozenset, set)) else value
        return [to_data(v) for v in items]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, str):
        return _text(value)
    return value


def _text(value: str) -> str:
    """`value` with each lone surrogate replaced by U+FFFD, so the JSON is valid UTF-8."""
    return value if value.isascii() else _SURROGATE.sub("\ufffd", value)


def to_json(value: Any) -> str:
    return json.dumps(to_data(value), indent=2, allow_nan=False)
