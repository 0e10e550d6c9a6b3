"""One way every command answers: nothing (--quiet), one JSON object (--json or --format json), an
export (--format markdown / csv / html where the command has them) or the text rendering."""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from typing import Any

from gpusize.cli.app import finish
from gpusize.cli.capture import current
from gpusize.cli.prepare import choice
from gpusize.errors import UsageError
from gpusize.render.text import Style, terminal_width
from gpusize.reports.serialize import to_json

__all__ = ["answer", "only_the_verdict", "output_format", "taken", "verdict"]


def output_format(fmt: str | None, as_json: bool, formats: tuple[str, ...]) -> str:
    """The format asked for: `--format` (one of `formats`), `--json` (= `--format json`), else table."""
    if fmt is None:
        return "json" if as_json else "table"
    chosen = choice(fmt, formats, "--format")
    if as_json and chosen != "json":
        raise UsageError(f"--json and --format {chosen} ask for two formats; give one")
    return chosen


def taken(report: Any, code: int, text: Callable[[int, Style], str]) -> None:
    """Under `capture()` (batch rows, the library API) the answer is kept as a value and the command
    ends here, printing nothing; otherwise nothing happens."""
    captured = current()
    if captured is not None:
        captured.report, captured.code, captured.text = report, code, text
        finish(None, code)


def only_the_verdict(quiet: bool) -> bool:
    """Whether the answer is its exit code alone (--quiet, not kept as a value by `capture()`): a
    command may then compute only what decides the code, and end with `verdict`."""
    return quiet and current() is None


def verdict(code: int, fmt: str | None, as_json: bool, exports: tuple[str, ...] = ()) -> None:
    """End a --quiet answer with `code`, a format asked for refused as `answer` refuses it."""
    output_format(fmt, as_json, ("table", "json", *exports))
    finish(None, code)


def answer(
    report: Any,
    code: int,
    quiet: bool,
    as_json: bool,
    text: Callable[[int, Style], str],
    fmt: str | None = None,
    exports: Mapping[str, Callable[[], str]] | None = None,
) -> None:
    """Print the report as asked and end with `code` (the verdict)."""
    exports = exports or {}
    form = output_format(fmt, as_json, ("table", "json", *exports))
    taken(report, code, text)
    if quiet:
        finish(None, code)
    if form == "json":
        finish(to_json(report) + "\n", code)
    if form in exports:
        finish(exports[form](), code)
    finish(text(terminal_width(sys.stdout), Style.for_stream(sys.stdout)), code)
