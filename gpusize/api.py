"""The library: every command as a function returning the report the CLI serialises.

`fit(spec, gpu, context_tokens)` plans a parsed model on one GPU type (the planner, pure). Every
command is also a function of the model and the command's own long options, without dashes:

    report = gpusize.fit("Qwen3-32B", ctx="32k", gpu="H100")         # a FitReport
    report = gpusize.serve("Qwen3-8B", users=64, gpu="L40S", gpus=4)  # a ServeReport
    quote = gpusize.quote("Llama-3.3-70B", ctx="32k", users=50)      # a QuoteReport

The call runs the same option checks and planning as the command line (`cli.invoke`): the report is
the value behind that command's `--json`, and bad input raises the GpusizeError the command would
print (an unknown option or an out-of-range number is a UsageError). A boolean option is given as
True; a repeated one (`models_file`) as a list.
"""

from __future__ import annotations

from typing import Any, overload

from gpusize import __version__
from gpusize.cli.batch import run_rows
from gpusize.cli.invoke import argv_for, report_of
from gpusize.core.engines import engine, prepare
from gpusize.core.gpu import GpuSpec
from gpusize.core.plan import TP_SIZES, Candidate, smallest_fit
from gpusize.core.spec import ModelSpec
from gpusize.core.workload import EngineSettings, Request
from gpusize.reports.batch import BatchReport
from gpusize.sources.batch_file import read_batch

__all__ = ["batch", "curve", "fit", "plan", "quote", "run", "serve", "train", "which"]


def run(command: str, model: str | None = None, **options: Any) -> Any:
    """The report of `gpusize COMMAND MODEL --option value ...`."""
    return report_of(argv_for(command, model, options))


@overload
def fit(
    spec: ModelSpec,
    gpu: GpuSpec,
    context_tokens: int,
    batch: int = 1,
    dtype: str = "auto",
    kv_dtype: str = "auto",
    engine_settings: EngineSettings | None = None,
    sizes: tuple[int, ...] = TP_SIZES,
) -> list[Candidate]: ...


@overload
def fit(spec: str, **options: Any) -> Any: ...


def fit(spec: ModelSpec | str, *args: Any, **options: Any) -> Any:
    """`fit("Qwen3-32B", ctx="32k", gpu="H100")`: the FitReport of `gpusize fit`; or, given a parsed
    ModelSpec and a GpuSpec, the planner's candidates (`plan`)."""
    if isinstance(spec, str):
        if args:
            raise TypeError("fit(model, ...) takes its options by name (ctx=..., gpu=...)")
        return run("fit", spec, **options)
    return plan(spec, *args, **options)


def plan(
    spec: ModelSpec,
    gpu: GpuSpec,
    context_tokens: int,
    batch: int = 1,
    dtype: str = "auto",
    kv_dtype: str = "auto",
    engine_settings: EngineSettings | None = None,
    sizes: tuple[int, ...] = TP_SIZES,
) -> list[Candidate]:
    """Candidates of increasing size on `gpu` up to the first that fits (vLLM unless told otherwise)."""
    settings = engine_settings or EngineSettings()
    request = Request(
        context_tokens=context_tokens, batch=batch, dtype=dtype, kv_dtype=kv_dtype, engine=settings
    )
    model = engine(settings.name)
    return smallest_fit(spec, gpu, prepare(spec, request), model.evaluate, sizes)


def serve(model: str, **options: Any) -> Any:
    """The ServeReport of `gpusize serve MODEL ...` (users=, gpu=, gpus=, ctx=, ...)."""
    return run("serve", model, **options)


def quote(model: str, **options: Any) -> Any:
    """The QuoteReport of `gpusize quote MODEL ...`."""
    return run("quote", model, **options)


def train(model: str, **options: Any) -> Any:
    """The TrainReport of `gpusize train MODEL ...` (method=, seq=, gpu=, ...)."""
    return run("train", model, **options)


def curve(model: str, **options: Any) -> Any:
    """The CurveReport of `gpusize curve MODEL ...`."""
    return run("curve", model, **options)


def which(**options: Any) -> Any:
    """The WhichReport of `gpusize which --gpu ... --gpus ...`."""
    return run("which", None, **options)


def batch(path: str) -> BatchReport:
    """`gpusize batch FILE`: one answer per row of a CSV or JSON Lines file, errors kept as data."""
    return BatchReport(gpusize_version=__version__, command="batch", rows=run_rows(read_batch(path)))
