"""The reverse-query report as text: the models that fit (most capable or fastest first), the builds
they need, and the nearest misses. `WHICH_COLUMNS` is shared with the Markdown and CSV exports, so
every format shows the same cells."""

from __future__ import annotations

from collections.abc import Callable

from gpusize.render.format import fmt_gib, fmt_int, fmt_range, human_tokens
from gpusize.render.sheet import ValueColumn, assumption_items, sheet_markdown, value_csv
from gpusize.render.table import VERDICT_STYLES, Column, laid_out, render_table, shown_headers
from gpusize.render.text import Style, paragraph
from gpusize.reports.which import WhichReport
from gpusize.serving.which import ModelFit
from gpusize.units import GIB

__all__ = ["WHICH_COLUMNS", "render_which", "title", "which_csv", "which_csv_columns", "which_markdown"]

#: Nearest misses named below the table when --all is not given.
NEAREST_MISSES = 5


def _name(r: ModelFit) -> str:
    """The model, marked when it runs as a quantized build."""
    return f"{r.name} [{r.weight_dtype}]" if r.changes else r.name


def _split(r: ModelFit) -> str:
    if not r.tensor_parallel:
        return "-"
    return f"{r.tensor_parallel} (x{r.replicas})" if r.replicas and r.replicas > 1 else str(r.tensor_parallel)


def _verdict(r: ModelFit) -> str:
    """'yes', 'yes, thin margin' (within gpusize's error: core/plan.thin_margin, as fit says) or 'NO'."""
    if not r.fits:
        return "NO"
    return "yes, thin margin" if r.thin_margin else "yes"


#: The column of the speed estimates (the one cell a report may leave to be filled: `render_which`).
SPEED_COLUMN = Column("tok/s", "right", priority=7)

#: (column, its text cell).
WHICH_COLUMNS: list[tuple[Column, Callable[[ModelFit], str]]] = [
    (Column("model", keep=True), _name),
    (Column("fits", keep=True, styles=VERDICT_STYLES), _verdict),
    (
        Column("params", "right", priority=8),
        lambda r: f"{r.params_total / 1e9:.1f}B" if r.params_total else "-",
    ),
    (Column("TP", "right", priority=9), _split),
    (Column("released", "right", priority=10), lambda r: r.released or "-"),
    (Column("headroom GiB", "right", priority=5, short="headroom"), lambda r: fmt_gib(r.headroom_bytes)),
    (
        Column("KV cache room, tokens", "right", priority=4, short="KV tokens"),
        lambda r: fmt_int(r.kv_cache_capacity_tokens),
    ),
    (
        Column("concurrency", "right", priority=6, short="conc."),
        lambda r: f"{r.max_concurrency:.1f}x" if r.max_concurrency is not None else "-",
    ),
    (
        SPEED_COLUMN,
        lambda r: (
            fmt_range(r.tokens_per_s, r.tokens_per_s_low, r.tokens_per_s_high) if r.tokens_per_s else "-"
        ),
    ),
    (Column("why not", prose=True), lambda r: r.reason or ""),
]


def title(report: WhichReport) -> str:
    fitting = report.models_fitting
    order = "most capable first" if report.assumptions.sort == "capability" else "fastest first"
    return (
        f"{fitting} catalog models fit {report.num_gpus}x {report.gpu_full_name} at "
        f"{human_tokens(report.context_tokens)} context ({order}; tok/s is an estimate)"
    )


def _gpus(report: WhichReport, r: ModelFit) -> str:
    if not r.fits:
        return "-"
    return f"{report.num_gpus} (layers)" if report.num_gpus > 1 else "1"


def _columns(report: WhichReport) -> list[tuple[Column, Callable[[ModelFit], str]]]:
    """WHICH_COLUMNS; for an engine that splits layers (llama.cpp) the split column says GPUs, not TP."""
    if not report.splits_layers:
        return WHICH_COLUMNS
    gpus = (Column("GPUs", "right", priority=9), lambda r: _gpus(report, r))
    return [gpus if c.header == "TP" else (c, cell) for c, cell in WHICH_COLUMNS]


#: How many speed estimates a table whose report left them (`build_which(..., speeds=False)`) makes
#: before it knows whether its width shows the tok/s column (`render_which`): one cell is a lower
#: bound on the column's width, and one estimate is ~1/80 of them over the catalog.
SPEED_PROBES = 1


