"""One command run in process, its answer taken as a value: the rows of `gpusize batch` and the
library API (`gpusize.api`). A row or a call is turned into the command line a user would type, so
it goes through the very same option parsing, checks and planning as that command line does.
"""

from __future__ import annotations

import functools
import math
import sys
from collections.abc import Callable, Mapping
from typing import Any

from gpusize.cli import COMMANDS, register
from gpusize.cli.app import Exit, click_errors, run_command, typer_app
from gpusize.cli.bind import bind, switch_flags
from gpusize.cli.capture import Captured, capture
from gpusize.errors import UsageError
from gpusize.render.text import safe

__all__ = ["argv_for", "option_flag", "report_of", "run_captured"]

#: The values a boolean option takes in a CSV cell (a JSON row gives true/false itself).
TRUE_WORDS = frozenset({"true", "yes", "1", "on"})
FALSE_WORDS = frozenset({"false", "no", "0", "off", ""})


def option_flag(key: str) -> str:
    """`engine_version` -> `--engine-version`: a row's key is the long flag without its dashes."""
    name = key.strip().lower().replace("_", "-")
    if not name or name.startswith("-") or not all(c.isalnum() or c == "-" for c in name):
        raise UsageError(f"unknown option '{safe(key[:60])}': use a long flag name without dashes")
    return f"--{name}"


def argv_for(command: str, model: str | None, options: Mapping[str, object]) -> list[str]:
    """The command line of one configuration: the command, the model (for the commands that take one)
    and one `--flag value` per option; a switch (an option that takes no value) is its bare flag when
    true, its `--no-` form when false where it has one (else left out), true or false given as a JSON
    boolean or a CSV cell (`TRUE_WORDS`, `FALSE_WORDS`); a list repeats the flag (`--models-file a
    --models-file b`); None or "" leaves it out."""
    if command not in COMMANDS:
        raise UsageError(f"unknown command '{safe(command[:40])}'; use one of {', '.join(COMMANDS)}")
    argv = [command] + ([model] if model else [])
    switches = _switches(command)
    for key, value in options.items():
        flag = option_flag(key)
        argv += _switch(flag, value, switches[flag]) if flag in switches else _words(flag, value)
    return argv


@functools.cache
def _switches(command: str) -> dict[str, str | None]:
    """The command's options that take no value (click's flags), by long flag -> its off form."""
    declared = switch_flags(command)
    if declared is not None:
        return declared
    found: dict[str, str | None] = {}
    for param in _click_app().commands[command].params:  # type: ignore[attr-defined]
        if getattr(param, "is_flag", False) and not getattr(param, "count", False):
            off = next((o for o in param.secondary_opts if o.startswith("--")), None)
            for name in param.opts:
                if name.startswith("--"):
                    found[name] = off
    return found


def _switch(flag: str, value: object, off: str | None) -> list[str]:
    word = value.strip().lower() if isinstance(value, str) else value
    if word is None or word == "":
        return []
    if word is True or word in TRUE_WORDS:
        return [flag]
    if word is False or word in FALSE_WORDS:
        return [off] if off else []
    raise UsageError(f"invalid {flag} {safe(str(value)[:40])!r}: a switch takes true or false")


def _words(flag: str, value: object) -> list[str]:
    if value is None:
        return []
    if isinstance(value, bool):
        return [flag] if value else []
    if isinstance(value, (list, tuple)):
        return [word for item in value for word in _words(flag, item)]
    if isinstance(value, float) and not math.isfinite(value):
        raise UsageError(f"invalid {flag} {value}: not a finite number")
    if isinstance(value, (int, float)):
        return [flag, repr(value) if isinstance(value, float) else str(value)]
    if isinstance(value, str):
        return [] if value == "" else [flag, value]
    raise UsageError(f"invalid {flag}: expected a string, number or boolean, got {type(value).__name__}")


def run_captured(argv: list[str]) -> Captured:
    """Run one command line in this process and return its answer as a value (nothing printed): the
    report, the exit code the command would end with, and its error line when it could not answer."""
    with capture() as got:
        got.code = run_command(argv, _click_app())
    return got


@functools.cache
def _click_app() -> Callable[..., Any]:
    """The click command of the whole app with every command registered, built once per process (for
    the lines `cli.bind` leaves to click)."""
    import typer  # noqa: PLC0415 - only for lines click parses

    register([])
    command: Callable[..., Any] = typer.main.get_command(typer_app())
    return command


def report_of(argv: list[str]) -> Any:
    """The report of one command line, for the library: a GpusizeError (the very error the command
    line would print) is raised, not turned into an exit code; a usage error of the option parser
    (an unknown option, a bad number) is raised as UsageError."""
    with capture() as got:
        try:
            bound = bind(argv, from_shell=False)
            if bound is not None:
                bound()
            else:
                _click_app()(args=argv, standalone_mode=False)
        except Exit:
            pass
        except Exception as exc:
            _raise_usage(exc)
    if got.report is None:
        raise UsageError(got.error or f"'{safe(' '.join(argv)[:80])}' gives no report")
    return got.report


def _raise_usage(exc: Exception) -> None:
    """typer's Exit ends the call; click's usage error is raised as UsageError; any other is raised."""
    if "typer" in sys.modules:
        import typer  # noqa: PLC0415 - imported already when one of its outcomes is raised

        if isinstance(exc, typer.Exit):
            return
        if isinstance(exc, click_errors()):
            raise UsageError(exc.format_message().splitlines()[0]) from None  # type: ignore[attr-defined]
    raise exc
