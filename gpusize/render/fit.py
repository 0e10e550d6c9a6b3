"""The fit report as text: the headline, the memory of the model, the splits tried and the footer."""

from __future__ import annotations

from gpusize.core.allocator import TORCH_CUDA_CONTEXT_BYTES
from gpusize.core.plan import Candidate
from gpusize.core.suggest import Suggestion
from gpusize.render.format import fmt_gib, fmt_int, human_tokens
from gpusize.render.table import Column, render_table
from gpusize.render.text import Style, paragraph
from gpusize.reports.fit import FitReport

__all__ = [
    "VERDICT_STYLES",
    "candidates_table",
    "footer_lines",
    "headline",
    "render_fit",
    "settings_text",
    "suggestion_lines",
]

VERDICT_STYLES: tuple[tuple[str, tuple[str, ...]], ...] = (("yes", ("green",)), ("NO", ("red", "bold")))


def _split(c: Candidate, engine: str) -> str:
    if c.pipeline_parallel > 1:
        return f"TP={c.tensor_parallel} x PP={c.pipeline_parallel} across {c.pipeline_parallel} servers"
    if engine == "llamacpp":
        return f"llama.cpp, layers split over {c.num_gpus} GPU(s)"
    return f"TP={c.tensor_parallel}"


def headline(report: FitReport) -> str:
    w, p = report.workload, report.plan
    batch = f", batch {w.batch}" if w.batch > 1 else ""
    what = f"{report.model.name} at {human_tokens(w.context_tokens)} context{batch}"
    if report.fits and p and p.per_gpu:
        if p.per_gpu.device_bytes is not None and p.per_gpu.allocated_peak_bytes is not None:
            g = p.per_gpu
            return (
                f"{what} needs 1x {p.gpu_full_name}: {fmt_gib(g.device_bytes)} GiB on the device "
                f"({fmt_gib(g.allocated_peak_bytes)} allocated by PyTorch) of {fmt_gib(g.visible_bytes)}, "
                f"headroom {fmt_gib(g.headroom_bytes)} GiB"
            )
        verb, split = "needs", _split(p, w.engine.name)
        if report.min_gpus and report.min_gpus < p.num_gpus:  # --gpus asked for more than it takes
            verb, split = "runs on", f"needs {report.min_gpus}x; {split}"
        return (
            f"{what} {verb} {p.num_gpus}x {p.gpu_full_name} ({split}): "
            f"{fmt_gib(p.per_gpu.total_bytes)} of {fmt_gib(p.per_gpu.usable_bytes)} GiB per GPU"
        )
    if p:
        return f"{what} does not fit on {p.num_gpus}x {p.gpu_full_name}: {p.reason}"
    return f"{what} does not fit on up to 8 GPUs of any type considered"


def _torch_rows(report: FitReport) -> list[list[str]]:
    """The two figures of a PyTorch engine: what PyTorch allocates, and what the device shows."""
    m, w = report.memory, report.workload
    allocated, device = m.allocated_peak_bytes or 0, m.device_bytes or 0
    context = TORCH_CUDA_CONTEXT_BYTES
    return [
        ["weights", fmt_gib(m.weights_bytes), f"{report.model.params_total:,} params, {w.weight_dtype}"],
        [
            "KV cache",
            fmt_gib(m.kv_cache_bytes),
            f"{w.batch} x {w.context_tokens:,} tokens, the whole prompt at the prefill peak "
            f"({w.kv_cache_dtype})",
        ],
        [
            "activations",
            fmt_gib(m.activations_bytes),
            "estimate: prefill transients, masks, cuBLAS workspaces",
        ],
        ["allocated", fmt_gib(allocated), "PyTorch's allocated peak (max_memory_allocated)"],
        ["+ cache", fmt_gib(device - allocated - context), "estimate: reserved by the allocator, not in use"],
        ["+ context", fmt_gib(context), "CUDA context and libraries (measured, torch 2.11 on an H200)"],
        ["device", fmt_gib(device), "what nvidia-smi shows: the fit is decided on it"],
    ]


def memory_table(report: FitReport, width: int, style: Style) -> str:
    m, w = report.memory, report.workload
    columns = [Column("term", keep=True), Column("GiB", "right", keep=True), Column("how", shrink_to=20)]
    if m.device_bytes is not None:
        return render_table("Memory, whole model on one GPU", columns, _torch_rows(report), width, style)
    # Where CUDA-graph memory is counted follows the release (vLLM 0.20+: inside the budget).
    graphs = report.assumptions.settings.get("cuda_graphs", "outside the budget")
    overhead_how = "non-torch memory and CUDA graphs" if graphs == "inside the budget" else "non-torch memory"
    outside_how = "CUDA context and graphs" if graphs == "outside the budget" else "CUDA context"
    rows = [
        ["weights", fmt_gib(m.weights_bytes), f"{report.model.params_total:,} params, {w.weight_dtype}"],
        [
            "KV cache",
            fmt_gib(m.kv_cache_bytes),
            f"{w.batch} x {w.context_tokens:,} tokens, {m.kv_cache_bytes_per_token:,} B/token "
            f"({w.kv_cache_dtype})",
        ],
        ["activations", fmt_gib(m.activations_bytes), "estimate (engine profile peak)"],
        ["overhead", fmt_gib(m.overhead_bytes), f"estimate ({overhead_how} inside the budget)"],
        ["total", fmt_gib(m.total_bytes), "what one GPU's budget must hold (the 'need' of a TP=1 row)"],
    ]
    if m.outside_budget_bytes:
        rows.append(["+ outside", fmt_gib(m.outside_budget_bytes), f"{outside_how}, outside the budget"])
    return render_table("Memory, whole model on one GPU (TP=1)", columns, rows, width, style)


