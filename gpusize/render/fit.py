"""The fit report as text: the headline, the memory of the model, the splits tried and the footer."""

from __future__ import annotations

from gpusize.core.engines import engine as engine_model
from gpusize.core.plan import Candidate, ranked
from gpusize.core.reserves import Reserve
from gpusize.core.runtime import TORCH_CUDA_CONTEXT_BYTES
from gpusize.core.suggest import Suggestion
from gpusize.render.format import fmt_gib, fmt_int, human_tokens
from gpusize.render.table import NEAREST, VERDICT_STYLES, Column, render_table
from gpusize.render.text import Style, paragraph, said_once
from gpusize.reports.fit import FitReport

__all__ = [
    "NEAREST",
    "VERDICT_STYLES",
    "best_first",
    "candidates_table",
    "footer_lines",
    "headline",
    "memory_table",
    "render_fit",
    "settings_text",
    "suggestion_lines",
]


def _split(c: Candidate, engine: str, settings: dict[str, float | int | str] | None = None) -> str:
    if c.pipeline_parallel > 1:
        return f"TP={c.tensor_parallel} x PP={c.pipeline_parallel} across {c.pipeline_parallel} servers"
    if engine_model(engine).splits_layers:
        return f"{engine_model(engine).label}, layers split over {c.num_gpus} GPU(s)"
    ranks = (settings or {}).get("data_parallel_size")
    if ranks:  # vLLM's --data-parallel-size: the engine's own split, as its settings state it
        return f"DP={ranks} x TP={(settings or {})['tensor_parallel_size']}"
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
        verb, split = "needs", _split(p, w.engine.name, report.assumptions.settings)
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
    terms = report.assumptions.terms
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
        ["+ context", fmt_gib(context), f"{terms.context} and libraries (measured, torch 2.11 on an H200)"],
        ["device", fmt_gib(device), f"what {terms.smi} shows: the fit is decided on it"],
    ]


def _split_label(c: Candidate) -> str:
    return f"TP={c.tensor_parallel}" + (f" x PP={c.pipeline_parallel}" if c.pipeline_parallel > 1 else "")


def _kv_how(batch: int, tokens: int, per_token: int, average: int | None, dtype: str) -> str:
    """The KV cache term's line, which multiplies out to the table's figure: batch x tokens x bytes a
    token, or the total's average a token beside the figure before windows and state."""
    if average is None:
        return f"{batch} x {tokens:,} tokens x {per_token:,} B ({dtype})"
    return (
        f"{batch} x {tokens:,} tokens x {average:,} B on average ({dtype}; with sliding windows, "
        f"recurrent state and the engine's layout; {per_token:,} B a token before them)"
    )


def memory_table(report: FitReport, width: int, style: Style) -> str:
    """The memory terms of the whole model on one GPU (TP=1) and, when the plan splits the model, per
    GPU of the plan: each column says what it holds, and its total is the 'need' of that row below."""
    m, w, p = report.memory, report.workload, report.plan
    if m.device_bytes is not None:
        columns = [Column("term", keep=True), Column("GiB", "right", keep=True), Column("how", prose=True)]
        return render_table("Memory, whole model on one GPU", columns, _torch_rows(report), width, style)
    # Where CUDA-graph memory is counted follows the release (vLLM 0.20+: inside the budget).
    graphs = report.assumptions.settings.get("cuda_graphs", "outside the budget")
    inside = graphs == "inside the budget"
    outside_torch = "memory outside PyTorch (non-torch)"
    terms = report.assumptions.terms
    overhead_how = f"{outside_torch} + {terms.graphs} inside the budget" if inside else outside_torch
    outside_how = f"{terms.context} + graphs" if graphs == "outside the budget" else terms.context
    gpu = p.gpu if p else report.candidates[0].gpu if report.candidates else "one GPU"
    split = p if p and p.per_gpu and p.num_gpus > 1 else None
    whole = [m.weights_bytes, m.kv_cache_bytes, m.activations_bytes, m.overhead_bytes, m.total_bytes]
    per = split.per_gpu if split else None
    each = (
        [per.weights_bytes, per.kv_cache_bytes, per.activations_bytes, per.overhead_bytes, per.total_bytes]
        if per
        else []
    )
    how = [
        f"{report.model.params_total:,} params, {w.weight_dtype}",
        _kv_how(
            w.batch,
            w.context_tokens,
            m.kv_cache_bytes_per_token,
            m.kv_average_per_token(w.batch * w.context_tokens),
            w.kv_cache_dtype,
        ),
        "estimate: the engine's profile peak",
        f"estimate: {overhead_how}",
        "what the engine reserves (its budget): 'need' below",
    ]
    rows = [
        [term, fmt_gib(value), *([fmt_gib(each[i])] if each else []), how[i]]
        for i, (term, value) in enumerate(zip(_TERMS, whole, strict=True))
    ]
    held = tuple(r for r in m.reserves if not r.outside)
    rows[-1:-1] = _reserve_rows(held, per.reserves if per else None)
    if m.outside_budget_bytes:
        extra = [fmt_gib(per.outside_budget_bytes)] if per else []
        rows.append(
            ["+ not in budget", fmt_gib(m.outside_budget_bytes), *extra, f"{outside_how}, outside the budget"]
        )
        # reserves the engine allocates outside its budget (SGLang's draft): part of "+ outside"
        rows += _reserve_rows(tuple(r for r in m.reserves if r.outside), per.reserves if per else None)
    layers = engine_model(w.engine.name).splits_layers  # llama.cpp splits layers: no TP to name
    one_label = "1 GPU" if layers else "1 GPU, TP=1"
    columns = [
        Column("term", keep=True),
        Column(one_label, "right", keep=True, short="1 GPU" if layers else "TP=1"),
    ]
    title = f"Memory in GiB: the whole model on one {gpu}" + ("" if layers else " (TP=1)")
    if split:
        label = f"{split.num_gpus} GPUs, layer split" if layers else _split_label(split)
        columns.append(Column(f"per GPU, {label}", "right", keep=True, short=label))
        title += f", and per GPU on {split.num_gpus}x {split.gpu} ({label})"
    columns.append(Column("how", prose=True))
    return render_table(title, columns, rows, width, style)


