"""Report -> Rich tables or JSON text. No arithmetic beyond unit conversion."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from gpusize.catalog import GpuSpec
from gpusize.report import CandidateInfo, Report
from gpusize.units import gib, human_tokens

if TYPE_CHECKING:
    from gpusize.serve_report import ServeReport


def to_json(report: Report) -> str:
    return json.dumps(report.model_dump(mode="json"), indent=2)


def fmt_gib(n_bytes: int | None) -> str:
    """Bytes as GiB with one decimal, "-" when unknown (every table uses this)."""
    return "-" if n_bytes is None else f"{gib(n_bytes):.1f}"


def headline(report: Report) -> str:
    name = report.model.id.split("/")[-1]
    ctx = human_tokens(report.workload.context_tokens)
    batch = f", batch {report.workload.batch}" if report.workload.batch > 1 else ""
    p = report.plan
    if report.fits and p and p.per_gpu:
        split = f"TP={p.tensor_parallel}"
        if p.pipeline_parallel > 1:
            split += f" x PP={p.pipeline_parallel} across {p.pipeline_parallel} servers"
        elif report.workload.engine == "llamacpp":
            split = f"llama.cpp, layers split over {p.num_gpus} GPU(s)"
        return (
            f"{name} at {ctx} context{batch} needs {p.num_gpus}x {p.gpu_full_name} "
            f"({split}): {fmt_gib(p.per_gpu.total_bytes)} of {fmt_gib(p.per_gpu.usable_bytes)} GiB per GPU"
        )
    if p:
        return f"{name} at {ctx} context{batch} does not fit on {p.num_gpus}x {p.gpu_full_name}: {p.reason}"
    return f"{name} at {ctx} context{batch} does not fit on up to 8 GPUs of any type considered"


def memory_table(report: Report) -> Table:
    m, w = report.memory, report.workload
    table = Table(title="Memory, whole model (one GPU, TP=1)", title_justify="left")
    table.add_column("term")
    table.add_column("GiB", justify="right")
    table.add_column("how")
    table.add_row(
        "weights", fmt_gib(m.weights_bytes), f"{report.model.params_total:,} params, {w.weight_dtype}"
    )
    table.add_row(
        "KV cache",
        fmt_gib(m.kv_cache_bytes),
        f"{w.batch} x {w.context_tokens:,} tokens, {m.kv_cache_bytes_per_token:,} B/token"
        f" ({w.kv_cache_dtype})",
    )
    table.add_row("activations", fmt_gib(m.activations_bytes), "estimate (engine profile peak)")
    table.add_row("overhead", fmt_gib(m.overhead_bytes), "estimate (non-torch, CUDA context, graphs)")
    table.add_row("total", fmt_gib(m.total_bytes), "")
    return table


def candidates_table(rows: list[CandidateInfo], title: str) -> Table:
    table = Table(title=title, title_justify="left")
    for col, just in (
        ("GPU", "left"),
        ("GPUs", "right"),
        ("fits", "left"),
        ("need GiB/GPU", "right"),
        ("usable", "right"),
        ("KV pool tokens", "right"),
        ("concurrency", "right"),
        ("$/h", "right"),
    ):
        table.add_column(col, justify=just, no_wrap=True)  # type: ignore[arg-type]
    for c in rows:
        table.add_row(*_candidate_cells(c))
    return table


def _candidate_cells(c: CandidateInfo) -> list[str]:
    g = c.per_gpu
    return [
        c.gpu,
        f"{c.num_gpus} (TP={c.tensor_parallel})",
        "yes" if c.fits else "NO",
        fmt_gib(g.total_bytes) if g else "-",
        fmt_gib(g.usable_bytes) if g else "-",
        f"{c.kv_cache_capacity_tokens:,}" if c.kv_cache_capacity_tokens is not None else "-",
        f"{c.max_concurrency:.2f}x" if c.max_concurrency is not None else "-",
        f"{c.price_usd_per_hour:.2f}" if c.price_usd_per_hour else "-",
    ]


def _last_per_gpu(report: Report) -> list[CandidateInfo]:
    """The deciding candidate of each GPU type: its smallest fitting split, or its largest miss."""
    last: dict[str, CandidateInfo] = {}
    for c in report.candidates:
        last[c.gpu] = c
    return list(last.values())


def footer(report: Report) -> Text:
    a = report.assumptions
    if report.workload.engine == "vllm":
        engine = (
            f"{a['engine']}, gpu_memory_utilization {a['gpu_memory_utilization']}, "
            f"max_num_seqs {a['max_num_seqs']}, max_num_batched_tokens {a['max_num_batched_tokens']}, "
            f"KV block {a['kv_block_size']} tokens"
        )
    else:
        engine = f"{a['engine']} ({a['engine_model']})"
    lines = [
        f"Assumptions: {engine}; weights {report.workload.weight_dtype}, "
        f"KV {report.workload.kv_cache_dtype}. Activations and overhead are estimates. "
        "Sizes in GiB (2^30 bytes).",
    ]
    if report.plan and report.plan.host_bytes:
        lines.append(f"System RAM for what stays on the CPU: {fmt_gib(report.plan.host_bytes)} GiB.")
    if report.plan and report.plan.per_gpu:
        p = report.plan
        lines.append(
            f"Plan: KV pool {p.kv_cache_capacity_tokens or 0:,} tokens, "
            f"{p.max_concurrency}x concurrent requests of this context; largest context "
            f"that fits {p.max_context_tokens or 0:,} tokens."
        )
    lines += [f"Note: {n}" for n in a["notes"]]
    lines.append(f"Prices: {a['prices']}.")
    return Text("\n".join(lines), style="dim")


def reasons(rows: list[CandidateInfo]) -> Text:
    lines = [f"{c.gpu} x{c.num_gpus}: {c.reason}" for c in rows if c.reason]
    lines += [f"{c.gpu} x{c.num_gpus}: warning: {c.warning}" for c in rows if c.fits and c.warning]
    return Text("\n".join(lines))


def render_fit(report: Report, console: Console, gpus: list[GpuSpec]) -> None:
    if len(gpus) > 1:
        rows = _last_per_gpu(report)
        title = (
            "Smallest split per GPU type (one server, 1/2/4/8 GPUs); pick: fewest GPUs, "
            "then lowest indicative price"
        )
    else:
        rows, title = list(report.candidates), "Splits tried"
    console.print(Text(headline(report), style="bold"))
    console.print(Group(memory_table(report), candidates_table(rows, title), reasons(rows), footer(report)))


def render_list(rows: list[dict[str, Any]], columns: list[str], title: str, console: Console) -> None:
    table = Table(title=title, title_justify="left")
    for col in columns:
        table.add_column(col)
    for row in rows:
        table.add_row(*["-" if row.get(c) is None else str(row.get(c)) for c in columns])
    console.print(table)


def _num(value: float | None, fmt: str = "{:,.0f}") -> str:
    return "-" if value is None else fmt.format(value)


def render_serve(report: ServeReport, console: Console) -> None:
    w = report.workload
    load = f"{w.users} concurrent users" if w.users is not None else f"{w.rps} requests/s"
    pick = report.recommendation
    if pick:
        title = (
            f"{report.model.id.split('/')[-1]} on {report.num_gpus}x {report.gpu_full_name}, "
            f"{human_tokens(w.context_tokens)} context, {load}: "
            f"{pick.replicas} replica(s) x TP={pick.tensor_parallel}"
        )
    else:
        title = f"{report.model.id.split('/')[-1]} does not fit {report.num_gpus}x {report.gpu_full_name}"
    table = Table(title="Layouts on one server (throughput and TTFT are estimates)", title_justify="left")
    for col in (
        "layout",
        "fits",
        "holds seqs",
        "in flight",
        "tok/s per req",
        "tok/s total",
        "TTFT s",
        "$/h",
        "$/1M tok",
        "one GPU fails",
    ):
        table.add_column(col, justify="left" if col in ("layout", "fits", "one GPU fails") else "right")
    for x in report.layouts:
        table.add_row(
            f"{x.replicas} x TP={x.tensor_parallel}",
            "yes" if x.fits else "NO",
            str(x.capacity_sequences) if x.fits else "-",
            str(x.concurrent_sequences) if x.fits else "-",
            _num(x.per_request_tokens_per_s, "{:,.1f}"),
            _num(x.aggregate_tokens_per_s),
            _num(x.ttft_s, "{:.2f}"),
            _num(x.cost_per_hour, "{:.2f}"),
            _num(x.cost_per_million_tokens, "{:.3f}"),
            x.one_gpu_failure if x.fits else (x.reason or ""),
        )
    lines = [f"Why: {report.why}"]
    lines += [f"Launch ({k}): {v}" for k, v in report.launch.items()]
    if report.power:
        p = report.power
        lines.append(
            f"Power: GPUs {p.gpu_tdp_w:,.0f} W, server {p.total_w_low:,.0f}-{p.total_w_high:,.0f} W "
            f"-> PSU {p.psu_capacity_w:,.0f} W: {p.psu_layout}; {p.pcie_lanes} PCIe lanes for GPUs"
        )
        lines += [f"Note: {n}" for n in p.notes]
    lines += [
        f"Assumptions: {report.assumptions['throughput']}; {report.assumptions['load']}.",
        f"Prices: {report.assumptions['prices']}.",
    ]
    console.print(Text(title, style="bold"))
    console.print(Group(table, Text("\n".join(lines))))


def render_which(
    rows: list[Any], gpu: GpuSpec, count: int, context: int, show_all: bool, console: Console
) -> None:
    fitting = [r for r in rows if r.fits]
    table = Table(
        title=f"{len(fitting)} catalog models fit {count}x {gpu.full_name} at "
        f"{human_tokens(context)} context (fastest first; tok/s is an estimate)",
        title_justify="left",
    )
    for col in ("model", "params", "TP", "headroom GiB", "KV pool tokens", "concurrency", "tok/s", "why not"):
        table.add_column(col, justify="left" if col in ("model", "why not") else "right")
    for r in rows:
        if not r.fits and not show_all:
            continue
        table.add_row(
            r.name,
            f"{r.params_total / 1e9:.1f}B",
            str(r.tensor_parallel or "-"),
            fmt_gib(r.headroom_bytes),
            f"{r.kv_cache_capacity_tokens:,}" if r.kv_cache_capacity_tokens else "-",
            f"{r.max_concurrency:.1f}x" if r.max_concurrency is not None else "-",
            f"{r.tokens_per_s:,.0f}" if r.tokens_per_s else "-",
            r.reason or "",
        )
    console.print(table)


# --------------------------------------------------------------------------- quote and charts

BAR_STYLE = {
    "weights": ("W", "blue"),
    "KV cache": ("K", "dark_orange"),
    "activations": ("A", "magenta"),
    "overhead": ("O", "grey50"),
    "free": (".", "green"),
}


def memory_bar(parts: list[tuple[str, int]], width: int = 50) -> Text:
    """A stacked bar of the per-GPU memory breakdown; letters carry the meaning, colour helps."""
    total = sum(v for _, v in parts) or 1
    bar = Text()
    for name, value in parts:
        letter, style = BAR_STYLE[name]
        bar.append(letter * round(value / total * width), style=style)
    return bar


def render_quote(report: Any, console: Console) -> None:
    from gpusize.export import COLUMNS, title

    console.print(Text(f"Quote: {title(report)}", style="bold"))
    table = Table(
        title="Options, best first (figures per GPU; throughput is an estimate)", title_justify="left"
    )
    shown = [c for c in COLUMNS if c[0] not in ("PSU", "caveats")]
    for name, _ in shown:
        table.add_column(
            name, justify="left" if name in ("GPU", "layout", "fits", "interconnect") else "right"
        )
    for o in report.options:
        table.add_row(*[cell(o) for _, cell in shown])
    legend = "  ".join(f"{letter}={name}" for name, (letter, _) in BAR_STYLE.items())
    bars = Table.grid(padding=(0, 1))
    from gpusize.quote import memory_parts

    for o in report.options:
        if o.fits:
            bars.add_row(
                f"{o.num_gpus}x {o.gpu}", memory_bar(memory_parts(o)), f"{fmt_gib(o.usable_bytes)} GiB"
            )
    notes = [
        f"{o.num_gpus}x {o.gpu}: {'; '.join(o.caveats) or o.reason}"
        for o in report.options
        if o.caveats or o.reason
    ]
    parts: list[Any] = [table, Text(f"Memory per GPU ({legend})"), bars]
    if report.curve:
        parts += [Text("Concurrency against context (recommended option)"), curve_chart(report.curve)]
    if report.topology_text:
        parts += [Text("Topology"), Text(report.topology_text)]
    parts += [Text("\n".join(notes)), Text(f"Prices: {report.assumptions['prices']}.", style="dim")]
    console.print(Group(*parts))


def curve_chart(points: list[Any], width: int = 40) -> Table:
    top = max((p.max_concurrency for p in points), default=0) or 1
    grid = Table.grid(padding=(0, 1))
    for p in points:
        bar = "#" * max(1, round(p.max_concurrency / top * width)) if p.max_concurrency else ""
        grid.add_row(
            f"{human_tokens(p.context_tokens):>5}",
            Text(bar, style="cyan"),
            f"{p.max_concurrency:,.1f}" + ("" if p.fits else " (does not fit)"),
        )
    return grid
