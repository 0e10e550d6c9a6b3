"""Resolve what a user typed as MODEL into a config dict, in a documented order:

1. an existing path: a `.gguf` file, a `config.json`, or a folder holding one (plus its local
   safetensors headers when present);
2. the bundled catalog (short name, alias or Hub id, case-insensitive), unless --revision asks
   for a specific Hub revision;
3. a Hub id (`org/name`) through `gpusize.hub` (cache first when HF_HUB_OFFLINE=1).

Nothing here ever writes to the user's files, and remote code is never executed: configs that
ask for `trust_remote_code` are read as JSON only.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpusize.catalog import find_model
from gpusize.errors import ConfigError, UnknownNameError

#: A config.json larger than this is not a config (a user pointed at weights by mistake).
MAX_CONFIG_BYTES = 16 * 1024 * 1024
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


@dataclass(frozen=True)
class ResolvedModel:
    id: str
    source: str  # "catalog" | "local" | "hub" | "gguf"
    config: dict[str, Any]
    revision: str | None = None
    #: Exact bytes of the stored tensors (safetensors headers or GGUF tensor table), when known.
    checkpoint_bytes: int | None = None
    checkpoint_dtypes: dict[str, int] | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)
    gguf: Any = None  # gguf_file.GgufModel for .gguf files


def resolve_model(reference: str, revision: str | None = None) -> ResolvedModel:
    path = Path(reference).expanduser()
    if path.exists():
        return _local(path)
    if reference.endswith((".json", ".gguf")) or reference.startswith((".", "/", "~")):
        raise ConfigError(f"{reference}: no such file or folder")
    if revision is None:
        try:
            entry = find_model(reference)
            return ResolvedModel(entry.hf_id, "catalog", entry.config)
        except UnknownNameError as exc:
            if not _HUB_ID.match(reference):
                raise
            suggestions = exc.suggestions
    else:
        suggestions = []
    if not _HUB_ID.match(reference):
        raise ConfigError(f"'{reference}' is not a catalog name and not a Hub id (org/name)")
    return _hub(reference, revision, suggestions)


def _local(path: Path) -> ResolvedModel:
    if path.suffix == ".gguf":
        from gpusize.gguf_file import read_gguf

        model = read_gguf(path)
        return ResolvedModel(
            str(path),
            "gguf",
            model.config,
            checkpoint_bytes=model.tensor_bytes,
            checkpoint_dtypes=model.bytes_by_type,
            gguf=model,
            notes=(f"GGUF {model.file_type}: weights are the file's tensor bytes",),
        )
    config = load_config(path)
    folder = path if path.is_dir() else path.parent
    from gpusize import safetensors_local

    if not safetensors_local.weight_files(folder):
        return ResolvedModel(
            str(path), "local", config, notes=("no local safetensors: weights from config arithmetic",)
        )
    dtypes = safetensors_local.read_dtype_elements(folder)
    return ResolvedModel(
        str(path),
        "local",
        config,
        checkpoint_bytes=safetensors_local.weight_bytes_from_dtype_elements(dtypes),
        checkpoint_dtypes=dtypes,
        notes=("weights from the local safetensors headers",),
    )


def _hub(repo_id: str, revision: str | None, suggestions: list[str]) -> ResolvedModel:
    from gpusize import hub, safetensors_local

    with _progress(f"Fetching {repo_id} config.json from the Hub"):
        try:
            model = hub.load_hub_model(repo_id, revision)
        except Exception as exc:
            if suggestions and "no such model" in str(exc):
                exc.args = (f"{exc.args[0]}; catalog names close to it: {', '.join(suggestions)}",)
            raise
    checkpoint = (
        safetensors_local.weight_bytes_from_dtype_elements(model.dtype_elements)
        if model.dtype_elements
        else None
    )
    return ResolvedModel(
        repo_id, "hub", model.config, model.revision, checkpoint, model.dtype_elements, model.notes
    )


class _progress:
    """A spinner on stderr while the network is used; silent when stderr is not a terminal."""

    def __init__(self, message: str) -> None:
        self.message = message
        self.status: Any = None

    def __enter__(self) -> None:
        if sys.stderr.isatty():
            from rich.console import Console

            self.status = Console(stderr=True).status(self.message)
            self.status.__enter__()

    def __exit__(self, *exc: object) -> None:
        if self.status is not None:
            self.status.__exit__(None, None, None)


def load_config(path: Path) -> dict[str, Any]:
    """Read a config.json (or a folder's config.json) as JSON only; never executes code."""
    file = path / "config.json" if path.is_dir() else path
    if not file.is_file():
        raise ConfigError(f"{path}: no config.json in this folder")
    if file.stat().st_size > MAX_CONFIG_BYTES:
        raise ConfigError(f"{file}: too large to be a config.json")
    return read_config_json(file, str(file))


def read_config_json(file: Path, where: str) -> dict[str, Any]:
    """The one config.json reader (local files and Hub downloads): JSON only, a non-empty object."""
    try:
        data = json.loads(file.read_bytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{where}: not valid JSON ({exc})".splitlines()[0]) from None
    except OSError as exc:
        raise ConfigError(f"{where}: cannot read ({exc.strerror})") from None
    if not isinstance(data, dict) or not data:
        raise ConfigError(f"{where}: expected a non-empty JSON object")
    return data