def candidates_table(rows: list[Candidate], title: str, width: int, style: Style) -> str:
    columns = [
        Column("GPU", keep=True),
        Column("GPUs", "right", keep=True),
        Column("fits", keep=True, styles=VERDICT_STYLES),
        Column("need GiB/GPU", "right", priority=8, short="need"),
        Column("usable", "right", priority=6),
        Column("KV pool tokens", "right", priority=5, short="KV tokens"),
        Column("concurrency", "right", priority=4, short="conc."),
        Column("$/h", "right", priority=3),
    ]
    cells = []
    for c in rows:
        g = c.per_gpu
        split = f"{c.num_gpus} (TP={c.tensor_parallel}" + (
            f"xPP={c.pipeline_parallel})" if c.pipeline_parallel > 1 else ")"
        )
        cells.append(
            [
                c.gpu,
                split,
                "yes" if c.fits else "NO",
                fmt_gib(g.total_bytes) if g else "-",
                fmt_gib(g.usable_bytes) if g else "-",
                fmt_int(c.kv_cache_capacity_tokens),
                f"{c.max_concurrency:.2f}x" if c.max_concurrency is not None else "-",
                f"{c.price_usd_per_hour:.2f}" if c.price_usd_per_hour else "-",
            ]
        )
    return render_table(title, columns, cells, width, style)


def _last_per_gpu(report: FitReport) -> list[Candidate]:
    """The deciding candidate of each GPU type: its smallest fitting split, or its largest miss."""
    last: dict[str, Candidate] = {}
    for c in report.candidates:
        last[c.gpu] = c
    return list(last.values())


def settings_text(settings: dict[str, float | int | str]) -> str:
    return ", ".join(f"{k} {v}" for k, v in settings.items())


def footer_lines(report: FitReport) -> list[str]:
    a, w = report.assumptions, report.workload
    settings = f", {settings_text(a.settings)}" if a.settings else ""
    lines = [
        f"Assumptions: {a.engine}{settings}; weights {w.weight_dtype}, KV {w.kv_cache_dtype}. "
        "Activations and overhead are estimates. Sizes in GiB (2^30 bytes).",
    ]
    p = report.plan
    if p and p.host_bytes:
        lines.append(f"System RAM for what stays on the CPU: {fmt_gib(p.host_bytes)} GiB.")
    if p and p.per_gpu and p.kv_cache_capacity_tokens is not None:
        largest = f"{p.max_context_tokens:,} tokens" if p.max_context_tokens else "none"
        lines.append(
            f"Plan: KV pool {p.kv_cache_capacity_tokens:,} tokens, {p.max_concurrency}x concurrent "
            "requests of "
            f"this context; largest context that fits {largest}."
        )
    lines += [f"Note: {n}" for n in a.notes]
    lines.append(f"Prices: {a.prices}.")
    return lines


def suggestion_lines(suggestions: tuple[Suggestion, ...], fits: bool) -> list[str]:
    """The configurations that fit with a change, cheapest first, each with the flags to pass."""
    if not suggestions:
        return []
    head = (
        "Fewer GPUs with a setting (each evaluated, cheapest first):"
        if fits
        else "Would fit (each evaluated with the same engine model, cheapest first):"
    )
    lines, said = [head], set()
    for s in suggestions:
        flags = " ".join(f"{c.flag} {c.value}" for c in s.changes)
        facts = [f"${s.price_usd_per_hour:.2f}/h" if s.price_usd_per_hour else "unpriced"]
        if s.kv_cache_capacity_tokens is not None:
            facts.append(f"KV pool {s.kv_cache_capacity_tokens:,} tokens")
        note = f"; {s.note}" if s.note and s.note not in said else ""  # a repeated caveat once
        said.add(s.note)
        lines.append(f"- {s.summary}: {flags} ({', '.join(facts)}){note}")
    return lines


def render_fit(report: FitReport, width: int, style: Style) -> str:
    many = len({c.gpu for c in report.candidates}) > 1
    if many:
        rows = _last_per_gpu(report)
        title = "Smallest split per GPU type (one server, 1/2/4/8 GPUs); pick: fewest GPUs, then lowest price"
    else:
        rows, title = list(report.candidates), "Splits tried"
    reasons = [f"{c.gpu} x{c.num_gpus}: {c.reason}" for c in rows if c.reason]
    reasons += [f"{c.gpu} x{c.num_gpus}: warning: {c.warning}" for c in rows if c.fits and c.warning]
    parts = [
        style(paragraph(headline(report), width), "bold"),
        memory_table(report, width, style),
        candidates_table(rows, title, width, style),
        *[paragraph(r, width) for r in reasons],
        *[style(paragraph(line, width), "dim") for line in footer_lines(report)],
        *[paragraph(line, width) for line in suggestion_lines(report.suggestions, report.fits)],
    ]
    return "\n".join(parts) + "\n"
