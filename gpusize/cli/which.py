"""`gpusize which`: every catalog model that fits given hardware."""

from __future__ import annotations

import functools
from typing import cast

from gpusize.cli import prepare
from gpusize.cli.capture import current
from gpusize.cli.declare import Option, command
from gpusize.cli.emit import answer, only_the_verdict, verdict
from gpusize.cli.options import (
    DEFAULT_CONTEXT,
    CatalogCtx,
    Dtype,
    EngineValues,
    GpuCount,
    GpuName,
    GpusFile,
    Json,
    KvDtype,
    ModelsFile,
    Quiet,
    ReservedMib,
    SheetFormat,
    ShowAll,
    engine_options,
)
from gpusize.cli.output import warn
from gpusize.core.engines import engine
from gpusize.core.workload import KV_DTYPES, Request, refuse_foreign_settings, weight_dtype
from gpusize.errors import UsageError
from gpusize.render.which import render_which, which_csv, which_markdown
from gpusize.reports.which import build_which, which_verdict, with_speed_estimates
from gpusize.serving.which import SORTS, Sort
from gpusize.units import parse_tokens

__all__ = ["which"]

#: The formats besides the table and JSON, each with its rendering of the report.
SHEETS = {"markdown": which_markdown, "csv": which_csv}


@command(short_help="The catalog models that fit given GPUs.")
@engine_options("vllm", "sglang", "trtllm", "llamacpp")
def which(
    gpu: GpuName = None,
    *,
    gpus: GpuCount = 1,
    ctx: CatalogCtx = DEFAULT_CONTEXT,
    dtype: Dtype = "auto",
    kv_dtype: KvDtype = "auto",
    engine_values: EngineValues,
    reserved_mib: ReservedMib = 0,
    show_all: ShowAll = False,
    sort: str = Option(
        "capability",
        "--sort",
        help="capability (newest generation first, then largest; the rule is printed under the table) "
        "or speed (fastest decode first).",
    ),
    top: int | None = Option(
        None, "--top", min=1, max=1000, help="List only the first N models that fit (the misses stay)."
    ),
    models_file: ModelsFile = None,
    gpus_file: GpusFile = None,
    quiet: Quiet = False,
    as_json: Json = False,
    fmt: SheetFormat = None,
) -> None:
    """Every catalog model that fits this hardware (all its GPUs), most capable first, with quantized
    builds where a model's own weights do not fit.

    Example: gpusize which --gpu RTX4090 --gpus 2 --ctx 32k
    """
    if not gpu:
        raise UsageError("which needs --gpu NAME (or --gpu local)")
    count = prepare.gpu_count(gpus) or 1
    cats = prepare.catalogs(models_file, gpus_file)
    where = prepare.targets(gpu, cats, count)
    weight = weight_dtype(dtype)
    settings = prepare.engine_settings(engine_values)
    # once for the query, not as every model's miss: another engine's flag is bad input (exit 2)
    refuse_foreign_settings(settings, engine(settings.name).settings)
    prepare.engine_on_devices(settings.name, where.gpus)
    req = Request(
        context_tokens=parse_tokens(ctx),
        dtype=weight,
        kv_dtype=prepare.choice(kv_dtype, KV_DTYPES, "--kv-dtype"),
        engine=settings,
        reserved_bytes=prepare.reserved_bytes(reserved_mib),
        draft=prepare.draft_model(settings, cats),
    )
    order = cast("Sort", prepare.choice(sort, tuple(SORTS), "--sort"))
    if only_the_verdict(quiet):  # the exit code alone: planned only until a model fits
        fits, notes = which_verdict(cats.parsed_models(), where.gpus[0], count, req)
        for note in notes:
            warn(note)
        verdict(0 if fits else 1, fmt, as_json, tuple(SHEETS))
    # The text table alone (not kept as a value, not ranked by speed) may leave the speed estimates
    # to its rendering, which makes them only where its width shows them (render_which).
    deferred = not as_json and fmt in (None, "table") and order != "speed" and current() is None
    report = build_which(cats.parsed_models(), where.gpus[0], count, req, order, top, not deferred)
    for skipped in report.skipped:
        warn(skipped)  # one unreadable catalog model is skipped, never the whole answer
    answer(
        report,
        0 if report.fits else 1,
        quiet,
        as_json,
        lambda width, style: render_which(report, show_all, width, style, with_speed_estimates),
        fmt,
        {name: functools.partial(sheet, report) for name, sheet in SHEETS.items()},
    )
