"""EngineSettings is assembled from its parts (core/settings/): every part's fields, in the order the
options and JSON keys follow, made one frozen dataclass once (the parts stay plain classes)."""

from __future__ import annotations

import dataclasses

import pytest

from gpusize.core.settings import EngineChoice, EngineSettings, declared
from gpusize.core.settings.local import LocalSettings
from gpusize.core.settings.reserves import ReserveSettings
from gpusize.core.settings.sglang import SglangSettings
from gpusize.core.settings.trtllm import TrtllmSettings
from gpusize.core.settings.vllm import VllmSettings

PARTS = (EngineChoice, VllmSettings, ReserveSettings, SglangSettings, LocalSettings, TrtllmSettings)


def test_fields_are_the_parts_in_order() -> None:
    expected = [name for part in PARTS for name in part.__annotations__]
    assert [f.name for f in dataclasses.fields(EngineSettings)] == expected
    assert [name for name, _ in declared()][:2] == ["name", "version"]


def test_each_field_keeps_its_declaration_and_default() -> None:
    for part in PARTS:
        for name in part.__annotations__:
            declared_field = part.__dict__[name]
            assembled = EngineSettings.__dataclass_fields__[name]
            assert assembled.metadata["setting"] is declared_field.metadata["setting"]
            assert getattr(EngineSettings(), name) == declared_field.default


def test_parts_are_not_dataclasses_and_the_whole_is_frozen() -> None:
    assert not any(dataclasses.is_dataclass(part) for part in PARTS)
    with pytest.raises(dataclasses.FrozenInstanceError):
        EngineSettings().max_num_seqs = 3  # type: ignore[misc]
    with pytest.raises(TypeError):
        EngineSettings("vllm")  # type: ignore[misc]  # keyword-only
