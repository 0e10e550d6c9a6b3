"""The reverse-query report (pure): which catalog models fit this hardware."""

from __future__ import annotations

from dataclasses import dataclass

from gpusize import __version__
from gpusize.core.engines import engine_label
from gpusize.core.gpu import GpuSpec
from gpusize.core.workload import Request
from gpusize.serving.which import ModelFit, models_that_fit
from gpusize.sources.catalog import CatalogModel

__all__ = ["WhichAssumptions", "WhichReport", "build_which"]


@dataclass(frozen=True, kw_only=True)
class WhichAssumptions:
    engine: str
    ordering: str
    notes: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class WhichReport:
    gpusize_version: str
    command: str
    fits: bool
    gpu: str
    gpu_full_name: str
    num_gpus: int
    context_tokens: int
    models: tuple[ModelFit, ...]
    assumptions: WhichAssumptions

    @property
    def skipped(self) -> tuple[str, ...]:
        """One line per catalog model whose config could not be read (it is left out, not fatal)."""
        return tuple(note for note in self.assumptions.notes if note.startswith("skipped "))


def build_which(
    models: tuple[CatalogModel, ...], gpu: GpuSpec, num_gpus: int, request: Request
) -> WhichReport:
    rows = models_that_fit([(m.name, m.hf_id, m.config) for m in models], gpu, num_gpus, request)
    unreadable = [r for r in rows if r.params_total == 0]
    notes = tuple(f"skipped {r.name}: {r.reason}" for r in unreadable)
    return WhichReport(
        gpusize_version=__version__,
        command="which",
        fits=any(r.fits for r in rows),
        gpu=gpu.name,
        gpu_full_name=gpu.full_name,
        num_gpus=num_gpus,
        context_tokens=request.context_tokens,
        models=tuple(rows),
        assumptions=WhichAssumptions(
            engine=engine_label(request.engine),
            ordering="models that fit first, fastest single-sequence decode first (estimate)",
            notes=notes,
        ),
    )
