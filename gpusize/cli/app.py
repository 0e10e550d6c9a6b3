"""How a command line is run, and the one place errors become exit codes.

A plain line is bound by `cli.bind` without importing typer; any other goes to the typer app
(`cli.typer_app`).

Exit status is the answer, as with grep: 0 fits / ok, 1 does not fit (the report is still printed),
2 bad input or could not answer (one line on stderr), 3 internal error (GPUSIZE_DEBUG=1 prints the
traceback). A closed stdout or stderr never changes it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

from gpusize.cli.bind import bind
from gpusize.cli.capture import current
from gpusize.cli.output import silence_stdout, write_stderr, write_stdout
from gpusize.errors import GpusizeError
from gpusize.render.text import safe

__all__ = ["Exit", "click_errors", "fail", "finish", "main", "run_command", "typer_app"]


class Exit(Exception):  # noqa: N818 - typer's own name for it
    """How a command ends with its verdict (where typer parses the line, as typer.Exit would)."""

    def __init__(self, exit_code: int = 0) -> None:
        super().__init__(exit_code)
        self.exit_code = exit_code


def typer_app() -> Any:
    """The typer app of every registered command (imports typer: only for lines typer parses)."""
    from gpusize.cli.typer_app import app  # noqa: PLC0415 - start-up: typer only for lines it parses

    return app


def __getattr__(name: str) -> Any:
    if name == "app":  # `from gpusize.cli.app import app`: the typer app
        return typer_app()
    raise AttributeError(name)


def finish(text: str | None, code: int) -> None:
    """Print the answer (unless quiet) and end with its verdict."""
    if text:
        write_stdout(text)
    raise Exit(code)


def fail(message: str, hint: str | None = None, code: int = 2) -> int:
    """One line on stderr (lost, not fatal, when stderr is closed); returns the exit code."""
    tail = f" ({hint})" if hint else ""
    captured = current()
    if captured is not None:  # batch keeps the error as the row's answer
        captured.error = safe(message, limit=1000) + safe(tail, limit=500)
        return code
    write_stderr(f"gpusize: error: {safe(message, limit=1000)}{safe(tail, limit=500)}\n")
    return code


def click_errors() -> tuple[type[BaseException], ...]:
    """Click's usage errors, from typer's vendored copy and/or click itself."""
    found: list[type[BaseException]] = []
    for module in ("typer._click.exceptions", "click.exceptions"):
        try:
            found.append(__import__(module, fromlist=["ClickException"]).ClickException)
        except (ImportError, AttributeError):
            continue
    return tuple(found)


def _reader_went_away() -> bool:
    """True when typer/click turned a closed stdout into `sys.exit(1)`: on EPIPE they wrap sys.stdout in
    click's PacifyFlushWrapper and exit 1, which would read as "does not fit". gpusize writes its
    answers through `write_stdout`, which never raises EPIPE, so what reaches typer's handler is
    its own text (--help, usage): informational, exit 0. The wrapper is taken off again."""
    wrapped = getattr(sys.stdout, "wrapped", None)
    if type(sys.stdout).__name__ != "PacifyFlushWrapper" or wrapped is None:
        return False
    sys.stdout = wrapped
    wrapped_err = getattr(sys.stderr, "wrapped", None)
    if type(sys.stderr).__name__ == "PacifyFlushWrapper" and wrapped_err is not None:
        sys.stderr = wrapped_err
    return True


def run_command(argv: list[str] | None, command: Callable[..., Any] | None = None) -> int:
    """Run one command line: bound by `cli.bind` where it is plain, else parsed by `command` (the click
    command built from the typer app once, which batch rows and the library reuse: their lines are
    never a shell's completion) or by the typer app."""
    try:
        bound = bind(argv, from_shell=command is None) if argv is not None else None
        result = bound() if bound is not None else (command or typer_app())(args=argv, standalone_mode=False)
    except GpusizeError as exc:
        return fail(str(exc), exc.hint)
    except Exit as exc:
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # a reader gone before the answer (shell completion, click's own echo)
        silence_stdout()
        return 0
    except SystemExit:
        if _reader_went_away():
            silence_stdout()
            return 0
        raise
    except Exception as exc:  # noqa: BLE001 - the CLI boundary: nothing may read as "does not fit"
        code = _typer_outcome(exc)
        if code is not None:
            return code
        if os.environ.get("GPUSIZE_DEBUG") == "1":
            import traceback  # noqa: PLC0415 - start-up: only for an internal error

            write_stderr("".join(traceback.format_exc()))
        return fail(
            f"internal error: {type(exc).__name__}: {exc} (set GPUSIZE_DEBUG=1 for a traceback; please "
            "report it)",
            code=3,
        )
    return result if isinstance(result, int) else 0


def _typer_outcome(exc: Exception) -> int | None:
    """The exit code of typer's own outcomes (Exit, Abort, click's usage errors); None for any other
    exception. Only a line typer parsed can raise them, so typer is looked at only when imported."""
    if "typer" not in sys.modules:
        return None
    import typer  # noqa: PLC0415 - imported already when one of its outcomes is raised

    if isinstance(exc, typer.Exit):
        return int(exc.exit_code)
    if isinstance(exc, typer.Abort):
        return fail("aborted")
    if isinstance(exc, click_errors()):
        return fail(exc.format_message().splitlines()[0])  # type: ignore[attr-defined]
    return None


def main(argv: list[str] | None = None) -> None:
    """Entry point: translate errors once, here; never let an exception read as 'does not fit'."""
    code = run_command(argv)
    try:
        if sys.stdout is not None:
            sys.stdout.flush()
    except (OSError, ValueError):
        silence_stdout()
    sys.exit(code)
