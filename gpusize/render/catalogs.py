"""Catalog listings as text."""

from __future__ import annotations

import re

from gpusize.render.format import fmt_float, fmt_int
from gpusize.render.table import Column, render_table
from gpusize.render.text import Style, paragraph
from gpusize.reports.catalogs import GpusReport, ModelsReport

__all__ = ["fmt_params", "render_gpus", "render_models"]


def fmt_params(count: int | None) -> str:
    """A parameter count for a table: 135M, 8.19B, 1,026.41B ("-" when unknown)."""
    if not count:
        return "-"
    if count < 1e9:
        return f"{count / 1e6:,.0f}M"
    return f"{count / 1e9:,.2f}B"


def render_models(report: ModelsReport, width: int, style: Style) -> str:
    columns = [
        Column("family", priority=6),
        Column("name", keep=True),
        Column("params", "right", keep=True),
        Column("active", "right", priority=4),
        Column("context", "right", priority=5),
        Column("parameters (exact)", "right", priority=3, short="exact"),
        Column("hf_id", priority=2),
    ]
    rows = [
        [
            m.family,
            m.name,
            fmt_params(m.params_total),
            fmt_params(m.params_active),
            fmt_int(m.max_context_tokens),
            fmt_int(m.params_total),
            m.hf_id,
        ]
        for m in report.models
    ]
    if not report.models:
        return paragraph(f"No catalog model matches '{report.query}'.", width) + "\n"
    families = len({m.family for m in report.models})
    title = f"{len(rows)} models in {families} families (by family, then size)"
    return render_table(title, columns, rows, width, style) + "\n"


def _offer(price_source: str | None) -> str:
    """The provider of a priced entry's offer ('runpod'), from its price_source."""
    found = re.search(r"offer: (\w+)", price_source or "")
    return found.group(1) if found else "-"


def render_gpus(report: GpusReport, width: int, style: Style) -> str:
    columns = [
        Column("name", keep=True),
        Column("full_name", priority=1),
        Column("memory MiB", "right", keep=True),
        Column("GB/s", "right", priority=5),
        Column("BF16 TFLOPS", "right", priority=4, short="TFLOPS"),
        Column("interconnect", priority=3, short="link"),
        Column("TDP W", "right", priority=2),
        Column("$/GPU-h", "right", priority=6),
        Column("price date", priority=5),
        Column("offer", priority=3),
        Column("buy $", "right", priority=2),
        Column("buy date", priority=1),
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
            _offer(g.price_source) if g.price_usd_per_hour is not None else "-",
            fmt_float(g.purchase_price_usd, 0),
            g.purchase_price_date or "-",
        ]
        for g in report.gpus
    ]
    note = paragraph(
        "Prices are indicative, not quotes: USD per GPU-hour, the cheapest on-demand offer of each GPU in "
        "one dated snapshot of cloud offers (its date and provider per GPU; AMD parts, which it lacks, from "
        "one dated public comparison); buy = purchase price and the date of its source. Every entry's "
        "sources: gpusize gpus --json.",
        width,
    )
    return render_table(f"{len(rows)} GPUs", columns, rows, width, style) + "\n" + note + "\n"
