"""One way every command answers: nothing (--quiet), one JSON object (--json) or the text rendering."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from gpusize.cli.app import finish
from gpusize.render.text import Style, terminal_width
from gpusize.reports.serialize import to_json

__all__ = ["answer"]


def answer(report: Any, code: int, quiet: bool, as_json: bool, text: Callable[[int, Style], str]) -> None:
    """Print the report as asked and end with `code` (the verdict)."""
    if quiet:
        finish(None, code)
    if as_json:
        finish(to_json(report) + "\n", code)
    finish(text(terminal_width(sys.stdout), Style.for_stream(sys.stdout)), code)