_TERMS = ("weights", "KV cache", "activations", "overhead", "total")


def _reserve_rows(whole: tuple[Reserve, ...], per: tuple[Reserve, ...] | None) -> list[list[str]]:
    """One row per reserve the engine holds under its own flags, before the total."""
    split = {r.name: r for r in per or ()}
    rows = []
    for r in whole:
        each = [fmt_gib(split[r.name].bytes if r.name in split else 0)] if per is not None else []
        how = ("estimate: " if r.estimate else "") + r.how
        rows.append([r.name.replace("_", " "), fmt_gib(r.bytes), *each, how])
    return rows


def candidates_table(
    rows: list[Candidate], title: str, width: int, style: Style, layers: bool = False
) -> str:
    """One row per split tried; `layers`: the engine splits layers (llama.cpp), so no TP is named."""
    columns = [
        Column("GPU", keep=True),
        Column("GPUs", "right", keep=True),
        Column("fits", keep=True, styles=VERDICT_STYLES),
        Column("need GiB/GPU", "right", priority=8, short="need"),
        Column("usable", "right", priority=6),
        Column("KV cache room, tokens", "right", priority=5, short="KV tokens"),
        Column("concurrency", "right", priority=4, short="conc."),
        Column("$/h", "right", priority=3),
    ]
    cells = []
    for c in rows:
        g = c.per_gpu
        split = (
            str(c.num_gpus)
            if layers
            else f"{c.num_gpus} (TP={c.tensor_parallel}"
            + (f"xPP={c.pipeline_parallel})" if c.pipeline_parallel > 1 else ")")
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
                f"{c.usd_per_hour:.2f}" if c.usd_per_hour else "-",
            ]
        )
    return render_table(title, columns, cells, width, style)


def _last_per_gpu(report: FitReport) -> list[Candidate]:
    """The deciding candidate of each GPU type: its smallest fitting split, or its largest miss."""
    last: dict[str, Candidate] = {}
    for c in report.candidates:
        last[c.gpu] = c
    return list(last.values())


def _closeness(c: Candidate) -> tuple[bool, float]:
    """How near a miss came: its budget over what it needed (refused before sizing: last)."""
    g = c.per_gpu
    return (g is None, g.total_bytes / max(g.usable_bytes, 1) if g else 0.0)


def best_first(per_type: list[Candidate]) -> list[Candidate]:
    """One row per GPU type: those that fit in the pick's order (the pick first), then the misses,
    nearest first."""
    return ranked(per_type) + sorted((c for c in per_type if not c.fits), key=_closeness)


#: Settings whose JSON key is not a word: the text says them so (`cuda_graphs`: where the captured
#: graphs' memory is counted; the vendor's own name for them replaces it where known).
SETTING_WORDS = {"cuda_graphs": "CUDA graphs"}


