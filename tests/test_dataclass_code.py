"""gpusize's dataclasses take their methods' code from a table compiled with the package
(gpusize/dataclass): the table is current, its code is what the standard library compiles from the
same text, and a class made through it behaves as the standard library's."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import types
from dataclasses import field

import pytest

import gpusize.dataclass as dc
from gpusize.dataclass import build, compiled

BUILT_HERE = sys.version_info[:2] == compiled.PYTHON and hasattr(dataclasses, "_create_fn")


def _inner(code: types.CodeType) -> types.CodeType:
    return next(c for c in code.co_consts if isinstance(c, types.CodeType))


def _same(a: types.CodeType, b: types.CodeType) -> bool:
    """Equal bytecode, names, variables and constants (nested code compared the same way)."""
    if (a.co_code, a.co_names, a.co_varnames, a.co_freevars, a.co_cellvars, a.co_flags) != (
        b.co_code,
        b.co_names,
        b.co_varnames,
        b.co_freevars,
        b.co_cellvars,
        b.co_flags,
    ):
        return False
    if len(a.co_consts) != len(b.co_consts):
        return False
    return all(
        _same(x, y) if isinstance(x, types.CodeType) else type(x) is type(y) and x == y
        for x, y in zip(a.co_consts, b.co_consts, strict=True)
    )


@pytest.mark.skipif(not BUILT_HERE, reason=f"table built under Python {compiled.PYTHON}")
def test_the_table_is_current() -> None:
    # Every text the package's classes make is in the table, and nothing else (rebuild with
    # `python -m gpusize.dataclass.build`).
    assert build.collect() == sorted(compiled.CODE)
    assert build.render(sorted(compiled.CODE)) == build.OUTPUT.read_text()


def test_the_code_is_what_the_standard_library_compiles() -> None:
    # exec(text) in dataclasses compiles with no __future__ flags: the table's module must not
    # change the code (an `annotations` import would turn the annotations into strings).
    for text, code in compiled.CODE.items():
        assert _same(code, _inner(compile(text, "<string>", "exec", dont_inherit=True))), text[:80]


@pytest.mark.skipif(not BUILT_HERE, reason=f"table built under Python {compiled.PYTHON}")
def test_a_command_compiles_no_method_text() -> None:
    probe = (
        "import sys; sys.argv = ['gpusize', 'fit', 'Qwen3-8B', '--gpu', 'H100', '-q']\n"
        "import gpusize.dataclass as d, gpusize.dataclass.compiled as c\nd._CODE = c.CODE\n"
        "from gpusize.cli import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\nprint(len(d.misses()))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "0"


def _pair() -> tuple[type, type]:
    def body() -> dict[str, object]:
        return {
            "__annotations__": {"a": "int", "b": "list[int]", "c": "str"},
            "b": field(default_factory=lambda: [1]),
            "c": "x",
        }

    ours = dc.dataclass(frozen=True)(type("Probe", (), body()))
    theirs = dataclasses.dataclass(frozen=True)(type("Probe", (), body()))
    return ours, theirs


def test_a_class_behaves_as_the_standard_librarys() -> None:
    ours, theirs = _pair()
    x, y = ours(1), theirs(1)
    assert repr(x) == repr(y) == "Probe(a=1, b=[1], c='x')"
    assert x == ours(1, [1], "x") and x != ours(2) and hash(ours(1, (1,))) == hash(theirs(1, (1,)))
    with pytest.raises(dataclasses.FrozenInstanceError):
        x.a = 2  # type: ignore[attr-defined]
    with pytest.raises(TypeError):
        ours()
    assert dataclasses.replace(x, c="y").c == "y"
    assert [f.name for f in dataclasses.fields(ours)] == ["a", "b", "c"]
    assert dataclasses.asdict(x) == dataclasses.asdict(y)
    assert ours.__init__.__annotations__ == theirs.__init__.__annotations__  # not strings
    assert vars(x) == vars(y) and vars(ours(2, [3], "z")) == vars(theirs(2, [3], "z"))
    for name in ("__init__", "__repr__", "__eq__", "__hash__", "__setattr__", "__delattr__"):
        assert getattr(ours, name).__qualname__ == getattr(theirs, name).__qualname__
        if name != "__init__":  # a frozen __init__ stores into __dict__ (below)
            assert _same(getattr(ours, name).__code__, getattr(theirs, name).__code__), name


def test_a_frozen_init_stores_each_field_as_the_standard_library_sets_it() -> None:
    # gpusize.dataclass._dict_stores: object.__setattr__(self, 'name', value) written as
    # self.__dict__['name'] = value (no lookup and call a field); defaults, default factories, a
    # __post_init__ that sets a field itself, a field named self and InitVars alike
    def body() -> dict[str, object]:
        def post(obj: object, scale: int) -> None:
            object.__setattr__(obj, "d", obj.a * scale)  # type: ignore[attr-defined]

        return {
            "__annotations__": {
                "self": int,
                "a": int,
                "b": list,
                "d": int,
                "scale": dataclasses.InitVar[int],
            },
            "b": field(default_factory=list),
            "d": field(default=0, init=False),
            "scale": 2,
            "__post_init__": post,
        }

    ours = dc.dataclass(frozen=True)(type("Stored", (), body()))
    theirs = dataclasses.dataclass(frozen=True)(type("Stored", (), body()))
    for args in ((1, 2), (1, 2, [5]), (0, -3, [], 4)):
        assert vars(ours(*args)) == vars(theirs(*args)), args
        assert ours(*args) == ours(*args) and repr(ours(*args)) == repr(theirs(*args))
    assert "__dataclass_dict__" in ours.__init__.__code__.co_varnames
    with pytest.raises(dataclasses.FrozenInstanceError):
        ours(1, 2).a = 3  # type: ignore[attr-defined]


def test_a_class_without_an_instance_dict_keeps_the_standard_init() -> None:
    # slots: no __dict__ to store into, so the standard library's object.__setattr__ calls stay
    slotted = dc.dataclass(frozen=True, slots=True)(type("Slotted", (), {"__annotations__": {"a": "int"}}))
    assert slotted(4).a == 4 and not hasattr(slotted(4), "__dict__")
    assert "__dataclass_dict__" not in slotted.__init__.__code__.co_varnames


def test_a_text_not_in_the_table_is_compiled_and_the_standard_library_restored() -> None:
    before = len(dc.misses())
    ours, _ = _pair()  # the probe's texts are no gpusize class's
    assert len(dc.misses()) > before
    assert dataclasses._create_fn is dc._STANDARD  # type: ignore[attr-defined]
    assert ours(3).a == 3


def test_the_table_is_read_only_where_it_is_cheap(tmp_path) -> None:
    source, pyc = tmp_path / "compiled.py", tmp_path / "__pycache__" / "compiled.tag.pyc"
    source.write_text("CODE = {}\n")
    # No .pyc: read where Python may write one, not under PYTHONDONTWRITEBYTECODE.
    assert dc.table_is_cheap(False, str(source), str(pyc))
    assert not dc.table_is_cheap(True, str(source), str(pyc))
    pyc.parent.mkdir()
    pyc.write_bytes(b"")
    assert dc.table_is_cheap(True, str(source), str(pyc))  # a fresh .pyc
    os.utime(pyc, (0, 0))
    assert not dc.table_is_cheap(True, str(source), str(pyc))  # stale: Python would recompile


def test_every_module_takes_dataclass_from_the_compiled_table() -> None:
    # A class made by the standard library's decorator compiles its texts on every start.
    import ast
    from pathlib import Path

    package = Path(dc.__file__).parent.parent
    stray = []
    for path in package.rglob("*.py"):
        if path.parent.name == "dataclass":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module == "dataclasses":
                stray += [
                    f"{path.relative_to(package)}:{node.lineno}" for a in node.names if a.name == "dataclass"
                ]
    assert stray == [], "import dataclass from gpusize.dataclass"


def test_every_dataclass_has_its_own_docstring() -> None:
    # The standard library writes a missing one with inspect.signature when the class is made
    # (0.7M instructions a class at start-up), and a value class should say what it holds.
    import importlib
    import pkgutil

    import gpusize

    bare = []
    for info in pkgutil.walk_packages(gpusize.__path__, "gpusize."):
        if info.name.startswith(("gpusize.__main__", "gpusize.dataclass")):
            continue
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            own = (
                isinstance(value, type) and dataclasses.is_dataclass(value) and value.__module__ == info.name
            )
            if own and (value.__doc__ or "").startswith(value.__name__ + "("):
                bare.append(f"{info.name}.{value.__qualname__}")
    assert bare == []
