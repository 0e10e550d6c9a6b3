"""Quote exports: Markdown (pastes into a ticket), CSV (spreadsheets), one self-contained HTML file
(inline styles and SVG charts, no network) and an SVG of any text rendering. Rendering only; the
Markdown and CSV tables are `render.sheet`'s, as `serve`'s and `which`'s are.

Every value is escaped for its format: HTML-escaped in HTML and SVG, and as `render.sheet` says in
Markdown and CSV. Control characters (an ESC sequence from a config, a folder name or a
user catalog) are shown as escapes in every format, as on the terminal: these exports are printed
to stdout too.
"""

from __future__ import annotations

import html

from gpusize.render.format import fmt_float, human_tokens
from gpusize.render.quote import QUOTE_COLUMNS, buy_lines, load_lines, title
from gpusize.render.sheet import assumption_items, md, sheet_csv, sheet_markdown
from gpusize.render.text import safe
from gpusize.reports.quote import QuoteReport
from gpusize.serving.quote import Option
from gpusize.units import GIB

__all__ = ["memory_bar_svg", "text_svg", "to_csv", "to_html", "to_markdown"]

COLORS = {
    "weights": "#3b6ea5",
    "KV cache": "#e0913a",
    "activations": "#8e6bb0",
    "overhead": "#9a9a9a",
    "free": "#d9ead3",
}


def _h(text: str) -> str:
    """HTML-escaped, control characters shown as escapes."""
    return html.escape(safe(text))


def to_markdown(report: QuoteReport) -> str:
    lead = []
    if report.recommendation:
        r = report.recommendation
        lead.append(
            f"**Recommended:** {r.num_gpus}x {md(r.gpu_full_name)}, {r.replicas} x TP={r.tensor_parallel} "
            f"({fmt_float(r.usd_per_hour, 2)} $/h indicative)."
        )
    sections: list[str] = []
    for section in (load_lines(report), buy_lines(report)):  # servers for the load, buy versus rent
        if section:
            sections += ["", f"### {md(section[0].rstrip(':'))}", ""] + [md(line) for line in section[1:]]
    topology = (
        [
            "",
            "### Topology",
            "",
            "```mermaid",
            safe(report.topology_mermaid, keep_newlines=True).replace("`", "'"),
            "```",
        ]
        if report.topology_mermaid
        else []
    )
    return sheet_markdown(
        f"Quote: {title(report)}",
        lead,
        QUOTE_COLUMNS,
        report.options,
        assumption_items(report),
        sections + topology,
    )


def to_csv(report: QuoteReport) -> str:
    return sheet_csv(QUOTE_COLUMNS, report.options)


def text_svg(text: str, heading: str) -> str:
    """A text rendering as an SVG picture (monospace, one <text> per line), for attaching to mail."""
    lines = text.rstrip("\n").split("\n")
    width = 9 * max((len(line) for line in lines), default=1) + 20
    height = 18 * len(lines) + 40
    body = "".join(
        f'<text x="10" y="{30 + 18 * i}" xml:space="preserve">{_h(line)}</text>'
        for i, line in enumerate(lines)
    )
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="monospace" '
        f'font-size="14"><title>{_h(heading)}</title><rect width="100%" height="100%" fill="#fff"/>'
        f"{body}</svg>\n"
    )


# --------------------------------------------------------------------------- HTML + SVG


