"""The serve report as text: the layouts, why one is recommended, launch commands and power."""

from __future__ import annotations

from collections.abc import Callable

from gpusize.core.engines import engine as engine_model
from gpusize.render.fit import VERDICT_STYLES, suggestion_lines
from gpusize.render.format import fmt_float, fmt_range, human_tokens
from gpusize.render.sheet import ValueColumn, assumption_items, md, sheet_markdown, value_csv
from gpusize.render.split import split_lines
from gpusize.render.table import Column, render_table
from gpusize.render.text import Style, block, paragraph, shell_command
from gpusize.reports.serve import ServeReport
from gpusize.serving.layouts import THIN_MARGIN_NOTE, Layout, layout_name
from gpusize.serving.load import STEADY_P99_OVER_MEDIAN
from gpusize.units import GIB

__all__ = [
    "targets_line",
    "SERVE_COLUMNS",
    "TABLE_TITLE",
    "render_serve",
    "serve_csv",
    "serve_csv_columns",
    "serve_markdown",
    "title",
    "verdict",
]


def verdict(x: Layout) -> str:
    """'yes' when the layout runs the model and holds the whole load at once ('yes, thin margin' when by
    less than gpusize's error: core/plan.thin_margin), 'yes, queues' when it runs but requests wait for
    a slot, 'NO' when the model does not fit."""
    if not x.fits:
        return "NO"
    if not x.serves_all:
        return "yes, queues"
    return "yes, thin margin" if x.thin_margin else "yes"


#: (column, its text cell): the terminal table and the Markdown / CSV exports show the same cells.
SERVE_COLUMNS: list[tuple[Column, Callable[[Layout], str]]] = [
    (Column("layout", keep=True), layout_name),
    (Column("fits", keep=True, styles=VERDICT_STYLES), verdict),
    (
        Column("holds seqs", "right", priority=9, short="seqs"),
        lambda x: str(x.capacity_sequences) if x.fits else "-",
    ),
    (Column("in flight", "right", priority=5), lambda x: str(x.concurrent_sequences) if x.fits else "-"),
    (
        Column("tok/s per req (range)", "right", priority=7, short="tok/s/req"),
        lambda x: fmt_range(
            x.per_request_tokens_per_s, x.per_request_tokens_per_s_low, x.per_request_tokens_per_s_high
        ),
    ),
    (
        Column("tok/s total (range)", "right", priority=8, short="tok/s"),
        lambda x: fmt_range(
            x.aggregate_tokens_per_s, x.aggregate_tokens_per_s_low, x.aggregate_tokens_per_s_high
        ),
    ),
    (
        Column("TTFT s (range)", "right", priority=4, short="TTFT s"),
        lambda x: fmt_range(x.ttft_s, x.ttft_s_low, x.ttft_s_high, 2),
    ),
    (Column("$/h", "right", priority=6), lambda x: fmt_float(x.usd_per_hour, 2)),
    (
        Column("$/1M tok (range)", "right", priority=3, short="$/1M tok"),
        lambda x: fmt_range(
            x.usd_per_million_tokens, x.usd_per_million_tokens_low, x.usd_per_million_tokens_high, 3
        ),
    ),
    (Column("if one GPU fails", prose=True), lambda x: x.one_gpu_failure if x.fits else (x.reason or "")),
]

TABLE_TITLE = (
    "Layouts on one server (throughput, TTFT and cost are estimates; a range holds 8 in 10 of its "
    "group's errors on published benchmarks, out of sample by source)"
)

#: The text answer's assumptions, in a few words (the fitted constants, their sources and the load
#: rule in full are the JSON's `assumptions.throughput` and `assumptions.load`).
SHORT_ASSUMPTIONS = (
    "speed estimated from a model fitted to published benchmarks, not measured on this hardware; a "
    "sequence holds half its context on average; load spread evenly over replicas"
)


def title(report: ServeReport) -> str:
    w, d, pick = report.workload, report.demand, report.recommendation
    load = f"{d.users} concurrent users" if d.users is not None else f"{d.rps} requests/s"
    where = f"{report.num_gpus}x {report.gpu_full_name}"
    if not pick:
        return f"{report.model.name} does not fit {where}"
    layout = f"{pick.replicas} replica(s) x {layout_name(pick).split(' x ', 1)[1]}"  # "2 replica(s) x TP=4"
    queues = "" if pick.serves_all else " (requests queue: no layout holds the whole load)"
    if pick.serves_all and pick.thin_margin:
        queues = f" (thin margin: {THIN_MARGIN_NOTE})"
    return (
        f"{report.model.name} on {where}, {human_tokens(w.context_tokens)} context, {load}: {layout}{queues}"
    )


def disaggregated_lines(report: ServeReport) -> list[str]:
    """serve --disaggregate: the split, its KV transfer, and how it compares (estimates)."""
    return split_lines(report.disaggregated)


