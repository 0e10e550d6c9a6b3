"""ModelSpec computes its hash once (core/spec/model.py, speed): equal specs hash equal, a replaced field
gives a new hash, and the cached value never leaks into equality or the fields."""

from __future__ import annotations

from dataclasses import asdict, fields, replace

from gpusize.sources.catalog import Catalogs
from tests.helpers import catalog_spec


def test_the_cached_hash_follows_the_fields() -> None:
    a = catalog_spec("Qwen3-8B")
    b = replace(a)  # an equal spec of its own (parsing the model again gives `a` itself: core/parse)
    assert a is not b and a == b and hash(a) == hash(b) == hash(a)
    # every compared field but the layer tuples, which count by their lengths (equal specs have
    # equal layers, so equal specs still hash equal)
    kept = tuple(getattr(a, f.name) for f in fields(a) if f.name not in ("layers", "mtp_layers"))
    assert hash(a) == hash((kept, len(a.layers), len(a.mtp_layers)))
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


def test_specs_that_differ_only_in_their_layers_are_unequal() -> None:
    """The layers are left out of the hash, never out of equality."""
    a = catalog_spec("Qwen3-8B")
    other = replace(a.layers[0], intermediate_size=a.layers[0].intermediate_size + 1)
    changed = replace(a, layers=(other, *a.layers[1:]))
    assert changed != a and {a: 1}.get(changed) is None


def _counted_by_value(spec: object) -> tuple[tuple[object, int], ...]:
    counts: dict[object, int] = {}
    for layer in spec.layers:  # type: ignore[attr-defined]
        counts[layer] = counts.get(layer, 0) + 1
    return tuple(counts.items())


def test_layer_counts_are_the_counts_by_value() -> None:
    """`layer_counts` counts by identity, then merges equal objects: the pairs (the same first
    object of each value, in first-seen order) of counting every layer by value, for every bundled
    spec and for a spec whose equal layers are distinct objects, interleaved."""
    for model in Catalogs().parsed_models():
        if model.spec is not None:
            pairs = model.spec.layer_counts
            expected = _counted_by_value(model.spec)
            assert pairs == expected
            assert [id(layer) for layer, _ in pairs] == [id(layer) for layer, _ in expected]
    a = catalog_spec("Qwen3-8B")
    first, other = a.layers[0], replace(a.layers[0], intermediate_size=1)
    mixed = replace(a, layers=(replace(first), other, first, replace(first), other))
    assert mixed.layer_counts == ((first, 3), (other, 2)) == _counted_by_value(mixed)
    assert mixed.layer_counts[0][0] is mixed.layers[0]
