"""`gpusize.dataclass.dataclass` skips the standard library's test of each string annotation for
ClassVar, InitVar and KW_ONLY where the class's module has no name that could make one special
(`plain_names`): over every module of the package, that test answers no for every annotation of
every dataclass of a plain module; a module that binds ClassVar, an alias of it or InitVar is not
plain, and its special annotations are still found."""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
import sys
import types
import typing

import pytest

import gpusize
from gpusize.dataclass import dataclass, plain_names


def _modules() -> list[types.ModuleType]:
    names = [
        info.name
        for info in pkgutil.walk_packages(gpusize.__path__, "gpusize.")
        if not info.name.startswith(("gpusize.__main__", "gpusize.dataclass"))
    ]
    return [importlib.import_module(name) for name in names]


def test_a_plain_modules_annotations_are_never_special() -> None:
    is_type = dataclasses._is_type  # type: ignore[attr-defined]
    checks = [
        (typing, typing.ClassVar, dataclasses._is_classvar),  # type: ignore[attr-defined]
        (dataclasses, dataclasses.InitVar, dataclasses._is_initvar),  # type: ignore[attr-defined]
        (dataclasses, dataclasses.KW_ONLY, dataclasses._is_kw_only),  # type: ignore[attr-defined]
    ]
    plain = [m for m in _modules() if plain_names(m)]
    assert len(plain) > 150
    seen = 0
    for module in plain:
        for cls in vars(module).values():
            if not (
                isinstance(cls, type) and dataclasses.is_dataclass(cls) and cls.__module__ == module.__name__
            ):
                continue
            for annotation in cls.__dict__.get("__annotations__", {}).values():
                assert isinstance(annotation, str)
                for a_module, a_type, predicate in checks:
                    assert not is_type(annotation, cls, a_module, a_type, predicate), (cls, annotation)
                seen += 1
    assert seen > 500


def _made(source: str, monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    """A module of `source`, imported (in sys.modules, as a class's module must be) for the test."""
    module = types.ModuleType("gpusize_test_plain_names")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    exec(compile(source, "<test>", "exec", dont_inherit=True), vars(module))
    return module


@pytest.mark.parametrize(
    "binding",
    [
        "from typing import ClassVar",
        "import typing",
        "import typing as _t\nCV = _t.ClassVar[int]\ndel _t",
        "from dataclasses import InitVar",
    ],
)
def test_a_module_binding_a_special_name_is_not_plain(binding: str, monkeypatch: pytest.MonkeyPatch) -> None:
    module = _made(f"from __future__ import annotations\n{binding}\n", monkeypatch)
    assert not plain_names(module)


def test_special_annotations_are_still_found(monkeypatch: pytest.MonkeyPatch) -> None:
    module = _made(
        "from __future__ import annotations\n"
        "from typing import ClassVar\n"
        "from dataclasses import InitVar\n"
        "import typing as _t\n"
        "CV = _t.ClassVar[int]\n"
        "def make(dataclass):\n"
        "    @dataclass(frozen=True)\n"
        "    class C:\n"
        "        a: int\n"
        "        b: ClassVar[int] = 1\n"
        "        c: CV = 2\n"
        "        d: InitVar[int] = 3\n"
        "        def __post_init__(self, d: int) -> None:\n"
        "            pass\n"
        "    return C\n",
        monkeypatch,
    )
    ours, standard = module.make(dataclass), module.make(dataclasses.dataclass)
    assert (
        [f.name for f in dataclasses.fields(ours)] == [f.name for f in dataclasses.fields(standard)] == ["a"]
    )
    assert set(ours.__dataclass_fields__) == set(standard.__dataclass_fields__) == {"a", "b", "c", "d"}