def _failure_lines(report: ServeReport, width: int) -> list[str]:
    """What one GPU's failure does to each layout that runs; why the others do not run, apart."""
    runs = [x for x in report.layouts if x.fits]
    misses = [x for x in report.layouts if not x.fits]
    lines = ["If one GPU fails:"] if runs else []
    lines += [block(f"  {layout_name(x)}: {x.one_gpu_failure}", width) for x in runs]
    if misses:
        lines.append("Does not fit:" if runs else "Why not:")
        lines += [block(f"  {layout_name(x)}: {x.reason or ''}", width) for x in misses]
    return lines


#: The parts of the full throughput assumption the short text keeps: the GPUs' link and what the
#: user's flags set (host bandwidth for layers in system RAM).
KEPT_ASSUMPTIONS = ("traffic over", "layers in system RAM read at")
PREFIX = "of each prompt's tokens served by"


def _short_assumptions(throughput: str) -> str:
    """SHORT_ASSUMPTIONS with the clauses of `KEPT_ASSUMPTIONS` and a prefix-cache hit rate."""
    kept = []
    for key in KEPT_ASSUMPTIONS:
        at = throughput.find(key)
        if at >= 0:
            start = max(throughput.rfind(", ", 0, at), throughput.rfind("; ", 0, at))
            end = throughput.find(";", at)
            kept.append(throughput[start + 2 if start >= 0 else 0 : end if end >= 0 else None].strip())
    at = throughput.find(PREFIX)
    if at >= 0:
        rate = throughput[throughput.rfind("; ", 0, at) + 2 : at].strip()
        kept.append(f"{rate} of each prompt's tokens served by the prefix cache (the hit rate as given)")
    return "; ".join([SHORT_ASSUMPTIONS, *kept, "details: --json"])


def render_serve(report: ServeReport, width: int, style: Style) -> str:
    columns = [c for c, _ in SERVE_COLUMNS[:-1]]
    rows = [[cell(x) for _, cell in SERVE_COLUMNS[:-1]] for x in report.layouts]
    lines = [
        style(paragraph(title(report), width), "bold"),
        render_table(
            TABLE_TITLE
            if report.nodes is None
            else TABLE_TITLE.replace("on one server", f"over {report.nodes.nodes} servers"),
            columns,
            rows,
            width,
            style,
        ),
        *_failure_lines(report, width),
        paragraph(targets_line(report), width),
        paragraph(f"Why: {report.why}", width),
        *[paragraph(line, width) for line in ttft_spread_lines(report)],
        *[paragraph(line, width) for line in disaggregated_lines(report)],
        *[paragraph(line, width) for line in suggestion_lines(report.suggestions, False)],
    ]
    for engine_name, launch in report.launch.items():
        if launch.command:
            lines.append(shell_command(f"Launch ({engine_name}): ", launch.command, width))
        if launch.note:
            lines.append(paragraph(f"Launch ({engine_name}): {launch.note}", width))
    if report.power:
        p = report.power
        each = f", each of {p.servers} servers" if p.servers > 1 else ""
        lines.append(
            paragraph(
                f"Power{each}: GPUs {p.gpu_tdp_w:,.0f} W, server {p.total_w_low:,.0f}-"
                f"{p.total_w_high:,.0f} W -> PSU {p.psu_capacity_w:,.0f} W: {p.psu_layout}; "
                f"{p.pcie_lanes} PCIe lanes for GPUs",
                width,
            )
        )
        lines += [paragraph(f"Note: {n}", width) for n in p.notes]
    a = report.assumptions
    lines += [paragraph(f"Note: {n}", width) for n in a.notes]
    lines += [
        style(paragraph(f"Assumptions: {a.engine}; {_short_assumptions(a.throughput)}.", width), "dim"),
        style(paragraph(f"Prices: {a.prices}.", width), "dim"),
    ]
    return "\n".join(lines) + "\n"


def serve_markdown(report: ServeReport) -> str:
    """The comparison as Markdown: why, the launch commands, every layout and the assumptions."""
    lead = [md(targets_line(report)), f"**Why:** {md(report.why)}", *map(md, ttft_spread_lines(report))]
    lead += [md(line) for line in disaggregated_lines(report)]
    for name, launch in report.launch.items():  # as the text: each command, then what it cannot say
        if launch.command:
            lead.append(f"**Launch ({md(name)}):** `{launch.command.replace('`', '')}`")
        if launch.note:
            lead.append(f"**Launch ({md(name)}):** {md(launch.note)}")
    return sheet_markdown(title(report), lead, SERVE_COLUMNS, report.layouts, assumption_items(report))


