"""A model as the reports read it (pure values): a catalog entry, and a model as resolved.

`sources/` builds both (sources.catalog from the YAML catalogs, sources.resolve from a path, a
catalog or the Hub); reports take them as values and never import sources (STYLE.md, "Layout").
"""

from __future__ import annotations

from dataclasses import field
from typing import TYPE_CHECKING, Any

from gpusize.core.weights import StoredLayers
from gpusize.dataclass import dataclass

if TYPE_CHECKING:
    from gpusize.core.spec import ModelSpec

__all__ = ["CatalogModel", "ParsedCatalogModel", "ResolvedModel", "normalize"]


def normalize(name: str) -> str:
    """The form a catalog name is looked up by: case, `_` and spaces do not matter."""
    return name.strip().lower().replace("_", "-").replace(" ", "-")


@dataclass(frozen=True)
class CatalogModel:
    """A model of a catalog: the config.json content and where it and its parameter count come from."""

    name: str
    hf_id: str
    source: str
    config: dict[str, Any] = field(compare=False)
    aliases: tuple[str, ...] = ()
    params_published: int | None = None
    params_source: str | None = None
    family: str | None = None
    #: The release month, `YYYY-MM` (first public weights: model card, Hub repo creation or the
    #: vendor's announcement), with `released_source`; None where the catalog has no sourced date.
    released: str | None = None
    released_source: str | None = None

    @property
    def keys(self) -> set[str]:
        return set(map(normalize, (self.name, self.hf_id, *self.aliases)))


@dataclass(frozen=True)
class ParsedCatalogModel(CatalogModel):
    """A catalog model with its config as `core.parse.parse_config` reads it (`Catalogs.parsed_models`:
    stored with the catalog, sources/shipped_specs.py), so a command that plans the whole catalog
    does not parse it; `spec` is None where the config does not parse (the planner says why)."""

    spec: ModelSpec | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class ResolvedModel:
    """A model as found: its id, where it came from, its config, and what its files told us."""

    id: str
    source: str  # catalog | local | hub | gguf
    config: dict[str, Any]
    revision: str | None = None
    #: Exact bytes of the stored tensors (safetensors headers or GGUF tensor table), when known.
    checkpoint_bytes: int | None = None
    checkpoint_dtypes: dict[str, int] | None = None
    notes: tuple[str, ...] = ()
    #: Per-layer bytes of a GGUF file (what llama.cpp offloads), and its file type.
    stored_layers: StoredLayers | None = None
    file_type: str | None = None
    #: The catalog entry's short name, when the model came from a catalog; for a local config.json
    #: (whose file name says nothing), its folder's name.
    catalog_name: str | None = None
    #: What an engine loads for a local model (sources.resolve.engine_path); None for catalog and Hub
    #: models.
    path: str | None = None
    #: The Ollama tag the user named (`qwen3:32b`, sources/ollama_tags.py); `file_type` is then the
    #: GGUF type the tag ships.
    ollama_tag: str | None = None

    @property
    def engine_target(self) -> str:
        """What a launch command names: the local path as given, else the Hub id."""
        return self.path or self.id
