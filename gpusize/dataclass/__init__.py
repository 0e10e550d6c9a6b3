"""`dataclass`, as the standard library's, with the methods' code compiled once, when the package is
built, instead of on every start (issue 24: start-up).

The standard library writes the source text of each class's `__init__`, `__repr__`, `__eq__`,
`__hash__`, `__setattr__` and `__delattr__` and compiles it with `exec` every time the class is
defined; for the ~50 value classes on `fit`'s start-up path that compiling was ~80% of their cost (a
third of the command's instructions, bench/RESULTS.md). `compiled.py` holds those texts, generated
by `python -m gpusize.dataclass.build` and compiled into its .pyc like any module, keyed by the exact
text: a class whose text is in the table gets its functions from the stored code with the globals
`exec` would have given them; any other text (a changed class, another Python release) is compiled
as the standard library does. Same bytecode either way (tests/test_dataclass_code.py).

Only the standard library's `_create_fn` (CPython 3.10 to 3.12) is replaced, and only while one of
gpusize's classes is being made; elsewhere, or where it does not exist, this is `dataclasses.dataclass`.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import os
import sys
import types
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

__all__ = ["dataclass", "kept_hash", "made", "misses", "plain_names", "replace", "table_is_cheap"]

_T = TypeVar("_T")

#: Texts compiled at run time since start-up because the table lacked them (the build's check).
_MISSES: list[str] = []

if TYPE_CHECKING:
    from dataclasses import dataclass as dataclass
else:
    _STANDARD = getattr(dataclasses, "_create_fn", None)
    _CODE: dict[str, types.CodeType] | None = None

    def _table() -> dict[str, types.CodeType]:
        global _CODE
        if _CODE is None:
            _CODE = {}
            if table_is_cheap(sys.dont_write_bytecode):
                from gpusize.dataclass.compiled import CODE  # start-up: read once, at the first class

                _CODE = CODE
        return _CODE

    def _create_fn(name, args, body, *, globals=None, locals=None, return_type=dataclasses.MISSING):
        # The text exactly as CPython 3.10-3.12's dataclasses._create_fn writes it, but for a frozen
        # class's __init__ on instances with a __dict__ (`_dict_stores`).
        if name == "__init__" and _DICT_INIT[0]:
            body = _dict_stores(body)
        if locals is None:
            locals = {}
        return_annotation = ""
        if return_type is not dataclasses.MISSING:
            locals["_return_type"] = return_type
            return_annotation = "->_return_type"
        args = ",".join(args)
        body = "\n".join(f"  {b}" for b in body)
        txt = f" def {name}({args}){return_annotation}:\n{body}"
        local_vars = ", ".join(locals.keys())
        txt = f"def __create_fn__({local_vars}):\n{txt}\n return {name}"
        code = _table().get(txt)
        if code is None:
            _MISSES.append(txt)
            # dont_inherit: this module's `annotations` import must not turn the methods' annotations
            # into strings (dataclasses.py compiles with no __future__ flag).
            module = compile(txt, "<string>", "exec", dont_inherit=True)
            code = next(c for c in module.co_consts if isinstance(c, types.CodeType))
        # exec(txt, globals, ns) runs with `globals`, or dataclasses' own when None.
        maker = types.FunctionType(code, globals if globals is not None else vars(dataclasses))
        return maker(**locals)

    #: Whether the class being made keeps its fields in its instances' __dict__ (no __slots__): only
    #: then may a frozen __init__ store them there directly (`_dict_stores`).
    _DICT_INIT = [False]
    _FROZEN_STORE = "__dataclass_builtins_object__.__setattr__("

    def _dict_stores(body):
        """A frozen class's __init__ lines with each `object.__setattr__(self, 'name', value)` (how
        the standard library assigns past its own __setattr__, which raises) written as a store into
        the instance's __dict__: the same attributes, without a lookup and a call per field (3x
        faster for 12 fields; a tenth of `gpusize batch`'s time was these __init__s, bench/RESULTS.md).
        A frozen class defines no property or other data descriptor for a field (the dataclass
        machinery would have taken it as the default), so the store is what the call did."""
        out, target = [], None
        for line in body:  # the standard library writes f"{prefix}{self_name},{name!r},{value})"
            if not (line.startswith(_FROZEN_STORE) and line.endswith(")")):
                out.append(line)
                continue
            target, rest = line[len(_FROZEN_STORE) : -1].split(",", 1)
            end = rest.index("',", 1) + 1  # a field's name is an identifier: no quote inside it
            out.append(f"__dataclass_dict__[{rest[:end]}]={rest[end + 1 :]}")
        if target is None:
            return body
        return [f"__dataclass_dict__={target}.__dict__", *out]

    _IS_TYPE = getattr(dataclasses, "_is_type", None)

    def _never(annotation, cls, a_module, a_type, is_type_predicate):
        return False

    def dataclass(cls=None, /, **kwargs: Any):
        """`dataclasses.dataclass(cls, **kwargs)`, its methods from the compiled table; where no name
        of the class's module can make a string annotation special (`plain_names`), the standard
        library's test of each annotation (`_is_type`: ClassVar, InitVar, KW_ONLY; three regex
        matches and module lookups a field, a tenth of `which`'s start-up) answers no at once."""

        def wrap(cls):
            if _STANDARD is None:  # another implementation (CPython 3.13 builds the text differently)
                return dataclasses.dataclass(**kwargs)(cls)
            plain = _IS_TYPE is not None and plain_names(sys.modules.get(cls.__module__))
            dataclasses._create_fn = _create_fn
            _DICT_INIT[0] = not kwargs.get("slots") and "__slots__" not in vars(cls)
            if plain:
                dataclasses._is_type = _never
            try:
                return dataclasses.dataclass(**kwargs)(cls)
            finally:
                dataclasses._create_fn = _STANDARD
                _DICT_INIT[0] = False
                if plain:
                    dataclasses._is_type = _IS_TYPE

        return wrap if cls is None else wrap(cls)


