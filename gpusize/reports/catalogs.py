"""Catalog listings (pure): the models and GPUs gpusize knows, for `gpusize models` and `gpusize gpus`."""

from __future__ import annotations

from gpusize import __version__
from gpusize.core.gpu import GpuSpec
from gpusize.core.model import ParsedCatalogModel
from gpusize.dataclass import dataclass
from gpusize.reports.common import price_note

__all__ = [
    "CatalogAssumptions",
    "GpusReport",
    "ModelRow",
    "ModelsReport",
    "build_gpus",
    "build_models",
]


@dataclass(frozen=True, kw_only=True)
class ModelRow:
    """One model of `models`: its names, family and parameter counts."""

    name: str
    hf_id: str
    aliases: tuple[str, ...]
    family: str
    model_type: str
    params_total: int | None
    params_active: int | None
    params_published: int | None
    max_context_tokens: int | None
    source: str


@dataclass(frozen=True, kw_only=True)
class CatalogAssumptions:
    """Where a listing comes from and how to read it."""

    #: "bundled" and the user's catalog files (--models-file / --gpus-file, GPUSIZE_MODELS / GPUSIZE_GPUS).
    catalogs: tuple[str, ...]
    order: str
    #: What the figures are and where they come from, in plain words.
    figures: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class ModelsReport:
    """The answer of `models`: the catalog's models matching the query (its `--json`)."""

    gpusize_version: str
    command: str
    query: str | None
    models: tuple[ModelRow, ...]
    assumptions: CatalogAssumptions


@dataclass(frozen=True, kw_only=True)
class GpusReport:
    """The answer of `gpus`: the GPUs of the catalogs (its `--json`)."""

    gpusize_version: str
    command: str
    gpus: tuple[GpuSpec, ...]
    assumptions: CatalogAssumptions


def _row(m: ParsedCatalogModel) -> ModelRow:
    """The listing's row of one model; its counts from the spec stored with the catalog (None where the
    config does not parse: `fit` on it says why)."""
    spec = m.spec
    total = active = ctx = None
    if spec is not None:
        total, active, ctx = spec.params.total, spec.params.active, spec.max_context
    model_type = m.config.get("model_type")
    return ModelRow(
        name=m.name,
        hf_id=m.hf_id,
        aliases=m.aliases,
        family=m.family or m.name.split("-")[0],
        model_type=model_type if isinstance(model_type, str) else "?",
        params_total=total,
        params_active=active,
        params_published=m.params_published,
        max_context_tokens=ctx,
        source=m.source,
    )


def build_models(
    models: tuple[ParsedCatalogModel, ...], query: str | None, user_files: tuple[str, ...] = ()
) -> ModelsReport:
    """The catalog models matching `query` (a substring of name, alias, Hub id or family), by family then
    size."""
    wanted = (query or "").lower()
    rows = [
        _row(m)
        for m in models
        if not wanted or wanted in " ".join((m.name, m.hf_id, *m.aliases, m.family or "")).lower()
    ]
    rows.sort(key=lambda r: (r.family.lower(), r.params_total or 0, r.name.lower()))
    return ModelsReport(
        gpusize_version=__version__,
        command="models",
        query=query,
        models=tuple(rows),
        assumptions=CatalogAssumptions(
            catalogs=("bundled", *user_files),
            order="by family, then total parameters, then name",
            figures=(
                "params_total and params_active are counted from each model's config, tensor by tensor "
                "(params_active: what one token reads)",
                "params_published is the count the model's publisher states, where one exists",
                "max_context_tokens is the longest context the config allows",
            ),
        ),
    )


def build_gpus(gpus: tuple[GpuSpec, ...], user_files: tuple[str, ...] = ()) -> GpusReport:
    return GpusReport(
        gpusize_version=__version__,
        command="gpus",
        gpus=gpus,
        assumptions=CatalogAssumptions(
            catalogs=("bundled", *user_files),
            order="as in the catalog files",
            figures=(
                f"price_usd_per_hour is per GPU: {price_note(gpus)}; each GPU's price_date and "
                "price_source say where it comes from",
                "visible_bytes is the memory the runtime (CUDA or ROCm) reports: measured where "
                "visible_is_measured, else the reported total less the largest reserve measured for the "
                "GPU's memory class",
            ),
        ),
    )
