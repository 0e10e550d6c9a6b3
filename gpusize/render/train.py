"""The training report as text: headline, memory of the job, counts tried, time and cost, footer."""

from __future__ import annotations

from gpusize.render.format import fmt_float, fmt_gib, human_tokens
from gpusize.render.table import NEAREST, VERDICT_STYLES, Column, render_table
from gpusize.render.text import Style, paragraph, said_once
from gpusize.reports.train import TrainCandidate, TrainReport

__all__ = ["headline", "render_train", "suggestion_line", "suggestion_lines"]


def headline(report: TrainReport) -> str:
    s, p = report.setup, report.plan
    job = (
        f"{report.model.name} {s.method} ({s.precision}, {s.optimizer}, {s.batch} x "
        f"{human_tokens(s.seq_tokens)} tokens{', checkpointed' if s.grad_ckpt else ''})"
    )
    if report.fits and p:
        sharding = f" ({p.sharding})" if p.num_gpus > 1 else ""
        return (
            f"{job} needs {p.num_gpus}x {p.gpu_full_name}{sharding}: {fmt_gib(p.per_gpu.device_bytes)} GiB "
            f"per GPU on the device ({fmt_gib(p.per_gpu.allocated_peak_bytes)} allocated by PyTorch) of "
            f"{fmt_gib(p.usable_bytes)}, headroom {fmt_gib(p.headroom_bytes)} GiB"
        )
    if p:
        return f"{job} does not fit on {p.num_gpus}x {p.gpu_full_name}: {p.reason}"
    return f"{job} does not fit on up to 8 GPUs of any type considered"


def memory_table(report: TrainReport, width: int, style: Style) -> str:
    m, params = report.memory, report.params
    terms = report.assumptions.terms
    rows = [
        [
            "weights",
            fmt_gib(m.weights_bytes),
            f"{params.total:,} params; fp32 master {fmt_gib(m.master_weights_bytes)}",
        ],
        ["gradients", fmt_gib(m.gradients_bytes), f"{params.trainable:,} trainable params"],
        [
            "optimizer",
            fmt_gib(m.optimizer_bytes),
            report.setup.optimizer
            + (f"; paged {fmt_gib(m.paged_bytes)} GiB outside" if m.paged_bytes else ""),
        ],
        ["activations", fmt_gib(m.activations_bytes), f"estimate; logits {fmt_gib(m.logits_bytes)}"],
        ["overlap", f"-{fmt_gib(m.overlap_bytes)}", "gradients built while activations are freed"],
        ["step", fmt_gib(m.step_bytes), "optimizer.step() temporaries (instead of activations)"],
    ]
    if m.buffers_bytes:
        rows.append(["buffers", fmt_gib(m.buffers_bytes), "DDP / DeepSpeed gradient buckets"])
    rows += [
        ["allocated", fmt_gib(m.allocated_peak_bytes), f"PyTorch's allocated peak, at the {m.peak_phase}"],
        ["+ cache", fmt_gib(m.fragmentation_bytes), "estimate: reserved by the allocator, not in use"],
        ["+ context", fmt_gib(m.overhead_bytes), f"{terms.context} (+ {terms.collectives} on 2+ GPUs)"],
        [
            "device",
            fmt_gib(m.device_bytes),
            f"what {terms.smi} shows; the fit is decided on it"
            + (f"; host RAM {fmt_gib(m.host_ram_bytes)}" if m.host_ram_bytes else ""),
        ],
    ]
    columns = [Column("term", keep=True), Column("GiB", "right", keep=True), Column("how", prose=True)]
    return render_table("Memory, whole job on one GPU", columns, rows, width, style)


def candidates_table(rows: list[TrainCandidate], title: str, width: int, style: Style) -> str:
    columns = [
        Column("GPU", keep=True),
        Column("GPUs", "right", keep=True),
        Column("sharding", priority=5),
        Column("fits", keep=True, styles=VERDICT_STYLES),
        Column("need GiB/GPU", "right", priority=8, short="need"),
        Column("allocated", "right", priority=5, short="alloc"),
        Column("visible", "right", priority=6),
        Column("max seq", "right", priority=7),
        Column("max batch", "right", priority=4),
        Column("host RAM GiB", "right", priority=3, short="host RAM"),
        Column("$/h", "right", priority=4),
    ]
    cells = [
        [
            c.gpu,
            str(c.num_gpus),
            c.sharding,
            "yes" if c.fits else "NO",
            fmt_gib(c.per_gpu.device_bytes),
            fmt_gib(c.per_gpu.allocated_peak_bytes),
            fmt_gib(c.usable_bytes),
            f"{c.max_seq_tokens:,}",
            f"{c.max_batch:,}",
            fmt_gib(c.per_gpu.host_ram_bytes) if c.per_gpu.host_ram_bytes else "-",
            fmt_float(c.usd_per_hour, 2),
        ]
        for c in rows
    ]
    return render_table(title, columns, cells, width, style)


