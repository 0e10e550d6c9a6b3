"""A command line of the plain shape a batch row or a library call builds (`fit MODEL --flag value
--switch ...`) bound to its command's parameters without rebuilding click's parser for every line.

Click builds an option parser for every command line and walks all of a command's parameters (58
for `fit`) to fill their defaults: about a third of a batch row's time. Here the click command built
once from the app (so from the very declarations the CLI options come from: `cli/options.py`, the
engine settings) is read once per command: each long flag's parameter, and each parameter's
processed default. A line then costs only its own words, each still converted and checked by its own
click parameter (`handle_parse_result`, the method click's parser hands its values to), and the
command is invoked as click invokes it (`Command.invoke`).

Anything outside the plain shape (an unknown or repeated flag, a value that looks like a flag, a
multiple or counting option, a missing argument) or any error while binding goes to click itself, so
an unusual or bad line gets click's own answer and wording.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import typer

from gpusize.dataclass import dataclass

__all__ = ["DirectApp"]

#: Default values shared between command lines as they are (immutable); any other is made per line.
_SHAREABLE = (type(None), bool, int, float, str, tuple, frozenset)


@dataclass(frozen=True)
class _Binding:
    """One command's parameters as click built them: flag -> (parameter, value of a switch)."""

    command: Any
    flags: dict[str, tuple[Any, Any]]
    arguments: tuple[Any, ...]
    defaults: dict[str, Any]
    #: Parameters whose default is processed per line (not shareable, or could not be processed once).
    per_line: tuple[Any, ...]


class _Irregular(Exception):
    """The line is not of the plain shape: click parses it."""


class DirectApp:
    """Called like the click app (`app(args=argv, standalone_mode=False)`): plain lines are bound
    here, any other line is handed to `click_app` unchanged."""

    def __init__(self, click_app: Callable[..., Any]) -> None:
        self._click_app = click_app

    def __call__(self, args: list[str], standalone_mode: bool = False) -> Any:
        try:
            binding = _binding(self._click_app, args[0]) if args else None
            if binding is None:
                raise _Irregular
            ctx = _bound(binding, args)
        except Exception:  # noqa: BLE001 - click answers the line itself, with its own wording
            return self._click_app(args=args, standalone_mode=standalone_mode)
        try:  # as typer's main ends a command (standalone_mode=False)
            with ctx:
                return binding.command.invoke(ctx)
        except EOFError as exc:
            raise typer.Abort() from exc
        except KeyboardInterrupt as exc:
            raise typer.Exit(130) from exc
        except typer.Exit as exc:
            return exc.exit_code


@functools.cache
def _binding(click_app: Any, name: str) -> _Binding | None:
    """The parameters of command `name` (None: not a plain command, e.g. unknown or a group): its
    long flags as click's own parser for it holds them (built once), those that store one value or
    a constant (a switch); a flag that appends or counts, or an eager one (--help), is left to click."""
    command = getattr(click_app, "commands", {}).get(name)
    if command is None or hasattr(command, "commands") or command.callback is None:
        return None
    ctx = command.context_class(command, info_name=name)
    flags: dict[str, tuple[Any, Any]] = {}
    for opt, option in command.make_parser(ctx)._long_opt.items():
        if option.obj.is_eager or not option.obj.expose_value:  # --help: click answers it
            continue
        if option.action == "store" and option.nargs == 1:
            flags[opt] = (option.obj, None)
        elif option.action == "store_const":
            flags[opt] = (option.obj, option.const)
    arguments = tuple(p for p in command.params if p.param_type_name == "argument")
    if any(p.nargs != 1 for p in arguments):
        return None
    flagged = {id(param) for param, _ in flags.values()}
    per_line, defaults = [], {}
    for param in command.params:
        if param.param_type_name == "argument":
            continue
        if id(param) not in flagged or param.is_eager or not param.expose_value:
            per_line.append(param)
            continue
        try:
            value, _ = param.handle_parse_result(ctx, {}, [])
        except Exception:  # noqa: BLE001 - a required option: processed per line (click's error)
            per_line.append(param)
            continue
        if isinstance(value, _SHAREABLE):
            defaults[param.name] = value
        else:
            per_line.append(param)
    return _Binding(command, flags, arguments, defaults, tuple(per_line))


def _bound(binding: _Binding, args: list[str]) -> Any:
    """A context for `args` with every parameter's value, as click's parse would leave it."""
    words = args[1:]
    positional = []
    given: list[tuple[Any, Any]] = []
    seen: set[str] = set()
    i = 0
    while i < len(words):
        word = words[i]
        if not word.startswith("-"):
            positional.append(word)
            i += 1
            continue
        param, switch = binding.flags.get(word, (None, None))
        if param is None or param.name in seen:
            raise _Irregular
        seen.add(param.name)
        if switch is not None:
            given.append((param, switch))
            i += 1
            continue
        if i + 1 >= len(words) or words[i + 1].startswith("-"):
            raise _Irregular
        given.append((param, words[i + 1]))
        i += 2
    if len(positional) != len(binding.arguments):
        raise _Irregular
    ctx = binding.command.context_class(binding.command, info_name=args[0])
    ctx.params.update(binding.defaults)
    for param, value in given:  # options in the line's order, then the arguments, as click's parser
        param.handle_parse_result(ctx, {param.name: value}, [])
    for param, value in zip(binding.arguments, positional, strict=True):
        param.handle_parse_result(ctx, {param.name: value}, [])
    for param in binding.per_line:
        if param.name not in seen:
            param.handle_parse_result(ctx, {}, [])
    return ctx
