"""The quote report as text: options best first, memory bars, the concurrency curve and topology.
`QUOTE_COLUMNS` is shared with the Markdown, CSV and HTML exports, so every format shows the same cells."""

from __future__ import annotations

import math
from collections.abc import Callable

from gpusize.render.curve import curve_lines
from gpusize.render.format import fmt_float, fmt_gib, fmt_int, fmt_range, human_tokens
from gpusize.render.split import split_lines
from gpusize.render.table import Column, render_table
from gpusize.render.text import Style, block, paragraph, safe, said_once
from gpusize.reports.quote import QuoteReport
from gpusize.serving.layouts import THIN_MARGIN_NOTE
from gpusize.serving.quote import Option, memory_parts, option_layout

__all__ = [
    "quote_headline",
    "BAR_LETTERS",
    "QUOTE_COLUMNS",
    "buy_lines",
    "curve_lines",
    "fits_cell",
    "load_lines",
    "memory_bar",
    "render_quote",
    "title",
]

#: (column, its text cell, priority on a narrow terminal; None = never dropped).
QUOTE_COLUMNS: list[tuple[Column, Callable[[Option], str]]] = [
    (Column("GPU", keep=True), lambda o: f"{o.num_gpus}x {o.gpu}"),
    (Column("layout", keep=True), lambda o: option_layout(o)),
    (
        Column(
            "fits",
            keep=True,
            styles=(
                ("yes", ("green",)),
                ("yes, thin margin", ("yellow",)),
                ("yes, queues", ("yellow",)),
                ("no", ("red", "bold")),
            ),
        ),
        lambda o: fits_cell(o),
    ),
    (
        Column("headroom GiB/GPU at load", "right", priority=5, short="headroom"),
        lambda o: fmt_gib(o.headroom_bytes),
    ),
    (
        Column("KV tokens/replica", "right", priority=6, short="KV tokens"),
        lambda o: fmt_int(o.kv_cache_capacity_tokens),
    ),
    (
        Column("holds seqs", "right", priority=8, short="seqs"),
        lambda o: f"{o.capacity_sequences}" if o.fits else "-",
    ),
    (
        Column("tok/s per request", "right", priority=4, short="tok/s/req"),
        lambda o: fmt_float(o.per_request_tokens_per_s),
    ),
    (
        Column("tok/s total", "right", priority=7, short="tok/s"),
        lambda o: fmt_float(o.aggregate_tokens_per_s, 0),
    ),
    (Column("$/hour", "right", priority=9), lambda o: fmt_float(o.usd_per_hour, 2)),
    (Column("$/month", "right", priority=3), lambda o: fmt_float(o.usd_per_month, 0)),
    (Column("power W", "right", priority=2, short="W"), lambda o: fmt_float(o.power_w, 0)),
    (Column("PSU", priority=0), lambda o: o.psu or "-"),
    (Column("interconnect", priority=1, short="link"), lambda o: o.interconnect),
    (Column("caveats", priority=0), lambda o: "; ".join(o.caveats) or (o.reason or "")),
]
#: The terminal table leaves the long prose columns to the notes below it.
_TEXT_COLUMNS = [(c, cell) for c, cell in QUOTE_COLUMNS if c.header not in ("PSU", "caveats")]
BAR_LETTERS = {"weights": "W", "KV cache": "K", "activations": "A", "overhead": "O", "free": "."}


def fits_cell(o: Option) -> str:
    """'yes', 'yes, thin margin' (within gpusize's error: core/plan.thin_margin), 'yes, queues' or 'no'."""
    if not o.fits:
        return "no"
    if not o.serves_all:
        return "yes, queues"
    return "yes, thin margin" if o.thin_margin else "yes"


def title(report: QuoteReport) -> str:
    users = f", {report.users} concurrent users" if report.users else ""
    return f"{report.model.id}: {human_tokens(report.workload.context_tokens)} context{users}"


def memory_bar(parts: list[tuple[str, int]], width: int = 40) -> str:
    """A stacked bar of the per-GPU memory breakdown; letters carry the meaning."""
    total = sum(v for _, v in parts) or 1
    return "".join(BAR_LETTERS[name] * round(value / total * width) for name, value in parts)