def plain_names(module: types.ModuleType | None) -> bool:
    """Whether `dataclasses._is_type` answers no for every string annotation of a class of `module`:
    it answers yes only where the annotation's name (or `module.name`) is looked up in the module's
    namespace (or, through a name bound to the typing or dataclasses module, in that module's) and
    found to be ClassVar, a generic alias of it (`ClassVar[int]`), InitVar or an InitVar(...), or
    KW_ONLY; so no name bound to any of those, to the typing or dataclasses module, to a typing
    generic alias or an InitVar instance means no. False for a module not imported (the standard
    test then runs, as it does for any other module)."""
    if module is None:
        return False
    values = vars(module).values()
    specials = {id(dataclasses), id(dataclasses.InitVar), id(dataclasses.KW_ONLY)}
    typing = sys.modules.get("typing")
    kinds: set[type] = {dataclasses.InitVar}
    if typing is not None:
        specials |= {id(typing), id(typing.ClassVar)}
        kinds.add(getattr(typing, "_GenericAlias", dataclasses.InitVar))
    return specials.isdisjoint(map(id, values)) and kinds.isdisjoint(map(type, values))


#: The table's source and its compiled form (PEP 3147: __pycache__/NAME.TAG[.opt-N].pyc).
_SOURCE = os.path.join(os.path.dirname(__file__), "compiled.py")
_OPT = f".opt-{sys.flags.optimize}" if sys.flags.optimize else ""
_PYC = os.path.join(
    os.path.dirname(__file__), "__pycache__", f"compiled.{sys.implementation.cache_tag}{_OPT}.pyc"
)


