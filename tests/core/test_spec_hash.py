"""ModelSpec computes its hash once (core/spec/model.py, speed): equal specs hash equal, a replaced field
gives a new hash, and the cached value never leaks into equality or the fields."""

from __future__ import annotations

from dataclasses import asdict, fields, replace

from tests.helpers import catalog_spec


def test_the_cached_hash_follows_the_fields() -> None:
    a = catalog_spec("Qwen3-8B")
    b = replace(a)  # an equal spec of its own (parsing the model again gives `a` itself: core/parse)
    assert a is not b and a == b and hash(a) == hash(b) == hash(a)
    assert hash(a) == hash(tuple(getattr(a, f.name) for f in fields(a)))
    changed = replace(a, hidden_size=a.hidden_size + 1)
    assert changed != a and hash(changed) != hash(a)
    assert "_hash" not in asdict(a) and {a: 1}[b] == 1


def test_a_layer_computes_its_hash_once_from_its_fields() -> None:
    """LayerSpec keeps its hash as ModelSpec does (issue 24: `layer_counts` hashes every layer)."""
    a = catalog_spec("Qwen3-8B").layers[0]
    b = replace(a)
    assert a is not b and a == b and hash(a) == hash(b) == hash(tuple(getattr(a, f.name) for f in fields(a)))
    changed = replace(a, intermediate_size=a.intermediate_size + 1)
    assert changed != a and hash(changed) != hash(a)
    assert "_hash" not in asdict(a) and {a: 1}[b] == 1
