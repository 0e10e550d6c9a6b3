"""Train report -> Rich tables (no arithmetic beyond unit conversion)."""

from __future__ import annotations

from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from gpusize.render import fmt_gib
from gpusize.train_report import TrainCandidateInfo, TrainReport
from gpusize.units import human_tokens


def headline(report: TrainReport) -> str:
    w, p = report.workload, report.plan
    name = report.model.id.split("/")[-1]
    job = (
        f"{name} {w.method} ({w.precision}, {w.optimizer}, {w.batch} x {human_tokens(w.seq_tokens)} "
        f"tokens{', checkpointed' if w.grad_ckpt else ''})"
    )
    if report.fits and p:
        return (
            f"{job} needs {p.num_gpus}x {p.gpu_full_name}"
            f"{f' ({p.sharding})' if p.num_gpus > 1 else ''}: "
            f"{fmt_gib(p.per_gpu.total_bytes)} of {fmt_gib(p.per_gpu.visible_bytes)} GiB per GPU"
        )
    if p:
        return f"{job} does not fit on {p.num_gpus}x {p.gpu_full_name}: {p.reason}"
    return f"{job} does not fit on up to 8 GPUs of any type considered"


def memory_table(report: TrainReport) -> Table:
    m, w, params = report.memory, report.workload, report.params
    table = Table(title="Memory, whole job on one GPU", title_justify="left")
    for col, just in (("term", "left"), ("GiB", "right"), ("how", "left")):
        table.add_column(col, justify=just)  # type: ignore[arg-type]
    table.add_row(
        "weights",
        fmt_gib(m.weights_bytes),
        f"{params.total:,} params; fp32 master {fmt_gib(m.master_weights_bytes)}",
    )
    table.add_row("gradients", fmt_gib(m.gradients_bytes), f"{params.trainable:,} trainable params")
    table.add_row("optimizer", fmt_gib(m.optimizer_bytes), w.optimizer)
    table.add_row("activations", fmt_gib(m.activations_bytes), f"estimate; logits {fmt_gib(m.logits_bytes)}")
    table.add_row("overlap", f"-{fmt_gib(m.overlap_bytes)}", "gradients built while activations are freed")
    table.add_row("overhead", fmt_gib(m.overhead_bytes), "CUDA context")
    table.add_row(
        "total", fmt_gib(m.total_bytes), f"host RAM {fmt_gib(m.host_ram_bytes)}" if m.host_ram_bytes else ""
    )
    return table


def candidates_table(rows: list[TrainCandidateInfo], title: str) -> Table:
    table = Table(title=title, title_justify="left")
    for col, just in (
        ("GPU", "left"),
        ("GPUs", "right"),
        ("sharding", "left"),
        ("fits", "left"),
        ("need GiB/GPU", "right"),
        ("visible", "right"),
        ("max seq", "right"),
        ("host RAM GiB", "right"),
        ("$/h", "right"),
    ):
        table.add_column(col, justify=just, no_wrap=True)  # type: ignore[arg-type]
    for c in rows:
        table.add_row(
            c.gpu,
            str(c.num_gpus),
            c.sharding,
            "yes" if c.fits else "NO",
            fmt_gib(c.per_gpu.total_bytes),
            fmt_gib(c.per_gpu.visible_bytes),
            f"{c.max_seq_tokens:,}",
            fmt_gib(c.per_gpu.host_ram_bytes) if c.per_gpu.host_ram_bytes else "-",
            f"{c.price_usd_per_hour:.2f}" if c.price_usd_per_hour else "-",
        )
    return table


def time_table(report: TrainReport) -> Table | None:
    t = report.time
    if t is None:
        return None
    title = (
        f"Time and cost for {t.token_budget:,} tokens on {t.gpu} ({t.flops_per_token:.3g} FLOP/token, "
        f"MFU {t.mfu}, {t.interconnect})"
    )
    table = Table(title=title, title_justify="left")
    for col in ("GPUs", "fits", "scaling", "speed-up", "hours", "cost $"):
        table.add_column(col, justify="right")
    for r in t.rows:
        table.add_row(
            str(r.num_gpus),
            "yes" if r.fits else "NO",
            f"{r.scaling_efficiency:.0%}",
            f"{r.speedup:.2f}x",
            "-" if r.hours is None else f"{r.hours:,.1f}",
            "-" if r.cost_usd is None else f"{r.cost_usd:,.0f}",
        )
    return table


def footer(report: TrainReport) -> Text:
    a, w = report.assumptions, report.workload
    lines = [
        f"Assumptions: {a['framework']}; sharding {w.sharding}, offload {w.offload}, grad-accum "
        f"{w.grad_accum}. Activations, logits and overhead are estimates. Sizes in GiB (2^30 bytes).",
        f"Peak: {a['peak_memory']}.",
    ]
    if report.time:
        lines.append(f"Time: {report.time.note}" if report.time.note else "Time: " + a["prices"] + ".")
    lines += [f"Note: {n}" for n in a["notes"]]
    return Text("\n".join(lines), style="dim")


def render_train(report: TrainReport, console: Console) -> None:
    last: dict[str, TrainCandidateInfo] = {}
    for c in report.candidates:
        last[c.gpu] = c
    many = len(last) > 1
    rows = list(last.values()) if many else report.candidates
    title = "Smallest GPU count per type (one server, 1/2/4/8)" if many else "Counts tried"
    parts: list[Table | Text] = [memory_table(report), candidates_table(rows, title)]
    reasons = [f"{c.gpu} x{c.num_gpus}: {c.reason}" for c in rows if c.reason]
    if reasons:
        parts.append(Text("\n".join(reasons)))
    times = time_table(report)
    if times is not None:
        parts.append(times)
    parts.append(footer(report))
    console.print(Text(headline(report), style="bold"))
    console.print(Group(*parts))
