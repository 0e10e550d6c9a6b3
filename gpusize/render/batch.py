"""`gpusize batch` as a table, CSV or JSON Lines (rendering only)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gpusize.render.fit import headline as fit_headline
from gpusize.render.quote import quote_headline
from gpusize.render.sheet import ValueColumn, value_csv
from gpusize.render.table import Column, render_table
from gpusize.render.text import Style, safe
from gpusize.render.train import headline as train_headline
from gpusize.reports.batch import BatchReport
from gpusize.reports.fit import FitReport
from gpusize.reports.quote import QuoteReport
from gpusize.reports.serialize import json_lines
from gpusize.reports.train import TrainReport

__all__ = ["batch_csv", "batch_jsonl", "headline_of", "render_batch"]

#: Width a report without a one-line headline is rendered at for its first line: never wrapped.
_ONE_LINE = 1 << 16


def headline_of(report: Any, text: Callable[[int, Style], str] | None) -> str:
    """A row's one-line answer: the command's own headline (fit, train, quote), else the first line of
    its text rendering."""
    if isinstance(report, FitReport):
        return fit_headline(report)
    if isinstance(report, TrainReport):
        return train_headline(report)
    if isinstance(report, QuoteReport):
        return quote_headline(report)
    return text(_ONE_LINE, Style()).split("\n", 1)[0] if text else ""


_VERDICT = {0: "yes", 1: "no", 2: "error", 3: "internal error"}

_CSV: list[ValueColumn] = [
    ("line", lambda r: r.line, 0),
    ("command", lambda r: r.command, 0),
    ("model", lambda r: r.model, 0),
    ("exit_code", lambda r: r.exit_code, 0),
    ("answer", lambda r: r.answer, 0),
    ("warnings", lambda r: " | ".join(r.warnings) or None, 0),
]


def render_batch(report: BatchReport, width: int, style: Style) -> str:
    rows = [
        [str(r.line), r.command, safe(r.model or "-"), _VERDICT.get(r.exit_code, "?"), safe(r.answer)]
        for r in report.rows
    ]
    columns = [
        Column("line", align="right", keep=True),
        Column("command", priority=1),
        Column("model", keep=True),
        Column("verdict", keep=True, styles=(("yes", ("green",)), ("no", ("red",)), ("error", ("red",)))),
        Column("answer", prose=True),
    ]
    tail = ", ".join(f"{n} {name}" for name, n in report.counts.items() if n)
    body = render_table(None, columns, rows, width, style)
    return f"{body}\n{len(report.rows)} rows: {tail}\n"


def batch_csv(report: BatchReport) -> str:
    return value_csv(_CSV, report.rows)


def batch_jsonl(report: BatchReport) -> str:
    """One JSON object per row, in input order (the rows of `--format json`)."""
    return json_lines(report.rows)
