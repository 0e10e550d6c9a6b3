"""`gpusize curve`: maximum concurrent sequences against context for one plan."""

from __future__ import annotations

import typer

from gpusize.cli import prepare
from gpusize.cli.app import app
from gpusize.cli.emit import answer
from gpusize.cli.options import (
    Dtype,
    Engine,
    GpuCount,
    GpuName,
    GpusFile,
    Json,
    KvDtype,
    MaxNumBatchedTokens,
    MaxNumSeqs,
    MemFraction,
    Model,
    ModelsFile,
    Quiet,
    Revision,
    Utilization,
)
from gpusize.cli.output import write_file
from gpusize.render.curve import render_curve
from gpusize.render.export import text_svg
from gpusize.render.text import Style
from gpusize.reports.curve import build_curve

__all__ = ["curve"]


@app.command()
def curve(
    model: Model,
    gpu: GpuName = "H100",
    gpus: GpuCount = 1,
    dtype: Dtype = "auto",
    kv_dtype: KvDtype = "auto",
    engine: Engine = None,
    utilization: Utilization = None,
    max_num_seqs: MaxNumSeqs = None,
    max_num_batched_tokens: MaxNumBatchedTokens = None,
    mem_fraction: MemFraction = None,
    revision: Revision = None,
    models_file: ModelsFile = None,
    gpus_file: GpusFile = None,
    svg: str | None = typer.Option(None, "--svg", help="Also save the rendering as an SVG file."),
    quiet: Quiet = False,
    as_json: Json = False,
) -> None:
    """Maximum concurrent sequences against context length for one plan.

    Example: gpusize curve Llama-3.1-8B --gpu H100 --gpus 1
    """
    count = prepare.gpu_count(gpus) or 1
    cats = prepare.catalogs(models_file, gpus_file)
    resolved, spec = prepare.load_model(model, revision, False, cats)
    settings = prepare.engine_settings(
        engine, resolved, utilization, max_num_seqs, max_num_batched_tokens, mem_fraction
    )
    work = prepare.workload(spec, prepare.request(resolved, "1k", settings, 1, dtype, kv_dtype))
    where = prepare.targets(gpu, cats, count)
    report = build_curve(resolved, spec, where.gpus[0], count, work)
    if svg:
        write_file(svg, text_svg(render_curve(report, 100, Style()), "gpusize curve"))
    answer(
        report,
        0 if report.fits else 1,
        quiet,
        as_json,
        lambda width, style: render_curve(report, width, style),
    )
