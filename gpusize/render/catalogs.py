"""Catalog listings as text."""

from __future__ import annotations

from gpusize.render.format import fmt_float, fmt_int
from gpusize.render.table import Column, render_table
from gpusize.render.text import Style
from gpusize.reports.catalogs import GpusReport, ModelsReport

__all__ = ["render_gpus", "render_models"]


def render_models(report: ModelsReport, width: int, style: Style) -> str:
    columns = [
        Column("family", priority=3),
        Column("name", keep=True),
        Column("params", "right", keep=True),
        Column("active", "right", priority=5),
        Column("context", "right", priority=4),
        Column("hf_id", priority=2, shrink_to=20),
    ]
    rows = [
        [
            m.family,
            m.name,
            f"{m.params_total / 1e9:,.2f}B" if m.params_total else "-",
            f"{m.params_active / 1e9:,.2f}B" if m.params_active else "-",
            fmt_int(m.max_context_tokens),
            m.hf_id,
        ]
        for m in report.models
    ]
    return render_table(f"{len(rows)} models", columns, rows, width, style) + "\n"


def render_gpus(report: GpusReport, width: int, style: Style) -> str:
    columns = [
        Column("name", keep=True),
        Column("full_name", priority=1, shrink_to=20),
        Column("memory MiB", "right", keep=True),
        Column("GB/s", "right", priority=5),
        Column("BF16 TFLOPS", "right", priority=4, short="TFLOPS"),
        Column("interconnect", priority=3, short="link"),
        Column("TDP W", "right", priority=2),
        Column("$/GPU-h", "right", priority=6),
        Column("price date", priority=0),
    ]
    rows = [
        [
            g.name,
            g.full_name,
            f"{g.memory_mib:,}",
            fmt_float(g.bandwidth_gbps, 0),
            fmt_float(g.bf16_tflops, 0),
            g.interconnect,
            fmt_float(g.tdp_w, 0),
            fmt_float(g.price_usd_per_hour, 2),
            g.price_date or "-",
        ]
        for g in report.gpus
    ]
    title = f"{len(rows)} GPUs (prices indicative, USD per GPU-hour, dated per GPU; not quotes)"
    return render_table(title, columns, rows, width, style) + "\n"
