"""The one config.json reader, for local files and Hub downloads: JSON only (never code), bounded."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gpusize.errors import ConfigError

__all__ = [
    "MAX_CONFIG_BYTES",
    "QUANT_SIDECAR",
    "load_config",
    "needs_sidecar",
    "read_config_json",
    "shown_path",
    "with_sidecar",
]

#: A config.json larger than this is not a config (a user pointed at weights by mistake).
MAX_CONFIG_BYTES = 16 * 1024 * 1024
#: Where NVIDIA ModelOpt 0.29 and before (and many NVFP4/FP8 checkpoints since) keep the quantization,
#: beside config.json; vLLM reads it when config.json has no quantization_config
#: (vllm/transformers_utils/config.py: "ModelOpt 0.29.0 and before saves the quantization config in a
#: separate hf_quant_config.json in the same directory as the model config file").
QUANT_SIDECAR = "hf_quant_config.json"


def load_config(path: Path) -> dict[str, Any]:
    """Read a config.json (or a folder's config.json) as JSON only; never executes code."""
    try:
        file = path / "config.json" if path.is_dir() else path
        if not file.is_file():
            raise ConfigError(f"{shown_path(path)}: no config.json in this folder")
    except OSError as exc:
        raise ConfigError(f"{shown_path(path)}: cannot read ({exc.strerror or exc})") from None
    config = read_config_json(file, shown_path(file))
    sidecar = file.parent / QUANT_SIDECAR
    if file.name == "config.json" and needs_sidecar(config):
        try:
            present = sidecar.is_file()
        except OSError:
            present = False
        if present:
            return with_sidecar(config, read_config_json(sidecar, shown_path(sidecar)))
    return config


def needs_sidecar(config: dict[str, Any]) -> bool:
    """True when config.json states no quantization_config (top level or text_config), so that an
    hf_quant_config.json beside it is the checkpoint's quantization, as vLLM reads it."""
    text = config.get("text_config")
    nested = text.get("quantization_config") if isinstance(text, dict) else None
    return config.get("quantization_config") is None and nested is None


def with_sidecar(config: dict[str, Any], sidecar: dict[str, Any]) -> dict[str, Any]:
    """config.json with its hf_quant_config.json as the quantization_config (vLLM: `config.quantization_config
    = quantization_config`, the file's `producer` and `quantization` objects as they are)."""
    return {**config, "quantization_config": sidecar}


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
    return decode_config(raw, where)


def decode_config(raw: bytes, where: str) -> dict[str, Any]:
    """Decode the bytes of a config.json (or hf_quant_config.json): UTF-8, a non-empty JSON object."""
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
