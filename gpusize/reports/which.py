"""The reverse-query report (pure): which catalog models fit this hardware."""

from __future__ import annotations

from dataclasses import field

from gpusize import __version__
from gpusize.core.engines import engine, engine_label
from gpusize.core.gpu import GpuSpec
from gpusize.core.model import CatalogModel, ParsedCatalogModel
from gpusize.core.workload import Request
from gpusize.dataclass import dataclass, replace
from gpusize.reports.common import (
    NOT_IN_SHEETS,
    GpuFile,
    device_notes,
    gpu_file_notes,
    gpu_files,
)
from gpusize.reports.speed_notes import speed_range_notes
from gpusize.serving.which import (
    SORTS,
    CatalogEntry,
    Entry,
    ModelFit,
    Sort,
    any_fits,
    models_that_fit,
    with_speeds,
)

__all__ = ["WhichAssumptions", "WhichReport", "build_which", "which_verdict", "with_speed_estimates"]


@dataclass(frozen=True, kw_only=True)
class WhichAssumptions:
    """What a `which` answer assumed: the engine, the ordering, the layout and the notes."""

    engine: str
    #: capability or speed (--sort)
    sort: str
    ordering: str
    #: --top N: only the first N models that fit are listed (None: all of them).
    top: int | None
    layout: str
    quantized_builds: str
    #: The GPU, when it comes from a user catalog file (none: bundled).
    gpu_files: tuple[GpuFile, ...] = field(metadata=NOT_IN_SHEETS)
    notes: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class WhichReport:
    """The answer of `which`: the catalog models that fit the GPUs, in order (its `--json`)."""

    gpusize_version: str
    command: str
    fits: bool
    gpu: str
    gpu_full_name: str
    num_gpus: int
    context_tokens: int
    #: How many catalog models fit (all of them, also when --top lists fewer).
    models_fitting: int
    models: tuple[ModelFit, ...]
    assumptions: WhichAssumptions
    #: The engine splits layers across GPUs (llama.cpp), not tensors: the text names no TP.
    splits_layers: bool = field(default=False, metadata={"json": False, **NOT_IN_SHEETS})

    @property
    def skipped(self) -> tuple[str, ...]:
        """One line per catalog model whose config could not be read (it is left out, not fatal)."""
        return tuple(note for note in self.assumptions.notes if note.startswith("skipped "))


def _entries(models: tuple[CatalogModel, ...]) -> list[Entry]:
    return list(map(_entry, models))


def _entry(model: CatalogModel) -> Entry:
    """The model as `which` plans it: a parsed one as it is, another with its config to parse."""
    if isinstance(model, ParsedCatalogModel):
        return model
    return CatalogEntry(model.name, model.hf_id, model.config, model.family, model.released)


def _skipped(rows: list[ModelFit]) -> tuple[str, ...]:
    """The notes on the models left out: those whose config could not be read (no parameters)."""
    return tuple(f"skipped {r.name}: {r.reason}" for r in rows if r.params_total == 0)


def which_verdict(
    models: tuple[CatalogModel, ...], gpu: GpuSpec, num_gpus: int, request: Request
) -> tuple[bool, tuple[str, ...]]:
    """`build_which(...).fits` and `.skipped`, all that `which --quiet` prints (its exit code and the
    skipped models' warnings), planning only until a model fits (`serving.which.any_fits`)."""
    fits, unreadable = any_fits(_entries(models), gpu, num_gpus, request)
    return fits, _skipped(unreadable)


def build_which(
    models: tuple[CatalogModel, ...],
    gpu: GpuSpec,
    num_gpus: int,
    request: Request,
    sort: Sort = "capability",
    top: int | None = None,
    speeds: bool = True,
) -> WhichReport:
    """The report; without `speeds` its fitting rows' speed estimates are left to
    `with_speed_estimates` (`serving.which.models_that_fit`)."""
    rows = models_that_fit(_entries(models), gpu, num_gpus, request, sort, speeds)
    notes = _skipped(rows)
    fitting = [r for r in rows if r.fits]
    any_fit = bool(fitting)
    if top is not None:
        rows = fitting[:top] + [r for r in rows if not r.fits]
    builds = (
        "a model whose own weights do not fit is tried as an FP8 build (--quantization fp8, quantized "
        "while loading) and an int4 build (--dtype int4, a pre-quantized AWQ/GPTQ checkpoint)"
        if request.dtype == "auto" and engine(request.engine.name).quantizes_on_load
        else f"weights as asked ({request.dtype})"
    )
    return WhichReport(
        gpusize_version=__version__,
        command="which",
        fits=any_fit,
        gpu=gpu.name,
        gpu_full_name=gpu.full_name,
        num_gpus=num_gpus,
        context_tokens=request.context_tokens,
        models_fitting=len(fitting),
        splits_layers=engine(request.engine.name).splits_layers,
        models=tuple(rows),
        assumptions=WhichAssumptions(
            engine=engine_label(request.engine),
            sort=sort,
            ordering=f"models that fit first, {SORTS[sort].rule}; then the nearest misses",
            top=top,
            layout=f"tensor parallel across all {num_gpus} GPU(s), as `fit --gpus {num_gpus}` plans; where "
            "that split is not valid, the largest valid one as replicas",
            quantized_builds=builds,
            gpu_files=gpu_files([gpu]),
            notes=notes
            + tuple(
                gpu_file_notes([gpu])
                + device_notes([gpu], request.engine)
                + speed_range_notes(r.speed_range for r in rows if r.fits and r.speed_range)
            ),
        ),
    )


def with_speed_estimates(report: WhichReport, first: int | None = None) -> WhichReport:
    """The report with the speed estimates `build_which(..., speeds=False)` left made: all of them,
    or those of its `first` N rows that lack one."""
    done: WhichReport = replace(report, models=tuple(with_speeds(report.models, first)))
    return done
