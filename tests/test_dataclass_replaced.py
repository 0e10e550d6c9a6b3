"""`gpusize.dataclass.replaced` makes what `dataclasses.replace` makes (issue 24: the copies of quote
over 1,000 GPU types and which over 10,000 models), without carrying what an instance caches."""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

import pytest

from gpusize.dataclass import replaced
from gpusize.serving.which import ModelFit
from tests.helpers import catalog_spec


def test_replaced_is_replace() -> None:
    row = ModelFit(name="a", hf_id="x/a", family=None, params_total=1, params_active=1, fits=True)
    for changes in ({}, {"name": "b", "released": "2026-01"}, {"fits": False, "reason": "why"}):
        got, want = replaced(row, **changes), replace(row, **changes)
        assert got == want and repr(got) == repr(want) and type(got) is ModelFit
        assert [f.name for f in fields(got)] == list(vars(got))  # the fields, in order
    with pytest.raises(TypeError, match="no field 'nmae'"):
        replaced(row, nmae="b")


def test_replaced_does_not_carry_a_cached_hash() -> None:
    spec = catalog_spec("Qwen3-8B")
    hash(spec)  # cached in its __dict__
    wider = replaced(spec, hidden_size=spec.hidden_size + 1)
    assert "_hash" not in vars(wider) and hash(wider) == hash(replace(spec, hidden_size=spec.hidden_size + 1))


def test_replaced_refuses_a_class_with_post_init() -> None:
    @dataclass(frozen=True)
    class Checked:
        n: int

        def __post_init__(self) -> None:
            assert self.n >= 0

    with pytest.raises(TypeError, match="plain dataclass"):
        replaced(Checked(1), n=-1)
