"""Number formatting, once, for every table and export."""

from __future__ import annotations

from gpusize.units import gib, human_tokens

__all__ = ["fmt_float", "fmt_gib", "fmt_int", "fmt_tokens", "human_tokens"]


def fmt_gib(n_bytes: int | None) -> str:
    """Bytes as GiB with one decimal, "-" when unknown."""
    return "-" if n_bytes is None else f"{gib(n_bytes):.1f}"


def fmt_int(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def fmt_float(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def fmt_tokens(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"
