"""`gpusize models` and `gpusize gpus`: the catalogs."""

from __future__ import annotations

from gpusize.cli import prepare
from gpusize.cli.declare import Argument, command
from gpusize.cli.emit import answer
from gpusize.cli.options import Format, GpusFile, Json, ModelsFile, Quiet
from gpusize.render.catalogs import render_gpus, render_models
from gpusize.reports.catalogs import build_gpus, build_models

__all__ = ["gpus", "models"]


@command(short_help="The model catalog, by family and size.")
def models(
    query: str | None = Argument(
        None, help="Filter by a part of the name, alias, Hub id or family.", metavar="QUERY"
    ),
    models_file: ModelsFile = None,
    quiet: Quiet = False,
    as_json: Json = False,
    fmt: Format = None,
) -> None:
    """List the model catalog (bundled + user files), by family and size; exit 1 when QUERY matches none.

    Example: gpusize models qwen3
    """
    cats = prepare.catalogs(models_file, None)
    report = build_models(cats.parsed_models(), query, tuple(str(f) for f in cats.models_files))
    answer(
        report,
        1 if query and not report.models else 0,
        quiet,
        as_json,
        lambda width, style: render_models(report, width, style),
        fmt,
    )


@command(short_help="The GPU catalog, with prices and their dates.")
def gpus(gpus_file: GpusFile = None, quiet: Quiet = False, as_json: Json = False, fmt: Format = None) -> None:
    """List the GPU catalog (bundled + user files).

    Example: gpusize gpus --json
    """
    cats = prepare.catalogs(None, gpus_file)
    report = build_gpus(cats.gpus(), tuple(str(f) for f in cats.gpus_files))
    answer(report, 0, quiet, as_json, lambda width, style: render_gpus(report, width, style), fmt)
