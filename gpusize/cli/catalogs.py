"""`gpusize models` and `gpusize gpus`: the catalogs."""

from __future__ import annotations

import typer

from gpusize.cli import prepare
from gpusize.cli.app import app
from gpusize.cli.emit import answer
from gpusize.cli.options import GpusFile, Json, ModelsFile, Quiet
from gpusize.render.catalogs import render_gpus, render_models
from gpusize.reports.catalogs import build_gpus, build_models

__all__ = ["gpus", "models"]


@app.command()
def models(
    query: str | None = typer.Argument(None, help="Filter by a part of the name, alias, Hub id or family."),
    models_file: ModelsFile = None,
    quiet: Quiet = False,
    as_json: Json = False,
) -> None:
    """List the model catalog (bundled + user files), by family and size.

    Example: gpusize models qwen3
    """
    report = build_models(prepare.catalogs(models_file, None).models(), query)
    answer(report, 0, quiet, as_json, lambda width, style: render_models(report, width, style))


@app.command()
def gpus(gpus_file: GpusFile = None, quiet: Quiet = False, as_json: Json = False) -> None:
    """List the GPU catalog (bundled + user files).

    Example: gpusize gpus --json
    """
    report = build_gpus(prepare.catalogs(None, gpus_file).gpus())
    answer(report, 0, quiet, as_json, lambda width, style: render_gpus(report, width, style))
