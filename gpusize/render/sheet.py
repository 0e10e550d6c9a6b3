"""Tables as Markdown (pastes into a ticket) and CSV (spreadsheets): the same columns and cells as the
terminal table of a command (`quote`, `serve`, `which`), every column shown. Rendering only.

Every value is escaped for its format: HTML-escaped in Markdown (a model id can hold
`<img onerror=...>`), `|` escaped in Markdown tables, and CSV cells that a spreadsheet would run as a
formula (`=`, `+`, `-`, `@` first) prefixed with a quote. Control characters (an ESC sequence from a
config, a folder name or a user catalog) are shown as escapes, as on the terminal: these exports are
printed to stdout too.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Sequence
from dataclasses import fields
from typing import Any, TypeVar

from gpusize.render.table import Column
from gpusize.render.text import safe

__all__ = ["assumption_items", "md", "sheet_csv", "sheet_markdown"]

Row = TypeVar("Row")
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def assumption_items(report: Any) -> list[tuple[str, str]]:
    """The report's assumptions (a dataclass) as (name, text) pairs."""
    a = report.assumptions
    return [
        (f.name, "; ".join(v) if isinstance(v := getattr(a, f.name), tuple) else str(v))
        for f in fields(a)
        if f.metadata.get("sheet", True)
    ]


def _escape(text: str) -> str:
    """`html.escape(text)` (quotes included), without importing `html` on the `serve`/`which` path."""
    for char, entity in (("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"), ('"', "&quot;"), ("'", "&#x27;")):
        text = text.replace(char, entity)
    return text


def md(text: str) -> str:
    """A Markdown table cell or line: HTML-escaped (so no tag runs), pipes and newlines neutralised."""
    return _escape(safe(text.replace("\n", " "))).replace("|", "\\|").replace("`", "&#96;")


def _csv_cell(text: str) -> str:
    text = safe(text)
    if text.startswith(_FORMULA_START) and text not in ("-",) and not _is_number(text):
        return "'" + text
    return text


def _is_number(text: str) -> bool:
    try:
        float(text.replace(",", ""))
    except ValueError:
        return False
    return True


def sheet_markdown(
    heading: str,
    lead: list[str],
    table: Sequence[tuple[Column, Callable[[Row], str]]],
    rows: Sequence[Row],
    assumptions: list[tuple[str, str]],
    extra: list[str] | None = None,
) -> str:
    """A Markdown section: heading, lead lines, the table (every column), extra lines after it, and the
    assumptions."""
    lines = [f"## {md(heading)}", ""]
    lines += [*lead, ""] if lead else []
    lines.append("| " + " | ".join(md(col.header) for col, _ in table) + " |")
    lines.append("|" + "---|" * len(table))
    lines += ["| " + " | ".join(md(cell(row)) for _, cell in table) + " |" for row in rows]
    lines += extra or []
    lines += ["", "### Assumptions", ""] + [f"- {k}: {md(v)}" for k, v in assumptions]
    return "\n".join(lines) + "\n"


def sheet_csv(table: Sequence[tuple[Column, Callable[[Row], str]]], rows: Sequence[Row]) -> str:
    """The table as CSV (every column; header row first)."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow([col.header for col, _ in table])
    for row in rows:
        writer.writerow([_csv_cell(cell(row)) for _, cell in table])
    return out.getvalue()
