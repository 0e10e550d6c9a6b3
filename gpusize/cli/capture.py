"""Answers taken as values instead of printed: how `gpusize batch` and the library API run a command.

A command ends by handing its report to `cli.emit.answer`, which prints it, and its errors become one
line from `cli.app.fail`. Inside `capture()` both are kept instead (the report, the exit code, the
text rendering, the error and warning lines), so one process can run many commands and return each
answer as data, with exactly the code path a single command takes.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import Any

__all__ = ["Captured", "capture", "current"]


class Captured:
    """What one command answered: its report value, exit code, text rendering (a function of the
    width and style, as `answer` takes it), the error line and the warnings it would have printed.
    A plain class: it is defined on every start (`cli.app` imports this module)."""

    __slots__ = ("code", "error", "report", "text", "warnings")

    def __init__(self) -> None:
        self.report: Any = None
        self.code = 0
        self.text: Callable[[int, Any], str] | None = None
        self.error: str | None = None
        self.warnings: list[str] = []


_CURRENT: ContextVar[Captured | None] = ContextVar("gpusize_capture", default=None)


def current() -> Captured | None:
    """The capture in force, or None when answers are printed."""
    return _CURRENT.get()


@contextlib.contextmanager
def capture() -> Iterator[Captured]:
    got = Captured()
    token = _CURRENT.set(got)
    try:
        yield got
    finally:
        _CURRENT.reset(token)
