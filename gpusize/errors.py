"""The error tree. Every error a user can cause is a GpusizeError; the CLI maps them to exit 2."""

from __future__ import annotations


class GpusizeError(Exception):
    """Base of every error gpusize raises on purpose."""

    hint: str | None = None

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.hint = hint


class ConfigError(GpusizeError, ValueError):
    """A model config.json that is malformed, incomplete or of an unsupported architecture."""


class CatalogError(GpusizeError, ValueError):
    """A catalog YAML file that does not match its schema."""


class UsageError(GpusizeError, ValueError):
    """A command-line value that makes no sense (context '32q', zero batch, utilization 1.5)."""


class UnknownNameError(GpusizeError, LookupError):
    """A model or GPU name that is not in the catalog; carries close matches."""

    def __init__(self, kind: str, name: str, suggestions: list[str]) -> None:
        tail = f"; did you mean {' or '.join(suggestions)}?" if suggestions else ""
        super().__init__(f"unknown {kind} '{name}'{tail}")
        self.suggestions = suggestions


class HubError(GpusizeError, OSError):
    """The Hugging Face Hub could not answer: gated, not found, offline, unreachable, rate limited."""
