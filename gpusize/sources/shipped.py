"""The bundled catalogs shipped validated: data/gpus.validated.json and data/models.validated.json.

Each holds the rows `sources.schema` validates from data/<kind>.yaml, in the cache's format
(`sources.catalog_cache`: format, kind, BLAKE2b-256 digest of the YAML bytes, field names, one list of
values per row; here one row per line, so a diff shows the entries that changed). A run reads the
bundled catalog from it and never parses the bundled YAML or imports pydantic, whatever the state of
the cache folder (a first run, a read-only home, a container, a CI job). It is used only when its
digest is that of the YAML beside it: a checkout whose YAML was edited without regenerating falls
back to validating (and the cache). tests/sources/test_shipped.py checks that both files are what
validating the YAML yields; the wheel carries them (pyproject.toml force-include).

The header also holds the catalog's name index (`index`: each name, alias and Hub id without its
dashes, as `sources.catalog` looks names up, -> the row it finds), so that a command naming one
bundled model or GPU decodes that row alone (`line`), not the whole catalog (43 M instructions of
`fit`'s start-up for the models, bench/RESULTS.md).

Regenerate after editing data/*.yaml: `python -m gpusize.sources.shipped_build`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, NamedTuple

from gpusize.sources import catalog_cache

__all__ = ["KINDS", "Indexed", "indexed", "rows", "shipped_path", "text"]

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


def text(
    kind: str,
    digest: str,
    validated: list[dict[str, Any]],
    types: catalog_cache.RowTypes,
    index: dict[str, int],
) -> str:
    """The shipped file's content: the cache format with the name index in its header (the first
    line), one row per line."""
    names = list(types)
    head = {
        "format": catalog_cache.CACHE_FORMAT,
        "kind": kind,
        "digest": digest,
        "fields": names,
        "index": index,
    }
    body = ",\n".join(
        json.dumps([row[n] for n in names], separators=(",", ":"), allow_nan=False, ensure_ascii=False)
        for row in validated
    )
    return json.dumps(head, separators=(",", ":"))[:-1] + ',"rows":[\n' + body + "\n]}\n"


#: How the header line ends: the rows follow, one a line.
_ROWS_OPEN = b',"rows":['


class Indexed(NamedTuple):
    """A shipped file read for lookups: its name index (`names`) and its row lines (still JSON text)."""

    names: dict[str, int]
    fields: list[str]
    lines: list[bytes]

    def row(self, number: int) -> dict[str, Any]:
        """Row `number` as a dict of its fields, decoding that line alone."""
        values = json.loads(self.lines[number].rstrip(b","))
        return dict(zip(self.fields, values, strict=True))


def indexed(yaml_path: Path, kind: str, digest: str, types: catalog_cache.RowTypes) -> Indexed | None:
    """The shipped file beside `yaml_path` ready for one-row lookups, or None (no such file, other
    bytes or fields, no index): the caller then reads the whole catalog."""
    try:
        raw = shipped_path(yaml_path).read_bytes()
    except OSError:
        return None
    first, _, rest = raw.partition(b"\n")
    if not first.endswith(_ROWS_OPEN):
        return None
    try:
        head = json.loads(first[: -len(_ROWS_OPEN)] + b"}")
    except ValueError:
        return None
    names = list(types)
    expected = [catalog_cache.CACHE_FORMAT, kind, digest, names]
    if (
        not isinstance(head, dict)
        or [head.get(k) for k in ("format", "kind", "digest", "fields")] != expected
    ):
        return None
    index = head.get("index")
    lines = rest.split(b"\n")[:-2]  # the last two: "]}" and the empty string after the final newline
    if not isinstance(index, dict) or any(
        not isinstance(n, int) or not 0 <= n < len(lines) for n in index.values()
    ):
        return None
    return Indexed(index, names, lines)
