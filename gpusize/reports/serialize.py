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
import secrets
from collections.abc import Iterable
from contextvars import ContextVar
from dataclasses import fields, is_dataclass
from math import isfinite
from typing import Any

__all__ = ["json_lines", "to_data", "to_json"]

# Every surrogate code point: a Python str never holds a valid pair (those decode to one code point).
# Compiled where first used (`re`'s cache), not on import: most text holds none (start-up).
_SURROGATE = "[\ud800-\udfff]"


@functools.cache
def _json_names(cls: type) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The names a dataclass is written under, in order: its JSON fields, then its listed properties
    (found once per class: `dataclasses.fields` rebuilds its tuple on every call)."""
    own = tuple(f.name for f in fields(cls) if f.metadata.get("json", True))
    return own, tuple(getattr(cls, "__json_properties__", ()))


def to_data(value: Any) -> Any:
    """`value` as plain JSON data: each type's conversion is found once (`_conversion`) and kept, so
    a report of a few hundred values is not a chain of isinstance tests per value (a batch of
    10,000 rows serialises a few million)."""
    kind = type(value)
    convert = _CONVERSIONS.get(kind)
    if convert is None:
        convert = _conversion(kind)
        if not issubclass(kind, type):  # a class given as a value: not one of its instances
            _CONVERSIONS[kind] = convert
    return convert(value)


def _same(value: Any) -> Any:
    return value


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _items(value: Any) -> list[Any]:
    out = []
    # None, bools, ints and ASCII text as they are, without a call (a batch of 10,000 rows converts a
    # few million values; bench/RESULTS.md)
    for v in value:
        kind = type(v)
        out.append(
            v if v is None or kind is int or kind is bool or (kind is str and v.isascii()) else to_data(v)
        )
    return out


def _sorted_items(value: Any) -> list[Any]:
    return [to_data(v) for v in sorted(value)]


def _mapping(value: dict[Any, Any]) -> dict[str, Any]:
    return {_text(str(k)): to_data(v) for k, v in value.items()}


def _named(value: Any) -> dict[str, Any]:
    return {name: to_data(v) for name, v in value._asdict().items()}


def _dataclass(names: tuple[tuple[str, ...], tuple[str, ...]]) -> Any:
    own, computed = names

    def convert(value: Any) -> dict[str, Any]:
        held = value.__dict__  # a field's value, without getattr's look-up through the class
        out = {}
        for name in own:  # None, bools, ints, ASCII text and finite floats as they are, without a call
            v = held[name]
            kind = type(v)
            if v is None or kind is int or kind is bool or (kind is str and v.isascii()):
                out[name] = v
            elif kind is float:
                out[name] = v if isfinite(v) else None
            else:
                out[name] = to_data(v)
        for name in computed:
            out[name] = to_data(getattr(value, name))
        return out

    return convert


def _conversion(kind: type) -> Any:
    """How a value of type `kind` is written: a dataclass as an object of its JSON names, a
    NamedTuple as an object of its fields, a dict with text keys, a sequence as a list (a set
    sorted), a float that is not finite as null, text with lone surrogates replaced; else as is."""
    if is_dataclass(kind) and not issubclass(kind, type):
        convert = _dataclass(_json_names(kind))
        return _shareable(convert) if getattr(kind, "__json_shared__", False) else convert
    if issubclass(kind, tuple) and hasattr(kind, "_asdict"):
        return _named
    if issubclass(kind, dict):
        return _mapping
    if issubclass(kind, (frozenset, set)):
        return _sorted_items
    if issubclass(kind, (list, tuple)):
        return _items
    if issubclass(kind, float):
        return _finite
    if issubclass(kind, str):
        return _text
    return _same


#: Type -> its conversion, filled as types are met (a few dozen report types).
_CONVERSIONS: dict[type, Any] = {}


def _text(value: str) -> str:
    """`value` with each lone surrogate replaced by U+FFFD, so the JSON is valid UTF-8. Text that
    encodes as UTF-8 holds none (the codec refuses every surrogate), found without the pattern's
    scan: a fit's notes are non-ASCII prose, some twenty strings a row of a batch."""
    if value.isascii():
        return value
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return re.sub(_SURROGATE, "\ufffd", value)
    return value


class _Shared:
    """The values of `__json_shared__` classes met while writing JSON Lines (`json_lines`): each
    value's text, found once, by identity; a row holds a placeholder string in its place until it
    is encoded. The placeholder carries a random nonce, so no string of a report can be one."""

    def __init__(self) -> None:
        self.prefix = f"\x00gpusize-shared-{secrets.token_hex(16)}-"
        #: id(value) -> (value, its placeholder, the placeholder as the encoder writes it, the value's
        #: JSON text); the value is kept so that its id is not reused while the lines are written
        self.texts: dict[int, tuple[Any, str, str, str]] = {}
        #: the shared values met in the row being converted
        self.used: list[int] = []

    def placeholder(self, value: Any, convert: Any) -> str:
        key = id(value)
        found = self.texts.get(key)
        if found is None:
            token = _SHARING.set(None)  # the shared value's own text, written in full
            try:
                text = _LINE(convert(value))
            finally:
                _SHARING.reset(token)
            marker = f"{self.prefix}{len(self.texts)}\x00"
            found = self.texts[key] = (value, marker, _LINE(marker), text)
        self.used.append(key)
        return found[1]

    def line(self, value: Any) -> str:
        """`value`'s JSON text, its shared values written in place of their placeholders."""
        self.used.clear()
        text = _LINE(to_data(value))
        for key in dict.fromkeys(self.used):
            _, _, marker, shared = self.texts[key]
            text = text.replace(marker, shared)
        return text


#: The shared values of the JSON Lines being written; None elsewhere (every value written in full).
_SHARING: ContextVar[_Shared | None] = ContextVar("gpusize_json_sharing", default=None)


def _shareable(convert: Any) -> Any:
    """A `__json_shared__` class's conversion: in full, or while `json_lines` writes, a placeholder
    for the text it keeps of that value."""

    def shared(value: Any) -> Any:
        sharing = _SHARING.get()
        return convert(value) if sharing is None else sharing.placeholder(value, convert)

    return shared


#: `json.dumps(value, allow_nan=False)` without its check for containers that hold themselves: a
#: report's data is a tree `to_data` builds fresh (no container is its own ancestor), so the text is
#: the same and each line skips the check's bookkeeping (about a tenth of the encoder's time).
_LINE = json.JSONEncoder(allow_nan=False, check_circular=False).encode


def json_lines(values: Iterable[Any]) -> str:
    """One line of `json.dumps(to_data(value), allow_nan=False)` per value. A value of a class marked
    `__json_shared__ = True` (a model's facts, an engine's settings: one object for many rows of a
    batch) is converted and encoded once and its text copied into every line that holds it, so the
    lines are the same text as value by value (bench/RESULTS.md, batch)."""
    sharing = _Shared()
    token = _SHARING.set(sharing)
    try:
        return "".join(sharing.line(value) + "\n" for value in values)
    finally:
        _SHARING.reset(token)


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
