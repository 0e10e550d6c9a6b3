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

import functools
import json
import math
import re
from dataclasses import fields, is_dataclass
from typing import Any

__all__ = ["to_data", "to_json"]

# Every surrogate code point: a Python str never holds a valid pair (those decode to one code point).
_SURROGATE = re.compile("[\ud800-\udfff]")


@functools.cache
def _json_names(cls: type) -> tuple[str, ...]:
    """The names a dataclass is written under, in order: its JSON fields, then its listed properties
    (found once per class: `dataclasses.fields` rebuilds its tuple on every call)."""
    own = tuple(f.name for f in fields(cls) if f.metadata.get("json", True))
    return own + tuple(getattr(cls, "__json_properties__", ()))


def to_data(value: Any) -> Any:
    if is_dataclass(value) and not isinstance(value, type):
        return {name: to_data(getattr(value, name)) for name in _json_names(type(value))}
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
    """`json.dumps(to_data(value), indent=2, allow_nan=False)`, written by `_indented`: with an indent
    the json module uses its pure-Python encoder (about a third of `fit --json`'s own time)."""
    parts: list[str] = []
    _indented(to_data(value), "\n", parts)
    return "".join(parts)


_ASCII = json.encoder.encode_basestring_ascii  # the C function json.dumps uses for strings (ensure_ascii)
_FLOAT = float.__repr__
_INT = int.__repr__


def _indented(value: Any, newline: str, out: list[str]) -> None:
    """Append `value` as json.dumps(indent=2) writes it: item separator ',' then a newline and the
    indent; key separator ': '; empty containers as {} and []; floats by repr; non-finite refused."""
    if isinstance(value, str):
        out.append(_ASCII(value))
    elif value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, int):
        out.append(_INT(value))
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError("Out of range float values are not JSON compliant")
        out.append(_FLOAT(value))
    elif isinstance(value, dict):
        if not value:
            out.append("{}")
            return
        inner = newline + "  "
        out.append("{")
        first = True
        for key, item in value.items():
            out.append(inner if first else "," + inner)
            first = False
            out.append(_ASCII(key))
            out.append(": ")
            _indented(item, inner, out)
        out.append(newline + "}")
    elif isinstance(value, (list, tuple)):
        if not value:
            out.append("[]")
            return
        inner = newline + "  "
        out.append("[")
        for i, item in enumerate(value):
            out.append(inner if i == 0 else "," + inner)
            _indented(item, inner, out)
        out.append(newline + "]")
    else:
        raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")
