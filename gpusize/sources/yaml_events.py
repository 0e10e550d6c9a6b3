"""A faster safe YAML load for large catalogs: PyYAML's C parser events, built into Python values here.

Measured reason (bench/bench_catalog.py, 10,000-entry GPU file of 25 MiB): `yaml.load` with
`CSafeLoader` takes 4.9 CPU s and 430 MB, though the C parser alone yields its 720,000 events in
0.6 s. The rest is PyYAML's Python side: a node with two marks per value, and the implicit-tag
resolver's regular expressions run again for every scalar. Here each distinct scalar is resolved and
constructed once (by the loader's own `resolve` and `construct_object`, so the tags and values are
PyYAML's), and values are built straight from events: ~4 times faster, ~4 times less memory.

Only the plain subset is built here: untagged (or `!!map` / `!!seq`) collections and the scalar tags
of `_SCALAR_TAGS`. Anything else - merge keys, other tags, a collection or alias as a mapping key,
several documents, an undefined or a duplicate anchor - falls back to `yaml.load` with the same
safe loader, which builds it or raises its own error, so the result (or the refusal) is always the
library's (tests/sources/test_yaml_events.py compares the two). Aliases share one object, as with
PyYAML; the caller's expansion budget runs on the result either way.
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.events import (
    AliasEvent,
    DocumentEndEvent,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
    StreamEndEvent,
)
from yaml.nodes import ScalarNode

__all__ = ["Loader", "safe_load"]

#: The safe loader: the C parser where PyYAML was built with libyaml.
Loader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

_PREFIX = "tag:yaml.org,2002:"
#: Scalar tags built here (the safe constructor's own scalar types); the merge key `<<`, `=` and
#: any other tag go to the library.
_SCALAR_TAGS = frozenset(_PREFIX + t for t in ("str", "int", "float", "bool", "null", "timestamp", "binary"))
_UNTAGGED = (None, "!")


class _Fallback(Exception):
    """Something outside the plain subset: let PyYAML build it."""


def safe_load(text: str | bytes) -> Any:
    """`yaml.load(text, Loader)` (safe), faster on plain documents; raises what PyYAML raises."""
    loader = Loader(text)
    try:
        return _build(loader)
    except _Fallback:
        pass
    finally:
        loader.dispose()
    return yaml.load(text, Loader=Loader)  # noqa: S506 - the safe loader only


def _build(loader: Any) -> Any:
    """The document's value from its events (one loop, calls inlined: it runs once per value)."""
    get = loader.get_event
    get()  # StreamStart
    if isinstance(get(), StreamEndEvent):
        return None  # an empty stream, as yaml.load
    plain: dict[str, Any] = {}  # untagged plain scalars by text
    memo: dict[tuple[Any, ...], Any] = {}  # the others by (tag, text, implicit)
    anchors: dict[str, Any] = {}
    stack: list[list[Any]] = []  # [container, key or _NO_KEY]
    top: list[Any] = [None, _NO_KEY]
    while True:
        event = get()
        kind = type(event)
        if kind is ScalarEvent:
            text = event.value
            if event.tag is None and not event.implicit[0]:
                value = text  # quoted, untagged: a string
            elif event.tag is None and text in plain:
                value = plain[text]
            else:
                value = _scalar(loader, event, plain, memo)
            if event.anchor:
                if event.anchor in anchors:
                    raise _Fallback  # a duplicate anchor: PyYAML refuses it
                anchors[event.anchor] = value
        elif kind is MappingStartEvent or kind is SequenceStartEvent:
            mapping = kind is MappingStartEvent
            if event.tag not in _UNTAGGED and event.tag != _PREFIX + ("map" if mapping else "seq"):
                raise _Fallback
            if top[1] is _NO_KEY and type(top[0]) is dict:
                raise _Fallback  # a collection as a mapping key
            top = [{} if mapping else [], _NO_KEY]
            if event.anchor:
                if event.anchor in anchors:
                    raise _Fallback
                anchors[event.anchor] = top[0]
            stack.append(top)
            continue
        elif kind is MappingEndEvent or kind is SequenceEndEvent:
            value = stack.pop()[0]
            if not stack:
                break
            top = stack[-1]
        elif kind is AliasEvent:
            if event.anchor not in anchors:
                raise _Fallback
            value = anchors[event.anchor]
        else:  # pragma: no cover - the parser yields no other event inside a document
            raise _Fallback
        if not stack:
            break  # the document is one scalar or alias
        container = top[0]
        if type(container) is list:
            container.append(value)
        elif top[1] is _NO_KEY:
            if type(value) is dict or type(value) is list:
                raise _Fallback  # an alias to a collection as a key: unhashable, PyYAML's error
            top[1] = value
        else:
            container[top[1]] = value
            top[1] = _NO_KEY
    if not isinstance(get(), DocumentEndEvent) or not isinstance(get(), StreamEndEvent):
        raise _Fallback  # several documents: PyYAML says so
    return value


_NO_KEY = object()


def _scalar(loader: Any, event: Any, plain: dict[str, Any], memo: dict[tuple[Any, ...], Any]) -> Any:
    """The scalar's value, resolved and constructed by the loader once per distinct (tag, text)."""
    key = (event.tag, event.value, event.implicit)
    if key in memo:
        return memo[key]
    tag = event.tag
    if tag in _UNTAGGED:
        tag = loader.resolve(ScalarNode, event.value, event.implicit)
    if tag not in _SCALAR_TAGS:
        raise _Fallback
    value = event.value if tag == _PREFIX + "str" else loader.construct_object(ScalarNode(tag, event.value))
    memo[key] = value
    if event.tag is None:
        plain[event.value] = value
    return value