def settings_text(settings: dict[str, float | int | str], graphs: str = "CUDA graphs") -> str:
    words = {**SETTING_WORDS, "cuda_graphs": graphs}
    return ", ".join(f"{words.get(k, k)} {v}" for k, v in settings.items())


def footer_lines(report: FitReport) -> list[str]:
    a, w = report.assumptions, report.workload
    settings = f", {settings_text(a.settings, a.terms.graphs)}" if a.settings else ""
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
            f"Plan: room for {p.kv_cache_capacity_tokens:,} tokens in the KV cache (KV pool), "
            f"{p.max_concurrency}x concurrent requests of this context; largest context that fits {largest}."
        )
    lines += [f"Note: {n}" for n in a.notes]
    lines.append(f"Prices: {a.prices}.")
    return lines


def one_gpu_lines(report: FitReport) -> list[str]:
    """What one GPU of the asked type can do, when the plan takes several."""
    p = report.plan
    if p is None:
        return []
    if not report.one_gpu:
        return [f"On one {p.gpu_full_name}: nothing evaluated fits (no single change is enough)."]
    head = f"On one {p.gpu_full_name} (each evaluated with the same engine model):"
    return suggestion_lines(report.one_gpu, True, head)


def suggestion_lines(suggestions: tuple[Suggestion, ...], fits: bool, head: str | None = None) -> list[str]:
    """The configurations that fit with a change, cheapest first, each with the flags to pass."""
    if not suggestions:
        return []
    head = head or (
        "Fewer GPUs of the same type with a setting (fewer than that type's own split above; each "
        "evaluated, cheapest first):"
        if fits
        else "Would fit (each evaluated with the same engine model, cheapest first):"
    )
    lines, said = [head], set()
    for s in suggestions:
        flags = " ".join(f"{c.flag} {c.value}" for c in s.changes)
        facts = [f"${s.usd_per_hour:.2f}/h" if s.usd_per_hour else "unpriced"]
        if s.kv_cache_capacity_tokens is not None:
            facts.append(f"KV cache room {s.kv_cache_capacity_tokens:,} tokens")
        note = f"; {s.note}" if s.note and s.note not in said else ""  # a repeated caveat once
        said.add(s.note)
        lines.append(f"- {s.summary}: {flags} ({', '.join(facts)}){note}")
    return lines


def _several(report: FitReport) -> bool:
    """The plan takes several GPUs of the one type asked for, with no --gpus: say what one can do."""
    p = report.plan
    types = {c.gpu for c in report.candidates}
    return bool(
        report.fits
        and p
        and p.num_gpus > 1
        and len(types) == 1
        and report.min_gpus == p.num_gpus
        and report.candidates[0].num_gpus == 1
    )


def render_fit(report: FitReport, width: int, style: Style, show_all: bool = False) -> str:
    """The headline, the memory, the best options (every GPU type with `show_all`), caveats said once,
    the footer."""
    per_type = _last_per_gpu(report)
    more = ""
    if len(per_type) > 1:
        rows = best_first(per_type)
        if not show_all and len(rows) > NEAREST + 1:
            more = f"{len(rows) - NEAREST - 1} more GPU types: --all lists them, --json has every split tried"
            rows = rows[: NEAREST + 1]
        title = (
            "Smallest split per GPU type (one server, 1/2/4/8 GPUs), best first: fewest GPUs, then lowest "
            "price"
        )
    else:
        rows, title = list(report.candidates), "Splits tried"
    reasons = said_once([(f"{c.gpu} x{c.num_gpus}", c.reason) for c in rows if c.reason], ranges=False)
    warnings = said_once(
        [(f"{c.gpu} x{c.num_gpus}", f"warning: {c.warning}") for c in rows if c.fits and c.warning]
    )
    parts = [
        style(paragraph(headline(report), width), "bold"),
        memory_table(report, width, style),
        candidates_table(rows, title, width, style, engine_model(report.workload.engine.name).splits_layers),
        *([style(paragraph(f"({more})", width), "dim")] if more else []),
        *[paragraph(line, width) for line in reasons + warnings],
        *[style(paragraph(line, width), "dim") for line in footer_lines(report)],
        *[paragraph(line, width) for line in suggestion_lines(report.suggestions, report.fits)],
        *[paragraph(line, width) for line in (one_gpu_lines(report) if _several(report) else [])],
    ]
    return "\n".join(parts) + "\n"