def _options_title(report: QuoteReport) -> str:
    """The table's title: what its price, power and speed columns are per (one server, or with
    --nodes a set of servers priced and served together, each with its own power supplies)."""
    servers = max((o.nodes for o in report.options), default=1)
    if servers > 1:
        return (
            f"Options, best first (memory per GPU; price and tok/s for the {servers} servers, power and "
            "PSU per server)"
        )
    return "Options, best first (memory per GPU; price, power and tok/s per server)"


def render_quote(report: QuoteReport, width: int, style: Style) -> str:
    columns = [c for c, _ in _TEXT_COLUMNS]
    rows = [[cell(o) for _, cell in _TEXT_COLUMNS] for o in report.options]
    legend = "  ".join(f"{letter}={name}" for name, letter in BAR_LETTERS.items())
    fitting = [o for o in report.options if o.fits]
    labels = {id(o): safe(f"{o.num_gpus}x {o.gpu}") for o in fitting}
    label_width = max((len(label) for label in labels.values()), default=0)
    sizes = {id(o): f"{fmt_gib(o.usable_bytes)} GiB" for o in fitting}
    size_width = max((len(size) for size in sizes.values()), default=0)
    bar_width = max(10, min(40, width - label_width - size_width - 2))
    lines = [
        style(paragraph(f"Quote: {title(report)}", width), "bold"),
        *[style(paragraph(line, width), "bold") for line in _missed_targets(report)],
        render_table(
            _options_title(report),
            columns,
            rows,
            width,
            style,
        ),
        paragraph(f"Memory per GPU ({legend})", width),
    ]
    for o in fitting:
        bar = memory_bar(memory_parts(o), bar_width)
        lines.append(f"{labels[id(o)]:<{label_width}} {bar:<{bar_width}} {sizes[id(o)]}".rstrip())
    if report.curve:
        lines.append("Concurrency against context (recommended option)")
        lines += curve_lines(report.curve, width)
    if report.topology_text:
        lines += ["Topology", block(report.topology_text, width)]
    lines += [paragraph(line, width) for line in load_lines(report)]
    lines += [paragraph(line, width) for line in split_section(report)]
    lines += [paragraph(line, width) for line in buy_lines(report)]
    caveats = [(f"{o.num_gpus}x {o.gpu}", caveat) for o in report.options for caveat in o.caveats]
    reasons = [(f"{o.num_gpus}x {o.gpu}", o.reason) for o in report.options if o.reason and not o.caveats]
    lines += [paragraph(line, width) for line in said_once(caveats) + said_once(reasons, ranges=False)]
    lines += [paragraph(f"Note: {n}", width) for n in report.assumptions.notes]
    lines.append(style(paragraph(f"Ranking: {report.assumptions.ranking}.", width), "dim"))
    lines.append(style(paragraph(f"Prices: {report.assumptions.prices}.", width), "dim"))
    return "\n".join(lines) + "\n"


def _missed_targets(report: QuoteReport) -> list[str]:
    """Above the table when options fit but none meets the per-user targets: the first one shown is
    then below them, and the quote says so before it is read as the answer."""
    fitting = [o for o in report.options if o.fits]
    if not fitting or any(o.meets_targets for o in fitting):
        return []
    a = report.assumptions
    ttft = f" and a first token within {a.max_ttft_s:g} s" if a.max_ttft_s is not None else ""
    speeds = [o for o in fitting if o.per_request_tokens_per_s is not None]
    fastest = max(speeds, key=lambda o: o.per_request_tokens_per_s or 0.0, default=None)
    best = (
        f"; the fastest, {fastest.num_gpus}x {safe(fastest.gpu)}, gives each user "
        f"{fmt_float(fastest.per_request_tokens_per_s)} tok/s"
        if fastest
        else ""
    )
    return [
        f"No option meets the per-user targets (at least {a.min_tokens_per_s_per_user:g} tok/s each{ttft}): "
        f"the options below rank by margin and price only{best}."
    ]