def time_table(report: TrainReport, width: int, style: Style) -> str | None:
    t = report.time
    if t is None:
        return None
    title = (
        f"Time and cost for {t.token_budget:,} tokens on {t.gpu} ({t.flops_per_token:.3g} FLOP/token, "
        f"efficiency {t.mfu:.0%} of peak, {t.interconnect}; {t.estimate})"
    )
    columns = [
        Column("GPUs", "right", keep=True),
        Column("fits", keep=True, styles=VERDICT_STYLES),
        Column("scaling", "right", priority=2),
        Column("speed-up", "right", priority=3),
        Column("hours", "right", keep=True),
        Column("hours range", "right", priority=1),
        Column("cost $", "right", keep=True),
    ]
    cells = [
        [
            str(r.num_gpus),
            "yes" if r.fits else "NO",
            f"{r.scaling_efficiency:.0%}",
            f"{r.speedup:.2f}x",
            fmt_float(r.hours),
            f"{fmt_float(r.hours_low)}-{fmt_float(r.hours_high)}" if r.hours_low and r.hours_high else "-",
            fmt_float(r.cost_usd, 0),
        ]
        for r in t.rows
    ]
    return render_table(title, columns, cells, width, style)


def footer_lines(report: TrainReport) -> list[str]:
    a, s = report.assumptions, report.setup
    # over servers the layout's own sharding (hsdp: FSDP inside each server, replicated across)
    sharding = report.nodes.sharding if report.nodes else s.sharding
    lines = [
        f"Assumptions: {a.framework}; sharding {sharding}, offload {s.offload}, grad-accum {s.grad_accum}. "
        "Activations, logits, the allocator cache and overhead are estimates. Sizes in GiB (2^30 bytes).",
        f"Versions: {a.versions}.",
        f"Optimizer: {a.optimizer}.",
        f"Peak: {a.peak_memory}; {a.allocator}.",
    ]
    if report.time:
        lines.append(f"Time: {report.time.note}" if report.time.note else f"Time: {a.prices}.")
    lines += [f"Note: {n}" for n in a.notes]
    return lines


def suggestion_line(c: TrainCandidate, seq_tokens: int) -> str:
    """What fits instead on this count, keeping the effective batch."""
    s = c.suggestion
    if s is None:
        return ""
    seq = f" --seq {s.seq_tokens}" if s.seq_tokens != seq_tokens else ""
    return (
        f"{c.gpu} x{c.num_gpus} fits with --batch {s.batch} --grad-accum {s.grad_accum}{seq} "
        f"(effective batch {s.effective_batch} per GPU)"
    )


def _rank(c: TrainCandidate) -> tuple[bool, float, float, float, str]:
    """Fitting rows by the pick's rule (fewest GPUs, then price, then name), then misses, nearest first."""
    if c.fits:
        return (False, c.num_gpus, c.usd_per_hour or float("inf"), 0.0, c.gpu)
    return (True, 0, 0.0, c.per_gpu.total_bytes / max(c.usable_bytes, 1), c.gpu)


def render_train(report: TrainReport, width: int, style: Style, show_all: bool = False) -> str:
    last: dict[str, TrainCandidate] = {}
    for c in report.candidates:
        last[c.gpu] = c
    many = len(last) > 1
    rows = sorted(last.values(), key=_rank) if many else list(report.candidates)
    more = ""
    if many and not show_all and len(rows) > NEAREST + 1:
        more = f"{len(rows) - NEAREST - 1} more GPU types: --all lists them, --json has every count tried"
        rows = rows[: NEAREST + 1]
    title = "Smallest GPU count per type (one server, 1/2/4/8), best first" if many else "Counts tried"
    if report.nodes is not None:
        title = f"Every GPU of {report.nodes.nodes} servers, per type, best first" if many else "Counts tried"
    parts = [
        style(paragraph(headline(report), width), "bold"),
        memory_table(report, width, style),
        candidates_table(rows, title, width, style),
        *([style(paragraph(f"({more})", width), "dim")] if more else []),
    ]
    parts += [
        paragraph(line, width)
        for line in said_once(
            [(f"{c.gpu} x{c.num_gpus}", c.reason or "") for c in rows if c.reason], ranges=False
        )
    ]
    parts += [paragraph(suggestion_line(c, report.setup.seq_tokens), width) for c in rows if c.suggestion]
    times = time_table(report, width, style)
    if times is not None:
        parts.append(times)
    if report.nodes is not None:
        parts.append(paragraph(report.nodes.words(), width))
        if report.nodes.nodes_that_fit:
            parts.append(
                paragraph(
                    f"Fits on --nodes {report.nodes.nodes_that_fit} "
                    f"({report.nodes.nodes_that_fit * report.nodes.gpus_per_node} GPUs), "
                    "the same memory model",
                    width,
                )
            )
    parts += [style(paragraph(line, width), "dim") for line in footer_lines(report)]
    parts += [paragraph(line, width) for line in suggestion_lines(report)]
    return "\n".join(parts) + "\n"


def suggestion_lines(report: TrainReport) -> list[str]:
    """The nearest jobs that fit, cheapest first, each with the flags to pass."""
    if not report.suggestions:
        return []
    lines = ["Would fit (each evaluated with the same memory model, cheapest first):"]
    for s in report.suggestions:
        flags = " ".join(f"{c.flag} {c.value}".strip() for c in s.changes)
        price = f"${s.usd_per_hour:.2f}/h" if s.usd_per_hour else "unpriced"
        note = f"; {s.note}" if s.note else ""
        lines.append(f"- {s.summary}: {flags} ({fmt_gib(s.per_gpu_bytes)} GiB per GPU, {price}){note}")
    return lines