def memory_bar_svg(options: tuple[Option, ...], width: int = 640) -> str:
    """Stacked horizontal bars of the per-GPU memory breakdown, one per fitting option."""
    rows = [o for o in options if o.usable_bytes]
    height = 28 * len(rows) + 40
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
        f'aria-label="Memory per GPU">'
    ]
    for i, o in enumerate(rows):
        y, x = 10 + 28 * i, 150.0
        parts.append(f'<text x="4" y="{y + 15}" font-size="12">{_h(f"{o.num_gpus}x {o.gpu}")}</text>')
        segments = [
            ("weights", o.weights_bytes),
            ("KV cache", o.kv_cache_bytes),
            ("activations", o.activations_bytes),
            ("overhead", o.overhead_bytes),
        ]
        used = sum(v or 0 for _, v in segments)
        segments.append(("free", max((o.usable_bytes or 0) - used, 0)))
        scale = (width - 160) / (o.usable_bytes or 1)
        for name, value in segments:
            w = (value or 0) * scale
            parts.append(
                f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="20" fill="{COLORS[name]}">'
                f"<title>{name}: {(value or 0) / GIB:.1f} GiB</title></rect>"
            )
            x += w
    legend_y = height - 10
    for j, (name, color) in enumerate(COLORS.items()):
        parts.append(
            f'<rect x="{150 + j * 95}" y="{legend_y - 10}" width="10" height="10" fill="{color}"/>'
            f'<text x="{164 + j * 95}" y="{legend_y}" font-size="11">{name}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def curve_svg(report: QuoteReport, width: int = 640, height: int = 240) -> str:
    """Maximum concurrency against context (log-2 x axis) for the recommended option."""
    points = [p for p in report.curve if p.max_concurrency > 0]
    if not points:
        return ""
    top = max(p.max_concurrency for p in points)
    step = (width - 80) / max(len(points) - 1, 1)
    xy = [
        (60 + i * step, height - 40 - (p.max_concurrency / top) * (height - 70)) for i, p in enumerate(points)
    ]
    path = " ".join(f"{'M' if i == 0 else 'L'}{x:.1f},{y:.1f}" for i, (x, y) in enumerate(xy))
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
        f'aria-label="Concurrency against context">',
        f'<line x1="60" y1="{height - 40}" x2="{width - 10}" y2="{height - 40}" stroke="#444"/>',
        f'<line x1="60" y1="20" x2="60" y2="{height - 40}" stroke="#444"/>',
        f'<path d="{path}" fill="none" stroke="#3b6ea5" stroke-width="2"/>',
    ]
    for (x, y), p in zip(xy, points, strict=False):
        parts.append(
            f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="#3b6ea5"><title>{p.context_tokens:,} tokens: '
            f"{p.max_concurrency:.1f} sequences</title></circle>"
        )
        parts.append(
            f'<text x="{x:.1f}" y="{height - 24}" font-size="10" text-anchor="middle">'
            f"{human_tokens(p.context_tokens)}</text>"
        )
    parts.append(
        f'<text x="8" y="24" font-size="10">{top:,.0f}</text>'
        f'<text x="8" y="{height - 42}" font-size="10">0</text>'
        f'<text x="{width / 2:.0f}" y="{height - 6}" font-size="11" text-anchor="middle">'
        f"context per sequence (tokens) vs concurrent sequences</text></svg>"
    )
    return "".join(parts)


def _html_sections(report: QuoteReport) -> str:
    """Servers for the load and buy versus rent, as headed lists."""
    out = ""
    for section in (load_lines(report), buy_lines(report)):
        if section:
            items = "".join(f"<li>{html.escape(line.removeprefix('- '))}</li>" for line in section[1:])
            out += f"<h2>{html.escape(section[0].rstrip(':'))}</h2><ul>{items}</ul>"
    return out


def to_html(report: QuoteReport) -> str:
    head = "".join(f"<th>{html.escape(col.header)}</th>" for col, _ in QUOTE_COLUMNS)
    rows = "".join(
        "<tr class='{}'>".format("fit" if o.fits else "nofit")
        + "".join(f"<td>{_h(cell(o))}</td>" for _, cell in QUOTE_COLUMNS)
        + "</tr>"
        for o in report.options
    )
    rec = report.recommendation
    summary = (
        f"<p class='rec'><b>Recommended:</b> {rec.num_gpus}x {_h(rec.gpu_full_name)}, "
        f"{rec.replicas} x TP={rec.tensor_parallel}, {fmt_float(rec.usd_per_hour, 2)} $/h "
        "indicative</p>"
        if rec
        else "<p class='rec'><b>No option fits.</b></p>"
    )
    topology_text = html.escape(safe(report.topology_text or "", keep_newlines=True))
    mermaid = html.escape(safe(report.topology_mermaid or "", keep_newlines=True))
    topology = (
        f"<h2>Topology</h2><pre>{topology_text}</pre>"
        f"<details><summary>Mermaid source</summary><pre>{mermaid}</pre></details>"
        if report.topology_text
        else ""
    )
    assumptions = "".join(f"<li><b>{_h(k)}</b>: {_h(str(v))}</li>" for k, v in assumption_items(report))
    style = (
        "body{font-family:system-ui,sans-serif;margin:24px;color:#222}table{border-collapse:collapse;"
        "font-size:13px}th,td{border:1px solid #ccc;padding:4px 6px;text-align:left}th{background:#eef}"
        "tr.nofit td{color:#888}.rec{font-size:15px}pre{background:#f6f6f6;padding:8px}"
    )
    return (
        f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>{_h(title(report))}"
        f"</title><style>{style}</style></head><body><h1>GPU quote</h1><p>{_h(title(report))} "
        f"({_h(report.assumptions.engine)}; gpusize {report.gpusize_version})</p>{summary}"
        f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"
        f"{_html_sections(report)}<h2>Memory per GPU</h2>{memory_bar_svg(report.options)}"
        f"<h2>Concurrency against context (recommended option)</h2>{curve_svg(report)}{topology}"
        f"<h2>Assumptions</h2><ul>{assumptions}</ul></body></html>\n"
    )
