"""The reverse-query report as text: the models that fit, fastest first. `WHICH_COLUMNS` is shared with
the Markdown and CSV exports, so every format shows the same cells."""

from __future__ import annotations

from collections.abc import Callable

from gpusize.render.fit import VERDICT_STYLES
from gpusize.render.format import fmt_gib, fmt_int, human_tokens
from gpusize.render.sheet import assumption_items, sheet_csv, sheet_markdown
from gpusize.render.table import Column, render_table
from gpusize.render.text import Style, paragraph
from gpusize.reports.which import WhichReport
from gpusize.serving.which import ModelFit

__all__ = ["WHICH_COLUMNS", "render_which", "title", "which_csv", "which_markdown"]

#: (column, its text cell).
WHICH_COLUMNS: list[tuple[Column, Callable[[ModelFit], str]]] = [
    (Column("model", keep=True), lambda r: r.name),
    (Column("fits", keep=True, styles=VERDICT_STYLES), lambda r: "yes" if r.fits else "NO"),
    (
        Column("params", "right", priority=8),
        lambda r: f"{r.params_total / 1e9:.1f}B" if r.params_total else "-",
    ),
    (Column("TP", "right", priority=9), lambda r: str(r.tensor_parallel or "-")),
    (Column("headroom GiB", "right", priority=5, short="headroom"), lambda r: fmt_gib(r.headroom_bytes)),
    (
        Column("KV pool tokens", "right", priority=4, short="KV tokens"),
        lambda r: fmt_int(r.kv_cache_capacity_tokens),
    ),
    (
        Column("concurrency", "right", priority=6, short="conc."),
        lambda r: f"{r.max_concurrency:.1f}x" if r.max_concurrency is not None else "-",
    ),
    (Column("tok/s", "right", priority=7), lambda r: f"{r.tokens_per_s:,.0f}" if r.tokens_per_s else "-"),
    (Column("why not", prose=True), lambda r: r.reason or ""),
]


def title(report: WhichReport) -> str:
    fitting = sum(r.fits for r in report.models)
    return (
        f"{fitting} catalog models fit {report.num_gpus}x {report.gpu_full_name} at "
        f"{human_tokens(report.context_tokens)} context (fastest first; tok/s is an estimate)"
    )


def render_which(report: WhichReport, show_all: bool, width: int, style: Style) -> str:
    rows = [r for r in report.models if r.fits or show_all]
    columns = [c for c, _ in WHICH_COLUMNS]
    cells = [[cell(r) for _, cell in WHICH_COLUMNS] for r in rows]
    lines = [render_table(title(report), columns, cells, width, style)]
    lines += [paragraph(f"Note: {n}", width) for n in report.assumptions.notes]
    return "\n".join(lines) + "\n"


def which_markdown(report: WhichReport) -> str:
    """Every model (those that fit first), as Markdown."""
    return sheet_markdown(title(report), [], WHICH_COLUMNS, report.models, assumption_items(report))


def which_csv(report: WhichReport) -> str:
    return sheet_csv(WHICH_COLUMNS, report.models)
