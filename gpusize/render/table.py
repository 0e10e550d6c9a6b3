"""Plain-text tables that fit the terminal (no dependencies, so the common commands start fast).

Each column has a priority. When the table is wider than the terminal, headers are abbreviated
first, then the least important columns are dropped one by one; columns marked `keep` (the verdict,
the GPU, the count) are never dropped, and a long free-text column is cut with an ellipsis before
anything else goes. Dropped columns are named under the table, so a reader knows to widen the
terminal or ask for `--json`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from gpusize.render.text import Style, safe

__all__ = ["Column", "render_table"]

GAP = "  "


@dataclass(frozen=True)
class Column:
    header: str
    align: Literal["left", "right"] = "left"
    #: Higher stays longer; columns with keep=True are never dropped.
    priority: int = 0
    keep: bool = False
    short: str | None = None
    #: A free-text column that may be cut (with ...) to this width before other columns are dropped.
    shrink_to: int | None = None
    #: Cell styles for the terminal, by exact cell value (colour never carries the meaning alone).
    styles: tuple[tuple[str, tuple[str, ...]], ...] = ()


def _width(cols: list[tuple[Column, str, int]]) -> int:
    return sum(w for _, _, w in cols) + len(GAP) * (len(cols) - 1)


def _layout(
    columns: list[Column], rows: list[list[str]], width: int
) -> tuple[list[tuple[int, str, int]], list[str]]:
    """(index, header, width) of the columns shown, and the headers of those dropped."""
    natural = [max([len(c.header), *(len(r[i]) for r in rows)]) for i, c in enumerate(columns)]
    shown = [(i, c.header, natural[i]) for i, c in enumerate(columns)]

    def total() -> int:
        return sum(w for _, _, w in shown) + len(GAP) * (len(shown) - 1)

    if total() > width:  # abbreviate headers
        shown = [
            (i, columns[i].short or h, max([len(columns[i].short or h), *(len(r[i]) for r in rows)]))
            for i, h, _ in shown
        ]
    for i, _, w in list(shown):  # cut free-text columns
        col = columns[i]
        if total() > width and col.shrink_to is not None:
            cut = max(col.shrink_to, w - (total() - width))
            shown = [(j, hh, cut if j == i else ww) for j, hh, ww in shown]
    dropped: list[str] = []
    while total() > width:
        candidates = [(columns[i].priority, -i, i) for i, _, _ in shown if not columns[i].keep]
        if not candidates:
            break
        _, _, victim = min(candidates)
        dropped.append(columns[victim].header)
        shown = [s for s in shown if s[0] != victim]
    return shown, dropped


def _cell(text: str, width: int, align: str) -> str:
    if len(text) > width:
        text = text[: max(width - 3, 1)] + "..." if width > 3 else text[:width]
    return text.rjust(width) if align == "right" else text.ljust(width)


def render_table(
    title: str | None, columns: list[Column], rows: list[list[str]], width: int, style: Style = Style()
) -> str:
    """The table as text lines, fitted to `width` columns."""
    rows = [[safe(cell) for cell in row] for row in rows]
    columns = [Column(**{**c.__dict__, "header": safe(c.header)}) for c in columns]
    shown, dropped = _layout(columns, rows, width)
    lines = []
    if title:
        lines.append(style(safe(title), "bold"))
    header = GAP.join(_cell(h, w, columns[i].align) for i, h, w in shown)
    lines.append(style(header.rstrip(), "bold"))
    lines.append(GAP.join("-" * w for _, _, w in shown))
    for row in rows:
        cells = []
        for i, _, w in shown:
            text = _cell(row[i], w, columns[i].align)
            styles = dict(columns[i].styles).get(row[i].strip())
            cells.append(style(text, *styles) if styles else text)
        lines.append(GAP.join(cells).rstrip())
    if dropped:
        lines.append(
            style(f"(not shown at this width: {', '.join(dropped)}; widen the terminal or use --json)", "dim")
        )
    return "\n".join(lines)
