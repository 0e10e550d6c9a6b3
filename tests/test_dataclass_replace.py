"""`gpusize.dataclass.replace` makes what `dataclasses.replace` makes (issue 24: the copies of quote
over 1,000 GPU types and which over 10,000 models), without carrying what an instance caches."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, fields

import pytest

from gpusize.dataclass import replace
from gpusize.serving.which import ModelFit
from tests.helpers import catalog_spec


def test_replace_is_replace() -> None:
    row = ModelFit(name="a", hf_id="x/a", family=None, params_total=1, params_active=1, fits=True)
    for changes in ({}, {"name": "b", "released": "2026-01"}, {"fits": False, "reason": "why"}):
        got, want = replace(row, **changes), dataclasses.replace(row, **changes)
        assert got == want and repr(got) == repr(want) and type(got) is ModelFit
        assert [f.name for f in fields(got)] == list(vars(got))  # the fields, in order
    with pytest.raises(TypeError):  # the standard function's refusal
        replace(row, nmae="b")


def test_replace_does_not_carry_a_cached_hash() -> None:
    spec = catalog_spec("Qwen3-8B")
    hash(spec)  # cached in its __dict__
    wider = replace(spec, hidden_size=spec.hidden_size + 1)
    standard = dataclasses.replace(spec, hidden_size=spec.hidden_size + 1)
    assert "_hash" not in vars(wider) and hash(wider) == hash(standard)


def test_replace_runs_post_init() -> None:
    """A class with __post_init__ goes to the standard function, so its check still runs."""

    @dataclass(frozen=True)
    class Checked:
        n: int

        def __post_init__(self) -> None:
            assert self.n >= 0

    assert replace(Checked(1), n=2) == Checked(2)
    with pytest.raises(AssertionError):
        replace(Checked(1), n=-1)


def test_made_is_the_class_called_with_its_fields() -> None:
    """`made(cls, values)` is `cls(**values)`: set directly when the values are exactly the fields
    (in any order), by the class itself when one is missing (its default) or is not a field."""
    from gpusize.core.model import CatalogModel, ParsedCatalogModel
    from gpusize.dataclass import made
    from gpusize.sources.catalog import Catalogs

    model = Catalogs().find_model("Qwen3-8B")
    every = dict(reversed(list(vars(model).items())))
    for cls, values in (
        (CatalogModel, every),
        (ParsedCatalogModel, {**every, "spec": catalog_spec("Qwen3-8B")}),
        (CatalogModel, {k: v for k, v in every.items() if k != "family"}),  # the default fills it
    ):
        got, want = made(cls, values), cls(**values)
        assert got == want and repr(got) == repr(want) and type(got) is cls
        assert vars(got).keys() == {f.name for f in fields(cls)}
    with pytest.raises(TypeError):
        made(CatalogModel, {**every, "nmae": "b"})
