"""Tables as Markdown (pastes into a ticket: the same columns and cells as the terminal table of a
command, `quote`, `serve`, `which`, every column shown) and CSV (spreadsheets: the command's plain
values, `value_csv`). Rendering only.

Every value is escaped for its format: in Markdown every character Markdown acts on inline gets a
backslash (so `<img onerror=...>` in a model id is text, not a tag, and `|` does not split a table
cell), and CSV cells that a spreadsheet would run as a formula (`=`, `+`, `-`, `@` first) are prefixed
with a quote. `value_csv` writes a table of plain values: numbers without thousands separators or
suffixes, units in the headers, one column per figure. Control characters (an ESC sequence from a
config, a folder name or a user catalog) are shown as escapes, as on the terminal: these exports are
printed to stdout too.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from dataclasses import fields
from typing import Any, TypeAlias, TypeVar

from gpusize.render.table import Column
from gpusize.render.text import safe

__all__ = ["Value", "ValueColumn", "assumption_items", "md", "sheet_markdown", "value_csv"]

Row = TypeVar("Row")
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
#: Characters CommonMark and GitHub-flavoured Markdown act on inside a line: code spans, emphasis,
#: links, raw HTML and entities, table cells, strikethrough and GitHub's `$` math. Each gets a
#: backslash (CommonMark spec 0.31, "Backslash escapes": any ASCII punctuation may be escaped).
#: `-`, `+`, `#`, `.` and `!` act only at the start of a line or before `[`, so they stay readable.
_MARKDOWN_SPECIAL = frozenset("\\`*_[]<>|&~$")

#: A plain CSV value: text, a number, yes/no, or unknown (an empty cell).
Value: TypeAlias = str | int | float | bool | None
#: (header with its unit, the row's value, decimals for a float).
ValueColumn: TypeAlias = tuple[str, Callable[[Any], Value], int]


def assumption_items(report: Any) -> list[tuple[str, str]]:
    """The report's assumptions (a dataclass) as (name, text) pairs."""
    a = report.assumptions
    return [
        (f.name, "; ".join(v) if isinstance(v := getattr(a, f.name), tuple) else str(v))
        for f in fields(a)
        if f.metadata.get("sheet", True)
    ]


def md(text: str) -> str:
    """A Markdown table cell or line: every inline Markdown character backslash-escaped (so no tag,
    code span or emphasis runs and pipes do not split a cell), newlines joined, control characters
    shown as escapes. A reader sees the text as written, without HTML entities."""
    return "".join("\\" + ch if ch in _MARKDOWN_SPECIAL else ch for ch in safe(text.replace("\n", " ")))


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
    lines += ["", "### Assumptions", ""] + [f"- {md(k)}: {md(v)}" for k, v in assumptions if v]
    return "\n".join(lines) + "\n"


def _value_cell(value: Value, digits: int) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return _csv_cell(value)


def value_csv(columns: Sequence[ValueColumn], rows: Sequence[Any]) -> str:
    """Plain values as CSV: a header row (each header names its unit), then one row per row; numbers
    as digits and a point, an unknown value as an empty cell."""
    import csv  # noqa: PLC0415 - start-up: only a CSV export writes one

    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([header for header, _, _ in columns])
    for row in rows:
        writer.writerow([_value_cell(value(row), digits) for _, value, digits in columns])
    return out.getvalue()
