"""The error tree. Every error a user can cause is a GpusizeError; the CLI maps them to exit 2.

Each leaf also subclasses the builtin a caller would catch (ValueError, LookupError, OSError).
"""

from __future__ import annotations

__all__ = [
    "CatalogError",
    "ConfigError",
    "GpusizeError",
    "HubError",
    "InputError",
    "OutputError",
    "UnknownNameError",
    "UsageError",
]


class GpusizeError(Exception):
    """Base of every error gpusize raises on purpose."""

    hint: str | None = None

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.hint = hint


class InputError(GpusizeError, ValueError):
    """A value that makes no sense: context '32q', zero batch, a size beyond any GPU."""


class UsageError(InputError):
    """A combination of command-line options that cannot be answered (engine flag on another engine)."""


class ConfigError(GpusizeError, ValueError):
    """A model config.json (or GGUF / safetensors metadata) that is malformed, incomplete or unsupported."""


class CatalogError(GpusizeError, ValueError):
    """A catalog YAML file that does not match its schema."""


class UnknownNameError(GpusizeError, LookupError):
    """A model or GPU name that is not in the catalog; carries close matches."""

    def __init__(self, kind: str, name: str, suggestions: list[str]) -> None:
        tail = f"; did you mean {' or '.join(suggestions)}?" if suggestions else ""
        super().__init__(f"unknown {kind} '{name}'{tail}")
        self.suggestions = suggestions


class HubError(GpusizeError, OSError):
    """The Hugging Face Hub could not answer: gated, not found, offline, unreachable, rate limited."""


class OutputError(GpusizeError, OSError):
    """An output file could not be written (read-only folder, full disk, a folder in the way)."""
