"""The serve report as text: the layouts, why one is recommended, launch commands and power."""

from __future__ import annotations

from gpusize.render.fit import VERDICT_STYLES
from gpusize.render.format import fmt_float, fmt_range, human_tokens
from gpusize.render.table import Column, render_table
from gpusize.render.text import Style, paragraph, safe
from gpusize.reports.serve import ServeReport
from gpusize.serving.layouts import layout_name

__all__ = ["render_serve"]


def render_serve(report: ServeReport, width: int, style: Style) -> str:
    w, d, pick = report.workload, report.demand, report.recommendation
    load = f"{d.users} concurrent users" if d.users is not None else f"{d.rps} requests/s"
    where = f"{report.num_gpus}x {report.gpu_full_name}"
    if pick:
        title = f"{report.model.name} on {where}, {human_tokens(w.context_tokens)} context, {load}: " + (
            f"{pick.replicas} replica(s) x TP={pick.tensor_parallel}"
            if pick.split_mode == "tensor"
            else f"{pick.replicas} replica(s) x {layout_name(pick).split(' x ', 1)[1]}"
        )
    else:
        title = f"{report.model.name} does not fit {where}"
    columns = [
        Column("layout", keep=True),
        Column("fits", keep=True, styles=VERDICT_STYLES),
        Column("holds seqs", "right", priority=9, short="seqs"),
        Column("in flight", "right", priority=5),
        Column("tok/s per req (range)", "right", priority=7, short="tok/s/req"),
        Column("tok/s total (range)", "right", priority=8, short="tok/s"),
        Column("TTFT s (range)", "right", priority=4, short="TTFT s"),
        Column("$/h", "right", priority=6),
        Column("$/1M tok (range)", "right", priority=3, short="$/1M tok"),
    ]
    rows = []
    notes = []
    for x in report.layouts:
        name = layout_name(x)
        rows.append(
            [
                name,
                "yes" if x.fits else "NO",
                str(x.capacity_sequences) if x.fits else "-",
                str(x.concurrent_sequences) if x.fits else "-",
                fmt_range(
                    x.per_request_tokens_per_s,
                    x.per_request_tokens_per_s_low,
                    x.per_request_tokens_per_s_high,
                ),
                fmt_range(
                    x.aggregate_tokens_per_s, x.aggregate_tokens_per_s_low, x.aggregate_tokens_per_s_high
                ),
                fmt_range(x.ttft_s, x.ttft_s_low, x.ttft_s_high, 2),
                fmt_float(x.price_usd_per_hour, 2),
                fmt_range(
                    x.usd_per_million_tokens, x.usd_per_million_tokens_low, x.usd_per_million_tokens_high, 3
                ),
            ]
        )
        notes.append(f"{name}: {x.one_gpu_failure if x.fits else x.reason}")
    lines = [
        style(paragraph(title, width), "bold"),
        render_table(
            "Layouts on one server (throughput, TTFT and cost are estimates; ranges: 10th-90th percentile "
            "of the calibration residuals)",
            columns,
            rows,
            width,
            style,
        ),
        "If one GPU fails:" if pick else "Why not:",
        *[paragraph(f"  {n}", width) for n in notes],
        paragraph(f"Why: {report.why}", width),
    ]
    for engine_name, launch in report.launch.items():
        if launch.command:
            lines.append(f"Launch ({engine_name}): {safe(launch.command)}")
        if launch.note:
            lines.append(f"Launch ({engine_name}): {safe(launch.note)}")
    if report.power:
        p = report.power
        lines.append(
            f"Power: GPUs {p.gpu_tdp_w:,.0f} W, server {p.total_w_low:,.0f}-{p.total_w_high:,.0f} W -> PSU "
            f"{p.psu_capacity_w:,.0f} W: {p.psu_layout}; {p.pcie_lanes} PCIe lanes for GPUs"
        )
        lines += [paragraph(f"Note: {n}", width) for n in p.notes]
    a = report.assumptions
    lines += [paragraph(f"Note: {n}", width) for n in a.notes]
    lines += [
        style(f"Assumptions: {a.engine}; {a.throughput}; {a.load}.", "dim"),
        style(f"Prices: {a.prices}.", "dim"),
    ]
    return "\n".join(lines) + "\n"
