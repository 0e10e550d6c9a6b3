"""Resolve what a user typed as MODEL into a config dict: a local path, then a catalog name.

Resolution order: an existing path (a config.json, or a folder holding one) -> the bundled
catalog (short name, alias or Hub id, case-insensitive). A Hub id that is not in the catalog is a
clear error until Hub support lands. Nothing here ever writes to the user's files.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpusize.catalog import find_model
from gpusize.errors import ConfigError, UnknownNameError

#: A config.json larger than this is not a config (a user pointed at weights by mistake).
MAX_CONFIG_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True)
class ResolvedModel:
    id: str
    source: str  # "catalog" | "local"
    config: dict[str, Any]


def resolve_model(reference: str) -> ResolvedModel:
    path = Path(reference).expanduser()
    if path.exists():
        return ResolvedModel(str(path), "local", load_config(path))
    if reference.endswith(".json") or reference.startswith((".", "/", "~")):
        raise ConfigError(f"{reference}: no such file or folder")
    try:
        entry = find_model(reference)
    except UnknownNameError as exc:
        if "/" in reference:
            exc.hint = "Hub ids outside the catalog are not supported yet; pass a local config.json or folder"
        raise
    return ResolvedModel(entry.hf_id, "catalog", entry.config)


def load_config(path: Path) -> dict[str, Any]:
    """Read a config.json (or a folder's config.json) as JSON only; never executes code."""
    file = path / "config.json" if path.is_dir() else path
    if not file.is_file():
        raise ConfigError(f"{path}: no config.json in this folder")
    if file.stat().st_size > MAX_CONFIG_BYTES:
        raise ConfigError(f"{file}: too large to be a config.json")
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{file}: not valid JSON ({exc})".splitlines()[0]) from None
    except OSError as exc:
        raise ConfigError(f"{file}: cannot read ({exc.strerror})") from None
    if not isinstance(data, dict) or not data:
        raise ConfigError(f"{file}: expected a non-empty JSON object")
    return data
