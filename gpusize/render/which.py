"""The reverse-query report as text: the models that fit, fastest first."""

from __future__ import annotations

from gpusize.render.fit import VERDICT_STYLES
from gpusize.render.format import fmt_gib, fmt_int, human_tokens
from gpusize.render.table import Column, render_table
from gpusize.render.text import Style, paragraph
from gpusize.reports.which import WhichReport

__all__ = ["render_which"]


def render_which(report: WhichReport, show_all: bool, width: int, style: Style) -> str:
    rows = [r for r in report.models if r.fits or show_all]
    fitting = sum(r.fits for r in report.models)
    title = (
        f"{fitting} catalog models fit {report.num_gpus}x {report.gpu_full_name} at "
        f"{human_tokens(report.context_tokens)} context (fastest first; tok/s is an estimate)"
    )
    columns = [
        Column("model", keep=True),
        Column("fits", keep=True, styles=VERDICT_STYLES),
        Column("params", "right", priority=8),
        Column("TP", "right", priority=9),
        Column("headroom GiB", "right", priority=5, short="headroom"),
        Column("KV pool tokens", "right", priority=4, short="KV tokens"),
        Column("concurrency", "right", priority=6, short="conc."),
        Column("tok/s", "right", priority=7),
        Column("why not", priority=3, shrink_to=30),
    ]
    cells = [
        [
            r.name,
            "yes" if r.fits else "NO",
            f"{r.params_total / 1e9:.1f}B" if r.params_total else "-",
            str(r.tensor_parallel or "-"),
            fmt_gib(r.headroom_bytes),
            fmt_int(r.kv_cache_capacity_tokens),
            f"{r.max_concurrency:.1f}x" if r.max_concurrency is not None else "-",
            f"{r.tokens_per_s:,.0f}" if r.tokens_per_s else "-",
            r.reason or "",
        ]
        for r in rows
    ]
    lines = [render_table(title, columns, cells, width, style)]
    lines += [paragraph(f"Note: {n}", width) for n in report.assumptions.notes]
    return "\n".join(lines) + "\n"
