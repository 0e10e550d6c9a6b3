"""A plain command line bound to its command's parameters without typer or click.

`gpusize fit Qwen3-8B --gpu H100 --ctx=32k -q` is bound here from the command's own declarations
(`cli.declare`): each long or short flag, its value converted as click converts it (`int(...)`,
`float(...)`, the text itself), a switch's constant, every other parameter its declared default; the
command's function is then called with them, as typer would call it. No typer is imported, so a
plain command starts at the cost of gpusize's own modules.

Only the plain shape is bound: words that are a known flag, `--flag=value`, a known flag's value
that does not start with "-", and positional arguments. Anything else returns None and the typer
app parses the line itself, with typer's and click's own behaviour and wording: --help, shell
completion, an unknown, repeated or misspelled flag, a value that is not a number, a number out of
an option's range, a missing argument or required option, a repeated list option, a declaration
this module does not model (a callback, an environment variable, a counter).
tests/cli/test_bind.py checks, command by command, that what is bound here is what typer passes.
"""

from __future__ import annotations

import inspect
import os
import types
from collections.abc import Callable
from typing import Annotated, Any, Union, get_args, get_origin

from gpusize.cli.declare import COMMANDS_DECLARED, Declared

__all__ = ["Bound", "bind", "switch_flags"]

#: The keyword arguments of a declaration that do not change what a line binds to (help, completion).
_DESCRIPTIVE = frozenset(
    {"help", "metavar", "show_default", "autocompletion", "hidden", "rich_help_panel", "show_choices"}
)

#: click's conversion of one word, by the parameter's type (click.INT, click.FLOAT, click.STRING).
_CONVERT: dict[type, Callable[[str], Any]] = {int: int, float: float, str: str}

_REQUIRED = object()


class Bound:
    """A command line bound: the command's function and the keyword arguments typer would pass."""

    __slots__ = ("function", "kwargs")

    def __init__(self, function: Callable[..., Any], kwargs: dict[str, Any]) -> None:
        self.function = function
        self.kwargs = kwargs

    def __call__(self) -> Any:
        return self.function(**self.kwargs)


class _Param:
    """One parameter: its name, what a flag of it takes, how a word converts, its default."""

    __slots__ = ("convert", "default", "high", "low", "multiple", "name")

    def __init__(self, name: str, convert: Callable[[str], Any], default: Any, multiple: bool) -> None:
        self.name = name
        self.convert = convert
        self.default = default
        self.multiple = multiple
        self.low: float | None = None
        self.high: float | None = None


class _Table:
    """A command's flags (flag -> parameter and, for a switch, its constant), its arguments in order,
    and its parameters' defaults."""

    __slots__ = ("arguments", "defaults", "flags", "function", "params", "required")

    def __init__(self, function: Callable[..., Any]) -> None:
        self.function = function
        self.flags: dict[str, tuple[_Param, Any]] = {}
        self.arguments: list[_Param] = []
        self.params: list[_Param] = []
        #: Each parameter's default, but those a line must give (`required`).
        self.defaults: dict[str, Any] = {}
        self.required: frozenset[str] = frozenset()


class _Unmodelled(Exception):
    """A declaration this module does not bind: typer parses every line of that command."""


_TABLES: dict[Callable[..., Any], _Table | None] = {}


def bind(argv: list[str], from_shell: bool = True) -> Bound | None:
    """`argv` bound to its registered command, or None: typer parses it (see the module's docstring).
    `from_shell`: the process's own command line, which a shell's completion may be asking about; a
    batch row or a library call never is (the environment scan is 4% of a batch row)."""
    if not argv or (from_shell and _completing()):
        return None
    found = COMMANDS_DECLARED.get(argv[0])
    if found is None:
        return None
    table = _table(found.function)
    return None if table is None else _bound(table, argv[1:])


def switch_flags(name: str) -> dict[str, str | None] | None:
    """The long flags of command `name` that take no value, each with its off form (None: it has
    none); None when the command is not bound here."""
    found = COMMANDS_DECLARED.get(name)
    table = None if found is None else _table(found.function)
    if table is None:
        return None
    offs = {id(param): flag for flag, (param, switch) in table.flags.items() if switch is False}
    return {
        flag: offs.get(id(param)) if (offs.get(id(param)) or "").startswith("--") else None
        for flag, (param, switch) in table.flags.items()
        if switch is True and flag.startswith("--")
    }


def _completing() -> bool:
    """Shell completion asks through environment variables (`_GPUSIZE_COMPLETE`, typer's own)."""
    return any(key.startswith("_") and ("COMPLETE" in key) for key in os.environ)


