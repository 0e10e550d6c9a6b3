"""Typed, bounded reads of config fields: the one validation layer between a raw dict (config.json,
GGUF metadata, remote safetensors metadata) and a spec (pure).

Every read checks the type (a bool is not an int, 8.7 experts is not 8, NaN is not a number), the
sign and a generous physical bound, and a failure names the file, the field and the value (echoed
values are capped, so a 50 MB string gives a one-line error). Bounds are far beyond any released
model, so they only stop nonsense (a 300-byte config with a million layers) from costing minutes.
"""

from __future__ import annotations

import math
from typing import Any

from gpusize.dataclass import dataclass
from gpusize.errors import ConfigError

__all__ = ["BOUNDS", "ECHO_CHARS", "Fields", "echo"]

#: Characters of a bad value echoed in an error message.
ECHO_CHARS = 60

#: Largest value accepted per kind of field, each far beyond the largest released model's
#: (Llama-3.1-405B: 126 layers, hidden 16,384, MLP 53,248; DeepSeek-V3: 128 heads of 192, attention
#: 24,576 wide; Kimi-K2: 384 experts; Gemma 3: 262,208 vocabulary; Llama-4-Scout: 10M positions):
#: 8x for layers (the training replay walks every layer's tensors; 2,048 layers took 28 s), 10x or
#: more for the rest. "attention" bounds heads x head_dim, the width of the query projection.
BOUNDS: dict[str, int] = {
    "layers": 1_024,
    "attention": 1 << 18,
    "width": 1 << 20,
    "heads": 8_192,
    "experts": 65_536,
    "vocab": 1 << 24,
    "positions": 1 << 30,
    "small": 1 << 16,
}


def echo(value: Any) -> str:
    """A value as it may appear in a one-line message: repr, capped, no control characters."""
    text = repr(value) if not isinstance(value, int) or abs(value) < 10**30 else f"{str(value)[:12]}...(huge)"
    text = "".join(ch if ch.isprintable() else "?" for ch in text)
    return text if len(text) <= ECHO_CHARS else text[: ECHO_CHARS - 3] + "..."


@dataclass(frozen=True)
class Fields:
    """A dict of raw fields from `where` (a file name for messages), read with checks."""

    raw: dict[str, Any]
    where: str = "config.json"

    def first(self, *keys: str) -> tuple[str, Any]:
        """(key, value) of the first key present with a non-null value; (keys[0], None) otherwise."""
        for key in keys:
            if key in self.raw and self.raw[key] is not None:
                return key, self.raw[key]
        return keys[0], None

    def has(self, *keys: str) -> bool:
        return self.first(*keys)[1] is not None

    def fail(self, key: str, problem: str, value: Any = None) -> ConfigError:
        shown = f", got {echo(value)}" if value is not None else ""
        return ConfigError(f"{self.where}: '{key}' {problem}{shown}")

    def integer(self, *keys: str, kind: str, default: int | None = None, minimum: int = 1) -> int:
        """An integer >= minimum and <= BOUNDS[kind] (an integral float such as 8.0 is accepted)."""
        key, value = self.first(*keys)
        if value is None:
            if default is None:
                raise ConfigError(f"{self.where}: missing '{keys[0]}'")
            return default
        number = _as_int(value)
        if number is None:
            raise self.fail(key, "must be a whole number", value)
        if number < minimum:
            raise self.fail(key, f"must be at least {minimum}", value)
        if number > BOUNDS[kind]:
            raise self.fail(key, f"must be at most {BOUNDS[kind]:,}", value)
        return number

    def optional_integer(self, *keys: str, kind: str, minimum: int = 1) -> int | None:
        return self.integer(*keys, kind=kind, minimum=minimum) if self.has(*keys) else None

    def number(self, *keys: str, default: float | None = None, positive: bool = True) -> float:
        """A finite real number (positive unless told), no bools, no strings."""
        key, value = self.first(*keys)
        if value is None:
            if default is None:
                raise ConfigError(f"{self.where}: missing '{keys[0]}'")
            return default
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise self.fail(key, "must be a finite number", value)
        if positive and value <= 0:
            raise self.fail(key, "must be greater than zero", value)
        return float(value)

    def boolean(self, *keys: str, default: bool) -> bool:
        key, value = self.first(*keys)
        if value is None:
            return default
        if isinstance(value, bool):
            return value
        if isinstance(value, int) and value in (0, 1):
            return bool(value)
        raise self.fail(key, "must be true or false", value)

    def string(self, *keys: str, default: str | None = None) -> str | None:
        key, value = self.first(*keys)
        if value is None:
            return default
        if not isinstance(value, str):
            raise self.fail(key, "must be a string", value)
        if len(value) > 200:
            raise self.fail(key, "is too long to be a name", value)
        return value

    def mapping(self, *keys: str) -> dict[str, Any] | None:
        key, value = self.first(*keys)
        if value is None:
            return None
        if not isinstance(value, dict):
            raise self.fail(key, "must be an object", value)
        return value

    def int_list(
        self, *keys: str, kind: str, length: int | None = None, minimum: int = 0
    ) -> list[int] | None:
        """A list of bounded integers (optionally of an exact length)."""
        key, value = self.first(*keys)
        if value is None:
            return None
        if not isinstance(value, list):
            raise self.fail(key, "must be a list", value)
        if length is not None and len(value) != length:
            raise self.fail(key, f"must list {length} values, one per layer; it has {len(value)}")
        if len(value) > BOUNDS["layers"] * 64:
            raise self.fail(key, "is too long")
        out = []
        for item in value:
            number = _as_int(item)
            if number is None or number < minimum or number > BOUNDS[kind]:
                raise self.fail(key, f"must hold whole numbers from {minimum} to {BOUNDS[kind]:,}", item)
            out.append(number)
        return out

    def sub(self, key: str) -> Fields:
        """A nested object as Fields, named `parent.key` in messages."""
        value = self.mapping(key)
        return Fields(value or {}, f"{self.where}: {key}" if value is not None else self.where)


def _as_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    return None
