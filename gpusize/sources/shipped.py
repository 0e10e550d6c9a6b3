"""The bundled catalogs shipped validated: data/gpus.validated.json and data/models.validated.json.

Each holds the rows `sources.schema` validates from data/<kind>.yaml, in the cache's format
(`sources.catalog_cache`: format, kind, BLAKE2b-256 digest of the YAML bytes, field names, one list of
values per row; here one row per line, so a diff shows the entries that changed). A run reads the
bundled catalog from it and never parses the bundled YAML or imports pydantic, whatever the state of
the cache folder (a first run, a read-only home, a container, a CI job). It is used only when its
digest is that of the YAML beside it: a checkout whose YAML was edited without regenerating falls
back to validating (and the cache). tests/sources/test_shipped.py checks that both files are what
validating the YAML yields; the wheel carries them (pyproject.toml force-include).

Regenerate after editing data/*.yaml: `python -m gpusize.sources.shipped_build`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gpusize.sources import catalog_cache

__all__ = ["KINDS", "rows", "shipped_path", "text"]

#: The bundled catalogs shipped validated.
KINDS = ("gpus", "models")


def shipped_path(yaml_path: Path) -> Path:
    """data/<kind>.validated.json beside data/<kind>.yaml."""
    return yaml_path.with_suffix(".validated.json")


def rows(
    yaml_path: Path, kind: str, digest: str, types: catalog_cache.RowTypes
) -> list[dict[str, Any]] | None:
    """The shipped validated rows of a bundled catalog whose YAML bytes have `digest`, or None (no
    such file, or it was made from other bytes or for other fields)."""
    return catalog_cache.read(shipped_path(yaml_path), kind, digest, types, check_rows=False)


def text(kind: str, digest: str, validated: list[dict[str, Any]], types: catalog_cache.RowTypes) -> str:
    """The shipped file's content: the cache format, one row per line."""
    names = list(types)
    head = {"format": catalog_cache.CACHE_FORMAT, "kind": kind, "digest": digest, "fields": names}
    body = ",\n".join(
        json.dumps([row[n] for n in names], separators=(",", ":"), allow_nan=False, ensure_ascii=False)
        for row in validated
    )
    return json.dumps(head, separators=(",", ":"))[:-1] + ',"rows":[\n' + body + "\n]}\n"
