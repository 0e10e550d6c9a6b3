"""`gpusize batch`: many configurations in one run, one answer per row, errors kept as data."""

from __future__ import annotations

import gc
from dataclasses import replace

from gpusize import __version__
from gpusize.cli import prepare
from gpusize.cli.declare import Argument, Option, command
from gpusize.cli.emit import answer
from gpusize.cli.invoke import argv_for, run_captured
from gpusize.cli.options import Json, Quiet
from gpusize.errors import GpusizeError
from gpusize.render.batch import batch_csv, batch_jsonl, headline_of, render_batch
from gpusize.render.text import safe
from gpusize.reports.batch import BatchReport, BatchRowAnswer
from gpusize.sources.batch_file import BatchRow, read_batch

__all__ = ["batch", "run_rows"]


@command(short_help="Answer many configurations from a CSV or JSON Lines file.")
def batch(
    file: str = Argument(
        ...,
        metavar="FILE",
        help="CSV with a header, or JSON Lines (one object a line); '-' reads standard input. Columns: "
        "command (default fit), model, and long flag names without dashes (gpu, gpus, ctx, engine, "
        "engine_version, users, ...).",
    ),
    quiet: Quiet = False,
    as_json: Json = False,
    fmt: str | None = Option(
        None, "--format", help="table (default), csv, jsonl (one object a row) or json (one object)."
    ),
) -> None:
    """Run one gpusize command per row and answer each, in input order; a row that cannot be answered
    is reported with its error and the batch goes on. Exit 0 only when every row answered yes; else the
    most severe row status (3 internal, 2 could not answer, 1 does not fit).

    Example: gpusize batch quotes.csv --format csv
    """
    report = BatchReport(gpusize_version=__version__, command="batch", rows=run_rows(read_batch(file)))
    answer(
        report,
        report.exit_code,
        quiet,
        as_json,
        lambda width, style: render_batch(report, width, style),
        fmt,
        {"csv": lambda: batch_csv(report), "jsonl": lambda: batch_jsonl(report)},
    )


def run_rows(rows: list[BatchRow]) -> tuple[BatchRowAnswer, ...]:
    """Each row run as its own command line, with catalogs and models read once for all of them, and
    a row that repeats an earlier row's command line given that row's answer (the answer is a pure
    function of the command line once catalogs and models are read)."""
    answered: dict[tuple[str, ...], BatchRowAnswer] = {}
    with prepare.reuse():
        return tuple(_kept(_run_row(row, answered)) for row in rows)


def _kept(found: BatchRowAnswer) -> BatchRowAnswer:
    """`found`, with everything alive now left out of later garbage collections (`gc.freeze`, as
    sources.catalog does for a large catalog): the answers live until the batch is written, and each
    full collection walked every one kept so far (10,000 distinct rows: ~0.7 s of ~5 s in full
    collections that found a few hundred objects; bench/RESULTS.md, batch). A row's own short-lived
    cycles are still collected while it runs."""
    gc.freeze()
    return found


def _run_row(row: BatchRow, answered: dict[tuple[str, ...], BatchRowAnswer]) -> BatchRowAnswer:
    values = dict(row.values)
    command = str(values.pop("command", None) or "fit").strip().lower()
    model = values.pop("model", None)
    model_text = None if model in (None, "") else str(model)
    if row.problem is not None:
        return _failed(row.number, command, model_text, (), row.problem)
    try:
        if command == "batch":
            raise GpusizeError("a batch row cannot run another batch")
        argv = argv_for(command, model_text, values)
    except GpusizeError as exc:
        return _failed(row.number, command, model_text, (), str(exc))
    earlier = answered.get(tuple(argv))
    if earlier is not None:
        return replace(earlier, line=row.number)
    answered[tuple(argv)] = found = _answer(row.number, command, model_text, argv)
    return found


def _answer(line: int, command: str, model_text: str | None, argv: list[str]) -> BatchRowAnswer:
    got = run_captured(argv)
    if got.report is None:
        return _failed(line, command, model_text, argv, got.error or "no answer", got.code, got.warnings)
    headline = headline_of(got.report, got.text)
    return BatchRowAnswer(
        line=line,
        command=command,
        model=model_text,
        argv=tuple(argv),
        exit_code=got.code,
        answer=headline,
        error=None,
        warnings=tuple(got.warnings),
        result=got.report,
    )


def _failed(
    line: int,
    command: str,
    model: str | None,
    argv: tuple[str, ...] | list[str],
    error: str,
    code: int = 2,
    warnings: list[str] | tuple[str, ...] = (),
) -> BatchRowAnswer:
    message = safe(error, limit=1000)
    return BatchRowAnswer(
        line=line,
        command=command,
        model=model,
        argv=tuple(argv),
        exit_code=code if code else 2,
        answer=message,
        error=message,
        warnings=tuple(warnings),
        result=None,
    )
