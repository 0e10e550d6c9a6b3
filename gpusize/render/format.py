"""Number formatting, once, for every table and export."""

from __future__ import annotations

from gpusize.units import gib, human_tokens

__all__ = ["fmt_float", "fmt_gib", "fmt_int", "fmt_range", "fmt_tokens", "human_tokens"]


def fmt_gib(n_bytes: int | None) -> str:
    """Bytes as GiB with one decimal, "-" when unknown."""
    return "-" if n_bytes is None else f"{gib(n_bytes):.1f}"


def fmt_int(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def fmt_float(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def fmt_range(value: float | None, low: float | None, high: float | None, digits: int = 0) -> str:
    """An estimate with its range: "137 (119-185)"; "-" when unknown."""
    if value is None:
        return "-"
    if low is None or high is None:
        return fmt_float(value, digits)
    return f"{fmt_float(value, digits)} ({fmt_float(low, digits)}-{fmt_float(high, digits)})"


def fmt_tokens(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"