def serve_csv_columns(report: ServeReport) -> list[ValueColumn]:
    """The layouts as plain values (numbers without separators, units in the headers, each estimate as
    low, best and high columns), the question on every row."""
    w, d = report.workload, report.demand

    def gib(n: int | None) -> float | None:
        return None if n is None else n / GIB

    return [
        ("model", lambda x: report.model.id, 0),
        ("context (tokens)", lambda x: w.context_tokens, 0),
        ("users at once", lambda x: d.users, 0),
        ("requests (per s)", lambda x: d.rps, 3),
        ("engine", lambda x: report.assumptions.engine, 0),
        ("GPU", lambda x: report.gpu, 0),
        ("GPUs", lambda x: report.num_gpus, 0),
        ("layout", layout_name, 0),
        ("replicas", lambda x: x.replicas, 0),
        ("GPUs per replica", lambda x: x.gpus_per_replica, 0),
        ("fits", lambda x: x.fits, 0),
        ("holds every user at once", lambda x: x.serves_all if x.fits else None, 0),
        ("holds (sequences)", lambda x: x.capacity_sequences if x.fits else None, 0),
        ("in flight (sequences)", lambda x: x.concurrent_sequences if x.fits else None, 0),
        ("KV cache (tokens/replica)", lambda x: x.kv_cache_capacity_tokens, 0),
        ("headroom (GiB/GPU)", lambda x: gib(x.headroom_bytes), 3),
        ("tok/s per request low", lambda x: x.per_request_tokens_per_s_low, 2),
        ("tok/s per request best", lambda x: x.per_request_tokens_per_s, 2),
        ("tok/s per request high", lambda x: x.per_request_tokens_per_s_high, 2),
        ("tok/s total low", lambda x: x.aggregate_tokens_per_s_low, 2),
        ("tok/s total best", lambda x: x.aggregate_tokens_per_s, 2),
        ("tok/s total high", lambda x: x.aggregate_tokens_per_s_high, 2),
        ("TTFT low (s)", lambda x: x.ttft_s_low, 3),
        ("TTFT best (s)", lambda x: x.ttft_s, 3),
        ("TTFT high (s)", lambda x: x.ttft_s_high, 3),
        ("TTFT p50 (s)", lambda x: x.ttft_p50_s, 3),
        ("TTFT p90 (s)", lambda x: x.ttft_p90_s, 3),
        ("price ($/h)", lambda x: x.usd_per_hour, 4),
        ("price ($/month)", lambda x: x.usd_per_month, 2),
        ("price low ($/1M tokens)", lambda x: x.usd_per_million_tokens_low, 4),
        ("price best ($/1M tokens)", lambda x: x.usd_per_million_tokens, 4),
        ("price high ($/1M tokens)", lambda x: x.usd_per_million_tokens_high, 4),
        ("if one GPU fails", lambda x: x.one_gpu_failure if x.fits else x.reason, 0),
    ]


def ttft_spread_lines(report: ServeReport) -> list[str]:
    """How the recommended layout's time to first token spreads over its requests (its p50 and p90)."""
    pick = report.recommendation
    if pick is None or pick.ttft_p50_s is None or pick.ttft_p90_s is None:
        return []
    return [
        f"TTFT at this load ({pick.replicas} x {pick.gpus_per_replica} GPU): half the requests within "
        f"{pick.ttft_p50_s:.2f} s, nine in ten within {pick.ttft_p90_s:.2f} s or more (estimates: the "
        "load model's schedule, each request's wait for the running step and the prefills and waves "
        f"before it; published steady-load runs put their P99 at {STEADY_P99_OVER_MEDIAN[0]}-"
        f"{STEADY_P99_OVER_MEDIAN[1]}x the median, a scheduling spread the model leaves out)"
    ] + in_step_lines(pick, engine_model(report.workload.engine.name).fixed_length_benchmark)


#: How much longer than the mean the in-step TTFT must be to be worth a line of its own.
IN_STEP_WORTH_SAYING = 1.1


def in_step_lines(pick: Layout, benchmark: str | None = None) -> list[str]:
    """What a fixed-length benchmark of the same load would measure, where it differs; `benchmark`:
    the engine's own run of that kind (`EngineModel.fixed_length_benchmark`), named when it has one."""
    if (
        pick.ttft_in_step_s is None
        or pick.ttft_s is None
        or pick.ttft_in_step_s < IN_STEP_WORTH_SAYING * pick.ttft_s
    ):
        return []
    named = f" ({benchmark})" if benchmark else ""
    return [
        f"A benchmark whose prompts and replies are all of one length{named} keeps its users in "
        "step: their requests arrive together and share prefill steps, about "
        f"{pick.ttft_in_step_s:.2f} s to the first token after its opening burst (estimate)"
    ]


def serve_csv(report: ServeReport) -> str:
    return value_csv(serve_csv_columns(report), report.layouts)


def targets_line(report: ServeReport) -> str:
    """Which layouts give each user the targets (the recommendation is chosen among them first)."""
    met = [layout_name(x) for x in report.layouts if x.meets_targets]
    who = f"met by {', '.join(met)}" if met else "no layout meets them"
    return f"Targets per user: {report.targets.words()} (--min-tokens-per-s-per-user, --max-ttft-s): {who}"
