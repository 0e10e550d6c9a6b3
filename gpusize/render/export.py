"""Quote exports: Markdown (pastes into a ticket), CSV of plain values (spreadsheets: numbers without
separators or suffixes, units in the headers, the question on every row), one self-contained HTML file
(inline styles and SVG charts from `render.chart`, no network) and an SVG of any text rendering (`curve
--svg`). Rendering only; the Markdown table is `render.sheet`'s, as `serve`'s and `which`'s are.

Every value is escaped for its format: HTML-escaped in HTML and SVG, and as `render.sheet` says in
Markdown and CSV. Control characters (an ESC sequence from a config, a folder name or a
user catalog) are shown as escapes in every format, as on the terminal: these exports are printed
to stdout too.
"""

from __future__ import annotations

import html

from gpusize.render.chart import MEMORY_COLORS, curve_svg
from gpusize.render.format import fmt_float
from gpusize.render.quote import QUOTE_COLUMNS, buy_lines, load_lines, title
from gpusize.render.sheet import ValueColumn, md, sheet_markdown, value_csv
from gpusize.render.text import safe
from gpusize.reports.quote import QuoteReport
from gpusize.serving.quote import Option, option_layout
from gpusize.units import GIB

__all__ = ["memory_bar_svg", "quote_csv_columns", "to_csv", "to_html", "to_markdown"]


def _h(text: str) -> str:
    """HTML-escaped, control characters shown as escapes."""
    return html.escape(safe(text))


def to_markdown(report: QuoteReport) -> str:
    lead = []
    if report.recommendation:
        r = report.recommendation
        lead.append(
            f"**Recommended:** {r.num_gpus}x {md(r.gpu_full_name)}, {option_layout(r)} "
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
        plain_assumptions(report),
        sections + topology,
    )


def _gib(n_bytes: int | None) -> float | None:
    return None if n_bytes is None else n_bytes / GIB


def quote_csv_columns(report: QuoteReport) -> list[ValueColumn]:
    """The quote as plain values: the question on every row (so a row pasted elsewhere still says what
    it quotes), then one column per figure of the option, each header with its unit; estimates as
    low, best and high columns. Money and speed are per server unless the header says fleet (with
    --nodes, per option: a set of servers)."""
    w, a = report.workload, report.assumptions
    question: list[ValueColumn] = [
        ("model", lambda o: report.model.id, 0),
        ("context (tokens)", lambda o: w.context_tokens, 0),
        ("users at once", lambda o: report.users, 0),
        ("engine", lambda o: a.engine, 0),
        ("weights dtype", lambda o: w.weight_dtype, 0),
        ("KV cache dtype", lambda o: w.kv_cache_dtype, 0),
        ("rented (h/month)", lambda o: a.utilization_hours, 0),
    ]
    option: list[ValueColumn] = [
        ("GPU", lambda o: o.gpu, 0),
        ("GPU name", lambda o: o.gpu_full_name, 0),
        ("GPUs per server", lambda o: o.num_gpus, 0),
        ("replicas per server", lambda o: o.replicas, 0),
        ("tensor parallel", lambda o: o.tensor_parallel, 0),
        ("fits", lambda o: o.fits, 0),
        ("holds every user at once", lambda o: o.serves_all if o.fits else None, 0),
        ("weights (GiB/GPU)", lambda o: _gib(o.weights_bytes), 3),
        ("KV cache (GiB/GPU)", lambda o: _gib(o.kv_cache_bytes), 3),
        ("activations (GiB/GPU)", lambda o: _gib(o.activations_bytes), 3),
        ("overhead (GiB/GPU)", lambda o: _gib(o.overhead_bytes), 3),
        ("usable (GiB/GPU)", lambda o: _gib(o.usable_bytes), 3),
        ("headroom (GiB/GPU)", lambda o: _gib(o.headroom_bytes), 3),
        ("KV cache (tokens/replica)", lambda o: o.kv_cache_capacity_tokens, 0),
        ("holds (sequences/server)", lambda o: o.capacity_sequences if o.fits else None, 0),
        ("tok/s per request low", lambda o: o.per_request_tokens_per_s_low, 2),
        ("tok/s per request best", lambda o: o.per_request_tokens_per_s, 2),
        ("tok/s per request high", lambda o: o.per_request_tokens_per_s_high, 2),
        ("tok/s per server low", lambda o: o.aggregate_tokens_per_s_low, 2),
        ("tok/s per server best", lambda o: o.aggregate_tokens_per_s, 2),
        ("tok/s per server high", lambda o: o.aggregate_tokens_per_s_high, 2),
        ("price ($/h per server)", lambda o: o.usd_per_hour, 4),
        ("price ($/month per server)", lambda o: o.usd_per_month, 2),
        ("price low ($/1M tokens)", lambda o: o.usd_per_million_tokens_low, 4),
        ("price best ($/1M tokens)", lambda o: o.usd_per_million_tokens, 4),
        ("price high ($/1M tokens)", lambda o: o.usd_per_million_tokens_high, 4),
        ("servers for the users", lambda o: o.servers, 0),
        ("fleet price ($/h)", lambda o: o.fleet_usd_per_hour, 4),
        ("price ($/user-hour)", lambda o: o.usd_per_user_hour, 6),
        ("buy price of the GPUs ($ per server)", lambda o: o.purchase_usd, 2),
        ("buy price dated", lambda o: o.purchase_price_date, 0),
        ("break-even (months)", lambda o: o.break_even_months if o.fits else None, 2),
        ("power (W per server)", lambda o: o.power_w, 0),
        ("PSU", lambda o: o.psu, 0),
        ("interconnect", lambda o: o.interconnect, 0),
        ("caveats", lambda o: "; ".join(o.caveats) or o.reason, 0),
    ]
    servers = max((o.nodes for o in report.options), default=1)
    return question + (_over_servers(option, servers) if servers > 1 else option)