def _bound(table: _Table, words: list[str]) -> Bound | None:
    values: dict[str, Any] = {}
    positional: list[str] = []
    i = 0
    while i < len(words):
        word = words[i]
        i += 1
        if word == "-" or not word.startswith("-"):
            positional.append(word)
            continue
        name, inline = word, None
        if word.startswith("--") and "=" in word:
            name, inline = word.split("=", 1)
        param, switch = table.flags.get(name, (None, None))
        if param is None or (param.name in values and not param.multiple):
            return None
        if switch is not None:
            if inline is not None:
                return None
            values[param.name] = switch
            continue
        if inline is None:
            if i >= len(words) or words[i].startswith("-"):
                return None
            inline = words[i]
            i += 1
        value = _converted(param, inline)
        if value is _REQUIRED:
            return None
        if param.multiple:
            values.setdefault(param.name, []).append(value)
        else:
            values[param.name] = value
    if len(positional) > len(table.arguments):
        return None
    for param, word in zip(table.arguments, positional, strict=False):
        value = _converted(param, word)
        if value is _REQUIRED:
            return None
        values[param.name] = value
    if not table.required.issubset(values):
        return None
    # every default, then what the line gave (one C-level merge: a command has some seventy parameters)
    return Bound(table.function, {**table.defaults, **values})


def _converted(param: _Param, word: str) -> Any:
    """The word as click converts it for this parameter; _REQUIRED when click would refuse it."""
    try:
        value = param.convert(word)
    except ValueError:
        return _REQUIRED
    if (param.low is not None and value < param.low) or (param.high is not None and value > param.high):
        return _REQUIRED
    return value


def _table(function: Callable[..., Any]) -> _Table | None:
    if function not in _TABLES:
        try:
            _TABLES[function] = _built(function)
        except _Unmodelled:
            _TABLES[function] = None
    return _TABLES[function]


def _built(function: Callable[..., Any]) -> _Table:
    table = _Table(function)
    for p in inspect.signature(function, eval_str=True).parameters.values():
        annotation, declared = p.annotation, p.default
        in_annotation = False
        if get_origin(annotation) is Annotated:
            annotation, *metadata = get_args(annotation)
            found = [m for m in metadata if isinstance(m, Declared)]
            if found:
                declared, in_annotation = found[0], True
        if not isinstance(declared, Declared) or set(declared.kwargs) - _DESCRIPTIVE - {"min", "max"}:
            raise _Unmodelled
        base, multiple = _base_type(annotation)
        if in_annotation:
            decls = declared.args
            default = _REQUIRED if p.default is inspect.Parameter.empty else p.default
        else:
            default = declared.args[0] if declared.args else None
            decls = declared.args[1:]
        if default is ...:
            default = _REQUIRED
        param = _param(p.name, base, multiple, default, declared)
        table.params.append(param)
        if declared.kind == "argument":
            if multiple:
                raise _Unmodelled
            table.arguments.append(param)
        else:
            _add_flags(table, param, base, tuple(decls) or (_default_flag(p.name, base),))
    table.defaults = {q.name: q.default for q in table.params if q.default is not _REQUIRED}
    table.required = frozenset(q.name for q in table.params if q.default is _REQUIRED)
    return table


def _param(name: str, base: type, multiple: bool, default: Any, declared: Declared) -> _Param:
    convert = _CONVERT.get(base)
    if base is bool:
        convert = str  # a switch takes no word
    if convert is None:
        raise _Unmodelled
    if multiple and default is not None:
        raise _Unmodelled  # typer keeps a non-empty default list as given; not used by any command
    param = _Param(name, convert, default, multiple)
    param.low, param.high = declared.kwargs.get("min"), declared.kwargs.get("max")
    return param


def _add_flags(table: _Table, param: _Param, base: type, decls: tuple[Any, ...]) -> None:
    for decl in decls:
        if not isinstance(decl, str) or not decl.startswith("-"):
            raise _Unmodelled
        on, _, off = decl.partition("/")
        if base is bool and not param.multiple:
            _flag(table, on, param, True)
            if off:
                _flag(table, off, param, False)
        elif off:
            raise _Unmodelled
        else:
            _flag(table, on, param, None)


def _flag(table: _Table, flag: str, param: _Param, switch: bool | None) -> None:
    flag = flag.strip()
    if not flag.startswith("-") or flag in table.flags:
        raise _Unmodelled
    table.flags[flag] = (param, switch)


def _default_flag(name: str, base: type) -> str:
    """typer's own flag for an option declared without one: --name, a switch --name/--no-name."""
    flag = name.replace("_", "-")
    return f"--{flag}/--no-{flag}" if base is bool else f"--{flag}"


def _base_type(annotation: Any) -> tuple[type, bool]:
    """int, float, str or bool, and whether the option repeats (list[...]), from `T | None`."""
    origin = get_origin(annotation)
    if origin is Union or origin is types.UnionType:
        kept = [a for a in get_args(annotation) if a is not type(None)]
        if len(kept) != 1:
            raise _Unmodelled
        annotation, origin = kept[0], get_origin(kept[0])
    if origin is list:
        (item,) = get_args(annotation)
        if not isinstance(item, type):
            raise _Unmodelled
        return item, True
    if not isinstance(annotation, type):
        raise _Unmodelled
    return annotation, False