def render_which(
    report: WhichReport,
    show_all: bool,
    width: int,
    style: Style,
    estimates: Callable[[WhichReport, int | None], WhichReport] | None = None,
) -> str:
    """The table and its notes. Where the report left its speed estimates to be made (`build_which(...,
    speeds=False)`; `estimates(report, n)` makes the first n, None: all), the table is laid out with
    the first SPEED_PROBES of them, the other tok/s cells '-'; where that layout drops the tok/s
    column, so does the one with every estimate (`shown_headers`: wider cells never bring a column
    back) and nothing else in the text reads them, so it is printed as it is; else every estimate is
    made. The same text either way."""
    rows = [r for r in report.models if r.fits or show_all]
    table = _columns(report)
    columns = [c for c, _ in table]
    laid = None
    if estimates is not None and any(r.pending_speed for r in rows):
        report = estimates(report, SPEED_PROBES)
        cells = _cells(report, show_all, table)
        laid = laid_out(columns, cells, width)  # laid out once, and printed as it is when it may be
        if any(r.pending_speed for r in report.models) and SPEED_COLUMN.header in shown_headers(
            columns, laid
        ):
            report, laid = estimates(report, None), None
            cells = _cells(report, show_all, table)
        rows = [r for r in report.models if r.fits or show_all]
    else:
        cells = _cells(report, show_all, table)
    lines = [render_table(title(report), columns, cells, width, style, laid)]
    lines.append(paragraph(_order_line(report), width))
    if any(r.thin_margin for r in rows):
        lines.append(
            paragraph(
                "thin margin: fits by less than gpusize's error on public start-up logs; the next size up "
                "(more GPUs, a quantized build or a shorter context) is the safe choice.",
                width,
            )
        )
    lines += [paragraph(line, width) for line in _builds_lines(rows)]
    if not show_all:
        lines += [paragraph(line, width) for line in _miss_lines(report)]
    if any(r.replicas and r.replicas > 1 for r in rows):
        lines.append(
            paragraph("TP '1 (x2)': the split is not valid across every GPU; 2 replicas of TP=1.", width)
        )
    lines += [paragraph(f"Note: {n}", width) for n in report.assumptions.notes]
    return "\n".join(lines) + "\n"


def _cells(
    report: WhichReport, show_all: bool, table: list[tuple[Column, Callable[[ModelFit], str]]]
) -> list[list[str]]:
    """The text cells of the rows the table lists (those that fit; every row with --all)."""
    return [[cell(r) for _, cell in table] for r in report.models if r.fits or show_all]


def _order_line(report: WhichReport) -> str:
    """The ordering rule, and how many rows --top left out."""
    a = report.assumptions
    shown = sum(r.fits for r in report.models)
    cut = (
        f" --top {a.top}: the first {shown} of {report.models_fitting} that fit."
        if a.top is not None and shown < report.models_fitting
        else ""
    )
    return f"Order: {a.ordering}.{cut}"


def _builds_lines(rows: list[ModelFit]) -> list[str]:
    """What each quantized build in the list needs to be launched."""
    seen: dict[str, str] = {}
    for r in rows:
        if r.changes and r.weight_dtype and r.weight_dtype not in seen:
            seen[r.weight_dtype] = " ".join(f"{c.flag} {c.value}" for c in r.changes)
    notes = {"int4": "a pre-quantized AWQ/GPTQ checkpoint", "fp8": "quantized while loading"}
    return [
        f"[{dtype}]: its own weights do not fit; runs as an {dtype} build: {flags} ({notes.get(dtype, '')})"
        for dtype, flags in seen.items()
    ]


def _miss_lines(report: WhichReport) -> list[str]:
    """A count of the models that do not fit and the nearest misses, each with why."""
    misses = [r for r in report.models if not r.fits and r.params_total]
    if not misses:
        return []
    near = "; ".join(f"{r.name} ({r.reason})" for r in misses[:NEAREST_MISSES])
    return [f"{len(misses)} catalog models do not fit; the nearest: {near}. --all lists them all."]


def which_markdown(report: WhichReport) -> str:
    """Every model (those that fit first), as Markdown."""
    return sheet_markdown(title(report), [], _columns(report), report.models, assumption_items(report))


def which_csv_columns(report: WhichReport) -> list[ValueColumn]:
    """Every model as plain values (parameters as a count, concurrency as a number, units in the
    headers), the question on every row."""

    def gib(n: int | None) -> float | None:
        return None if n is None else n / GIB

    return [
        ("GPU", lambda r: report.gpu, 0),
        ("GPUs", lambda r: report.num_gpus, 0),
        ("context (tokens)", lambda r: report.context_tokens, 0),
        ("model", lambda r: r.name, 0),
        ("Hub id", lambda r: r.hf_id, 0),
        ("released (YYYY-MM)", lambda r: r.released, 0),
        ("weights dtype", lambda r: r.weight_dtype, 0),
        ("fits", lambda r: r.fits, 0),
        ("thin margin", lambda r: r.thin_margin, 0),
        ("parameters", lambda r: r.params_total or None, 0),
        ("active parameters", lambda r: r.params_active or None, 0),
        ("tensor parallel", lambda r: r.tensor_parallel, 0),
        ("replicas", lambda r: r.replicas, 0),
        ("headroom (GiB/GPU)", lambda r: gib(r.headroom_bytes), 3),
        ("KV cache (tokens)", lambda r: r.kv_cache_capacity_tokens, 0),
        ("concurrency (sequences)", lambda r: r.max_concurrency, 2),
        ("speed (tok/s)", lambda r: r.tokens_per_s, 2),
        ("why not", lambda r: r.reason, 0),
    ]


def which_csv(report: WhichReport) -> str:
    return value_csv(which_csv_columns(report), report.models)
