"""The Typer app and the one place errors become exit codes.

Exit status is the answer, as with grep: 0 fits / ok, 1 does not fit (the report is still printed),
2 bad input or could not answer (one line on stderr), 3 internal error (GPUSIZE_DEBUG=1 prints the
traceback). A closed stdout or stderr never changes it.
"""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Callable
from typing import Any

import typer

from gpusize import __version__
from gpusize.cli.capture import current
from gpusize.cli.output import silence_stdout, write_stderr, write_stdout
from gpusize.errors import GpusizeError
from gpusize.render.text import safe

__all__ = ["app", "click_errors", "fail", "finish", "main", "run_command"]

app = typer.Typer(
    add_completion=True,
    no_args_is_help=False,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    help="How much GPU memory does this LLM need, and which GPUs in one server run it?",
)


def _version(value: bool) -> None:
    if value:
        write_stdout(f"gpusize {__version__}\n")
        raise typer.Exit(0)


@app.callback(invoke_without_command=True)
def _root(
    ctx: typer.Context,
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version."
    ),
) -> None:
    """gpusize sizes LLM inference and training memory and picks the smallest set of GPUs in one server."""
    if ctx.invoked_subcommand is None:
        write_stdout(ctx.get_help() + "\n")
        raise typer.Exit(0)


def finish(text: str | None, code: int) -> None:
    """Print the answer (unless quiet) and end with its verdict."""
    if text:
        write_stdout(text)
    raise typer.Exit(code)


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
    """Run one command line; `command`: the click command built from `app` once (batch rows reuse it,
    as building it is most of a small command's cost), else `app` builds it for this call."""
    try:
        result = (command or app)(args=argv, standalone_mode=False)
    except GpusizeError as exc:
        return fail(str(exc), exc.hint)
    except typer.Exit as exc:
        return int(exc.exit_code)
    except typer.Abort:
        return fail("aborted")
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
        if isinstance(exc, click_errors()):
            return fail(exc.format_message().splitlines()[0])  # type: ignore[attr-defined]
        if os.environ.get("GPUSIZE_DEBUG") == "1":
            write_stderr("".join(traceback.format_exc()))
        return fail(
            f"internal error: {type(exc).__name__}: {exc} (set GPUSIZE_DEBUG=1 for a traceback; please "
            "report it)",
            code=3,
        )
    return result if isinstance(result, int) else 0


def main(argv: list[str] | None = None) -> None:
    """Entry point: translate errors once, here; never let an exception read as 'does not fit'."""
    code = run_command(argv)
    try:
        if sys.stdout is not None:
            sys.stdout.flush()
    except (OSError, ValueError):
        silence_stdout()
    sys.exit(code)