def load_lines(report: QuoteReport) -> list[str]:
    """With --users: how many servers of each option hold every user at once, and the price per user."""
    if not report.users:
        return []
    lines = [f"Serving {report.users:,} users at once, in ranking order (servers each hold their share):"]
    for o in report.options:
        if not o.fits or not o.servers:
            continue
        fleet = f"${o.fleet_usd_per_hour:,.2f}/h" if o.fleet_usd_per_hour else "unpriced"
        per_user = f", ${o.usd_per_user_hour:.4f} per user-hour" if o.usd_per_user_hour else ""
        per_m = f", ${o.usd_per_million_tokens:.2f}/1M tokens" if o.usd_per_million_tokens else ""
        count = "one server" if o.servers == 1 else f"{o.servers:,} servers"
        if o.nodes > 1:
            count = (
                f"one set of {o.nodes} servers"
                if o.servers == 1
                else f"{o.servers:,} sets of {o.nodes} servers"
            )
        one = f"{count}, no queueing" if o.serves_all else f"{count}, requests still queue"
        if o.thin_margin:
            one += f" on a thin margin ({THIN_MARGIN_NOTE})"
        layout = option_layout(o)
        target = "meets" if o.meets_targets else "misses"
        speed = fmt_range(
            o.per_request_tokens_per_s, o.per_request_tokens_per_s_low, o.per_request_tokens_per_s_high, 1
        )
        lines.append(
            f"- {o.num_gpus}x {o.gpu} ({layout}): {one}, {fleet}{per_user}{per_m}; "
            f"{speed} tok/s per user (estimate), {target} the targets"
        )
    return lines


def split_section(report: QuoteReport) -> list[str]:
    """quote --disaggregate: each fitting option's best prefill/decode split beside its aggregated
    layout on the same GPUs (the ranking above is the aggregated options')."""
    fitting = [o for o in report.options if o.fits]
    if not (report.disaggregated and fitting):
        return []
    lines = [
        "Disaggregated prefill/decode (--disaggregate; estimates, not in the ranking): each option's "
        "best split of its server's GPUs for its share of the users, beside the aggregated layout on "
        "the same GPUs"
    ]
    for o in fitting:
        where = f"- {o.num_gpus}x {o.gpu}"
        d = o.disaggregated
        if d is None:
            lines.append(f"{where}: no split of its GPUs runs the model in a prefill and a decode pool")
            continue
        on = f" (split of {d.num_gpus} GPUs)" if d.num_gpus != o.num_gpus else ""
        split, verdict = split_lines(d, "")
        lines.append(f"{where}{on}: {split}; {verdict[0].lower()}{verdict[1:]}")
    return lines


def buy_lines(report: QuoteReport) -> list[str]:
    """Buying each option's GPUs against renting them, where the catalog has both prices."""
    fitting = [o for o in report.options if o.fits]
    if not fitting:
        return []
    a = report.assumptions
    servers = max(o.nodes for o in fitting)
    unit = f"for the {servers} servers of an option" if servers > 1 else "per server"
    lines = [f"Buy versus rent ({a.utilization_hours:,.0f} h a month; GPUs only, {unit}):"]
    for o in fitting:
        where = f"- {o.num_gpus}x {o.gpu}"
        if not o.purchase_usd:
            lines.append(f"{where}: no purchase price in the catalog")
            continue
        price = (
            f"buy ${o.purchase_usd:,.0f} ({o.purchase_price_kind or 'price'}, dated {o.purchase_price_date})"
        )
        if o.break_even_months is None or o.rent_usd_per_month is None:
            lines.append(f"{where}: {price}; no rental price in the catalog")
            continue
        lines.append(
            f"{where}: {price} vs rent ${fmt_float(o.rent_usd_per_month, 0)}/month at "
            f"{a.utilization_hours:,.0f} h: break-even in month {math.ceil(o.break_even_months)}"
        )
    return lines


def quote_headline(report: QuoteReport) -> str:
    """One line: the recommended option and its price, or that none fits (a batch row's answer)."""
    what = f"{report.model.name} at {human_tokens(report.workload.context_tokens)} context"
    load = f" for {report.users} users" if report.users else ""
    best = report.recommendation
    if best is None or not best.fits:
        return f"{what}{load}: no option fits"
    layout = option_layout(best)
    price = f", ${best.usd_per_hour:,.2f}/hour" if best.usd_per_hour is not None else ", unpriced"
    servers = f" x {best.servers} servers" if best.servers and best.servers > 1 else ""
    return f"{what}{load}: best {best.num_gpus}x {best.gpu} ({layout}){servers}{price}"
