"""Plain-text tables that fit the terminal (no dependencies, so the common commands start fast).

Each column has a priority. When the table is wider than the terminal, headers are abbreviated
first, then free-text columns (reasons, caveats) leave the table and are listed under it, one wrapped
line per row, then the least important columns are dropped one by one. Columns marked `keep` (the
verdict, the GPU, the count) are never dropped, and no cell is ever cut or wrapped. Dropped columns
are named under the table, so a reader knows to widen the terminal or ask for `--json`. Titles and
notes wrap to the width: no line is longer than the terminal (unless the kept columns alone are).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Literal

from gpusize.dataclass import dataclass
from gpusize.render.text import Style, paragraph, safe

__all__ = ["NEAREST", "VERDICT_STYLES", "Column", "LaidOut", "laid_out", "render_table", "shown_headers"]

GAP = "  "

#: The styles of a "fits" column's verdicts (fit, which, serve, train).
VERDICT_STYLES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("yes", ("green",)),
    ("yes, thin margin", ("yellow",)),
    ("yes, queues", ("yellow",)),
    ("NO", ("red", "bold")),
)

#: Rows of the default `fit` and `train` tables beside the pick (`--all` shows one row per GPU type).
NEAREST = 3


@dataclass(frozen=True)
class Column:
    """One column of a text table: its header, alignment, and how it gives way when the terminal is
    narrow (priority, keep, a shorter header, prose listed under the table)."""

    header: str
    align: Literal["left", "right"] = "left"
    #: Higher stays longer; columns with keep=True are never dropped.
    priority: int = 0
    keep: bool = False
    short: str | None = None
    #: Free text (a reason, a caveat, an explanation): never cut or wrapped inside a cell; when the table
    #: is too wide it is listed under the table as "<first cell>: <text>", one wrapped line per row.
    prose: bool = False
    #: Cell styles for the terminal, by exact cell value (colour never carries the meaning alone).
    styles: tuple[tuple[str, tuple[str, ...]], ...] = ()


@dataclass(frozen=True)
class _Layout:
    """How a table is laid out at one width: the columns shown with their widths, the prose columns
    listed below it, and the headers left out."""

    shown: list[tuple[int, str, int]]  # (column index, header, width)
    below: list[int]  # prose columns listed under the table
    dropped: list[str]  # headers of the columns left out


def _layout(columns: list[Column], rows: list[list[str]], width: int) -> _Layout:
    natural = [max([len(c.header), *(len(r[i]) for r in rows)]) for i, c in enumerate(columns)]
    shown = [(i, c.header, natural[i]) for i, c in enumerate(columns)]

    def total() -> int:
        return sum(w for _, _, w in shown) + len(GAP) * (len(shown) - 1)

    if total() > width:  # abbreviate headers
        shown = [
            (i, columns[i].short or h, max([len(columns[i].short or h), *(len(r[i]) for r in rows)]))
            for i, h, _ in shown
        ]
    below = [i for i, _, _ in shown if columns[i].prose] if total() > width else []
    shown = [s for s in shown if s[0] not in below]
    dropped: list[str] = []
    while total() > width:
        candidates = [(columns[i].priority, -i, i) for i, _, _ in shown if not columns[i].keep]
        if not candidates:
            break
        _, _, victim = min(candidates)
        dropped.append(columns[victim].header)
        shown = [s for s in shown if s[0] != victim]
    return _Layout(shown, below, dropped)


def _cell(text: str, width: int, align: str) -> str:
    return text.rjust(width) if align == "right" else text.ljust(width)


@dataclass(frozen=True)
class LaidOut:
    """A table's columns and cells as it prints them (`safe`: no control characters) and its layout at
    one width: made once by `laid_out`, read by `shown_headers` and `render_table`."""

    columns: list[Column]
    rows: list[list[str]]
    layout: _Layout


def laid_out(columns: list[Column], rows: list[list[str]], width: int) -> LaidOut:
    """The table of these columns and cells laid out at `width`."""
    safe_columns = [replace(c, header=safe(c.header)) for c in columns]
    safe_rows = [[safe(cell) for cell in row] for row in rows]
    return LaidOut(safe_columns, safe_rows, _layout(safe_columns, safe_rows, width))


def shown_headers(columns: list[Column], laid: LaidOut) -> list[str]:
    """The headers (in full, as in `columns`) of the columns `laid` shows: a column whose cells are
    left to be filled can be asked about first. Wider cells never bring a dropped column back: each
    step of `_layout` (abbreviate, list prose below, drop by priority) happens when the table is too
    wide, and wider cells only make it wider."""
    return [columns[i].header for i, _, _ in laid.layout.shown]


def render_table(
    title: str | None,
    columns: list[Column],
    rows: list[list[str]],
    width: int,
    style: Style = Style(),
    laid: LaidOut | None = None,
) -> str:
    """The table as text lines, fitted to `width` columns; prose that does not fit goes under it.
    `laid`: `laid_out(columns, rows, width)` where the caller has it already."""
    if laid is None:
        laid = laid_out(columns, rows, width)
    columns, rows, layout = laid.columns, laid.rows, laid.layout
    lines = []
    if title:
        lines.append(style(paragraph(title, width), "bold"))
    header = GAP.join(_cell(h, w, columns[i].align) for i, h, w in layout.shown)
    lines.append(style(header.rstrip(), "bold"))
    lines.append(GAP.join("-" * w for _, _, w in layout.shown))
    # each shown column's padding and cell styles, found once for all its rows (a quote over 1,000 GPU
    # types has 9,000 cells)
    padded = [
        (i, w, str.rjust if columns[i].align == "right" else str.ljust, dict(columns[i].styles))
        for i, _, w in layout.shown
    ]
    for row in rows:
        cells = []
        for i, w, pad, by_value in padded:
            text = pad(row[i], w)
            styles = by_value.get(row[i].strip()) if by_value else None
            cells.append(style(text, *styles) if styles else text)
        lines.append(GAP.join(cells).rstrip())
    for i in layout.below:
        lines += [paragraph(f"{row[0]}: {row[i]}", width) for row in rows if row[i].strip()]
    if layout.dropped:
        shown = ", ".join(layout.dropped)
        lines.append(
            style(
                paragraph(f"(not shown at this width: {shown}; widen the terminal or use --json)", width),
                "dim",
            )
        )
    return "\n".join(lines)