def table_is_cheap(dont_write_bytecode: bool, source: str = _SOURCE, pyc: str = _PYC) -> bool:
    """Whether reading the table costs less than compiling the classes' texts: when its .pyc is
    there and not older than its source (a wheel install compiles it), or when Python may write that
    .pyc now (this run pays its compiling once, every later run reads it). Without either (a
    read-only install without .pyc files, PYTHONDONTWRITEBYTECODE) compiling the 870 KB table
    would cost more than the ~320 small texts it replaces, so the classes are compiled as usual."""
    try:
        if os.stat(pyc).st_mtime >= os.stat(source).st_mtime:
            return True
    except OSError:
        pass
    if dont_write_bytecode or sys.pycache_prefix is not None:
        return False
    folder = os.path.dirname(pyc)
    return os.access(folder if os.path.isdir(folder) else os.path.dirname(folder), os.W_OK)


def misses() -> list[str]:
    """The method texts compiled at run time so far (empty when the table covers every class)."""
    return list(_MISSES)


def kept_hash(obj: Any, values: Callable[[Any], tuple[Any, ...]]) -> int:
    """The hash of `values(obj)` (an `operator.attrgetter` of the compared fields: the tuple the
    dataclass's own __hash__ hashes), kept in the frozen instance's __dict__ as `_hash` (beside its
    fields; `replace` leaves it behind), where the class's __hash__ reads it first, without a call:
    the evaluation caches of a fit hash the same workloads, settings, GPUs and weight formats many
    times a row of a batch (bench/RESULTS.md)."""
    known = hash(values(obj))
    object.__setattr__(obj, "_hash", known)
    return known


def replace(obj: _T, /, **changes: Any) -> _T:
    """`dataclasses.replace(obj, **changes)` for a plain dataclass (its own generated __init__, every
    field an init field, no InitVar, no __post_init__, no slots), without its per-field checks and
    without running __init__ again: the new object holds the same field values but the changed ones,
    and none of what `obj` keeps beside its fields (a cached hash or property), as the standard
    function. A fit search builds a few workloads per lever it tries, and vLLM's settings have some
    fifty fields: the standard function was a third of the one-GPU suggestions (bench/RESULTS.md,
    batch, all-distinct rows); 5,000 copies were a tenth of `quote` over 1,000 GPU types. Any other
    class, or a name that is not a field, goes to the standard function (which runs __post_init__,
    or refuses the name)."""
    kind: type = type(obj)
    names = _field_names(kind)
    if names is None or any(name not in names for name in changes):
        return dataclasses.replace(obj, **changes)  # type: ignore[type-var]
    held = obj.__dict__
    # The fields come first in the instance's dict (its __init__, or this function, set them all
    # before anything is kept beside them), so the copy is a C-level slice, checked; else by name.
    state = dict(itertools.islice(held.items(), len(names)))
    if state.keys() != names.keys():
        state = {name: held[name] for name in names}
    state.update(changes)
    new: _T = object.__new__(kind)
    new.__dict__.update(state)
    return new


def made(cls: type[_T], values: dict[str, Any]) -> _T:
    """`cls(**values)` for a plain dataclass (as `replace` takes them) given every field, the values
    set directly instead of by its frozen `__init__` (one `object.__setattr__` a field): a user
    catalog's 10,000 models are built from their rows twice (the model, then with its spec), and a
    quarter of reading them was those calls. Any other class, or values without exactly its fields
    (a default to fill, a name that is not a field), goes to `cls(**values)`."""
    kind: type = cls
    names = _field_names(kind)
    if names is None or values.keys() != names.keys():
        return cls(**values)
    new: _T = object.__new__(cls)
    new.__dict__.update(values)
    return new


@functools.cache
def _field_names(cls: type) -> dict[str, None] | None:
    """The fields of a class `replace` may copy directly, in order (a dict, for the membership test);
    None for any other class."""
    own = vars(cls)  # the class itself a dataclass (not a subclass of one), making its own __init__
    params = own.get("__dataclass_params__")
    if params is None or not params.init or "__post_init__" in dir(cls) or "__slots__" in own:
        return None
    declared = dataclasses.fields(cls)  # the fields proper (no InitVar or ClassVar pseudo-fields)
    if len(declared) != len(own["__dataclass_fields__"]) or not all(f.init for f in declared):
        return None
    return dict.fromkeys(f.name for f in declared)