#: quote --nodes: the columns priced, sized or served per option (a set of servers), not per server.
_PER_OPTION = {
    "replicas per server": "replicas per option",
    "holds (sequences/server)": "holds (sequences/option)",
    "tok/s per server low": "tok/s per option low",
    "tok/s per server best": "tok/s per option best",
    "tok/s per server high": "tok/s per option high",
    "price ($/h per server)": "price ($/h per option)",
    "price ($/month per server)": "price ($/month per option)",
    "servers for the users": "options for the users",
    "buy price of the GPUs ($ per server)": "buy price of the GPUs ($ per option)",
}


def _over_servers(option: list[ValueColumn], servers: int) -> list[ValueColumn]:
    """The option columns of a quote whose options are `servers` servers each (quote --nodes): a
    server's GPUs and the servers of an option side by side, and the figures of the whole option so
    named (power and PSU stay a server's)."""
    out: list[ValueColumn] = []
    for header, value, digits in option:
        if header == "GPUs per server":
            out.append((header, lambda o: o.gpus_per_server, 0))
            out.append(("servers per option", lambda o: o.nodes, 0))
            continue
        out.append((_PER_OPTION.get(header, header), value, digits))
    return out


def to_csv(report: QuoteReport) -> str:
    """Plain numbers a spreadsheet reads as numbers (`quote_csv_columns`)."""
    return value_csv(quote_csv_columns(report), report.options)


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
                f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="20" fill="{MEMORY_COLORS[name]}">'
                f"<title>{name}: {(value or 0) / GIB:.1f} GiB</title></rect>"
            )
            x += w
    legend_y = height - 10
    for j, (name, color) in enumerate(MEMORY_COLORS.items()):
        parts.append(
            f'<rect x="{150 + j * 95}" y="{legend_y - 10}" width="10" height="10" fill="{color}"/>'
            f'<text x="{164 + j * 95}" y="{legend_y}" font-size="11">{name}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _html_sections(report: QuoteReport) -> str:
    """Servers for the load and buy versus rent, as headed lists."""
    out = ""
    for section in (load_lines(report), buy_lines(report)):
        if section:
            items = "".join(f"<li>{html.escape(line.removeprefix('- '))}</li>" for line in section[1:])
            out += f"<h2>{html.escape(section[0].rstrip(':'))}</h2><ul>{items}</ul>"
    return out


def plain_assumptions(report: QuoteReport) -> list[tuple[str, str]]:
    """What a buyer reading the page needs to know, in plain words; the modelling details (fitted
    constants, the benchmark sources) stay in the JSON output, which names where they are."""
    a = report.assumptions
    items = [
        ("Engine", a.engine),
        ("How options are ranked", a.ranking),
        ("Server sizes", a.layout),
        (
            "Speed",
            "estimated from a model fitted to published benchmark results, not measured on this "
            "hardware; a range (low to high) is where 8 in 10 of that model's errors fell on the published "
            "benchmarks of the figure's group (engine, dense or MoE, load), each predicted by a fit that "
            "never saw its source",
        ),
        ("Prices", a.prices),
        ("Power", a.power),
        ("Buying against renting", a.buy_vs_rent),
    ]
    details = (
        "the fitted speed constants and the benchmarks they come from are in the JSON output "
        "(`--format json`, assumptions.throughput)"
    )
    return [*items, *(("Note", note) for note in a.notes), ("Details", details)]


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
        f"{option_layout(rec)}, {fmt_float(rec.usd_per_hour, 2)} $/h "
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
    assumptions = "".join(f"<li><b>{_h(k)}</b>: {_h(v)}</li>" for k, v in plain_assumptions(report))
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
