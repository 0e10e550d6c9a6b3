"""The one config.json reader, for local files and Hub downloads: JSON only (never code), bounded."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gpusize.errors import ConfigError

__all__ = ["MAX_CONFIG_BYTES", "load_config", "read_config_json", "shown_path"]

#: A config.json larger than this is not a config (a user pointed at weights by mistake).
MAX_CONFIG_BYTES = 16 * 1024 * 1024


def load_config(path: Path) -> dict[str, Any]:
    """Read a config.json (or a folder's config.json) as JSON only; never executes code."""
    try:
        file = path / "config.json" if path.is_dir() else path
        if not file.is_file():
            raise ConfigError(f"{shown_path(path)}: no config.json in this folder")
    except OSError as exc:
        raise ConfigError(f"{shown_path(path)}: cannot read ({exc.strerror or exc})") from None
    return read_config_json(file, shown_path(file))


def read_config_json(file: Path, where: str) -> dict[str, Any]:
    """Read and decode one config.json: at most MAX_CONFIG_BYTES, UTF-8, a non-empty JSON object."""
    try:
        with file.open("rb") as handle:
            raw = handle.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"{where}: cannot read ({exc.strerror or exc})") from None
    if len(raw) > MAX_CONFIG_BYTES:
        raise ConfigError(
            f"{where}: larger than {MAX_CONFIG_BYTES // (1 << 20)} MiB, too large to be a config.json"
        )
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise ConfigError(f"{where}: not UTF-8 text, so not a config.json") from None
    except RecursionError:
        raise ConfigError(f"{where}: JSON nested too deeply to be a config") from None
    except ValueError as exc:  # JSONDecodeError, and integers beyond Python's digit limit
        raise ConfigError(f"{where}: not valid JSON ({str(exc)[:120]})".splitlines()[0]) from None
    if not isinstance(data, dict) or not data:
        raise ConfigError(f"{where}: expected a non-empty JSON object")
    return data


def shown_path(path: Path | str) -> str:
    """A path as it may appear in a one-line message (a 100 KB name is cut); a str is shown as typed."""
    text = str(path)
    text = "".join(ch if ch.isprintable() else "?" for ch in text)
    return text if len(text) <= 200 else text[:100] + "..." + text[-60:]
