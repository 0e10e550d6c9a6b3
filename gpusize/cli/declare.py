"""Commands and their options declared without importing typer.

Importing typer (and the click it vendors) is most of a plain `gpusize fit`'s start-up beyond
gpusize's own modules (about 80M of its ~520M instructions, and building the 70-odd click options of
a command ~30M more). A command module therefore declares its options with `Option` / `Argument`,
which take exactly the arguments of `typer.Option` / `typer.Argument` and only record them, and
registers itself with `command`, which takes the arguments of `Typer.command`. From these one
declaration both parsers are derived:

- `cli.bind` binds a plain command line to the command's parameters itself (no typer imported);
- `typer_command` gives the same function with the recorded declarations made into typer's own, for
  the typer app (`cli.app.typer_app`) that answers everything else: --help, completion, an unusual
  or a bad line, with typer's and click's own wording.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Annotated, Any, TypeVar, get_args, get_origin

__all__ = ["COMMANDS_DECLARED", "Argument", "Declared", "Option", "command", "typer_command"]

_Command = TypeVar("_Command", bound=Callable[..., Any])


class Declared:
    """The arguments of one `typer.Option(...)` or `typer.Argument(...)` call, not yet made."""

    __slots__ = ("args", "kind", "kwargs")

    def __init__(self, kind: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        self.kind = kind
        self.args = args
        self.kwargs = kwargs

    def to_typer(self) -> Any:
        """typer's own ParameterInfo, made from the recorded arguments."""
        import typer  # noqa: PLC0415 - only where typer parses or describes the line

        made = typer.Option if self.kind == "option" else typer.Argument
        return made(*self.args, **self.kwargs)

    def __repr__(self) -> str:
        return f"Declared({self.kind!r}, {self.args!r}, {self.kwargs!r})"


def Option(*args: Any, **kwargs: Any) -> Any:  # noqa: N802 - typer's own name, so declarations read alike
    """`typer.Option(...)`, recorded (see the module's docstring)."""
    return Declared("option", args, kwargs)


def Argument(*args: Any, **kwargs: Any) -> Any:  # noqa: N802
    """`typer.Argument(...)`, recorded."""
    return Declared("argument", args, kwargs)


class Registered:
    """One command: its function (parameters as declared) and the arguments of `Typer.command`."""

    __slots__ = ("function", "name", "typer_kwargs")

    def __init__(self, name: str, function: Callable[..., Any], typer_kwargs: dict[str, Any]) -> None:
        self.name = name
        self.function = function
        self.typer_kwargs = typer_kwargs


#: Every command registered so far, by name, in the order their modules were imported (the order
#: `gpusize --help` lists them).
COMMANDS_DECLARED: dict[str, Registered] = {}

#: Called with each command registered after the typer app was built (so it holds every command).
_LATE: list[Callable[[Registered], None]] = []


def command(name: str | None = None, **typer_kwargs: Any) -> Callable[[_Command], _Command]:
    """Register a command (the arguments of typer's `Typer.command`)."""

    def register(function: _Command) -> _Command:
        key = name or function.__name__.replace("_", "-")  # typer's own default name
        COMMANDS_DECLARED[key] = found = Registered(key, function, typer_kwargs)
        for listener in _LATE:
            listener(found)
        return function

    return register


def on_late_command(listener: Callable[[Registered], None]) -> None:
    """Have `listener` told of every command registered from now on."""
    _LATE.append(listener)


def _typer_annotation(annotation: Any) -> Any:
    if get_origin(annotation) is not Annotated:
        return annotation
    base, *metadata = get_args(annotation)
    made = tuple(m.to_typer() if isinstance(m, Declared) else m for m in metadata)
    return Annotated[(base, *made)]


def typer_command(function: Callable[..., Any]) -> Callable[..., Any]:
    """`function` with its declarations made into typer's (signature and annotations), for typer."""
    signature = inspect.signature(function, eval_str=True)
    params = [
        p.replace(
            annotation=_typer_annotation(p.annotation),
            default=p.default.to_typer() if isinstance(p.default, Declared) else p.default,
        )
        for p in signature.parameters.values()
    ]

    @functools.wraps(function)
    def wrapper(**kwargs: Any) -> Any:
        return function(**kwargs)

    del wrapper.__wrapped__  # typer reads the signature below
    wrapper.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
    wrapper.__annotations__ = {p.name: p.annotation for p in params}
    return wrapper
