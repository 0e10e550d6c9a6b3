"""Units: bytes per dtype, GiB conversions and parsing of sizes such as '32k'.

Parsing raises InputError (a ValueError), never a CLI type: the CLI maps it to exit 2.
"""

from __future__ import annotations

import re

from gpusize.errors import InputError

__all__ = [
    "DTYPE_ALIASES",
    "DTYPE_BYTES",
    "GIB",
    "MAX_TOKENS",
    "MIB",
    "canonical_dtype",
    "gib",
    "human_tokens",
    "parse_budget",
    "parse_count",
    "parse_tokens",
]

GIB = 1 << 30
MIB = 1 << 20
#: Largest token count gpusize accepts anywhere (2^30, about a billion): ten times beyond the longest
#: context any released model supports (10M, Llama-4-Scout), and small enough that every derived byte
#: count stays an exact integer.
MAX_TOKENS = 1 << 30

#: Bytes per element of each storage dtype gpusize knows. int4/fp4 are half a byte; their
#: per-group scales are added by the weight formats in `core.weights`, not here.
DTYPE_BYTES: dict[str, float] = {
    "fp32": 4.0,
    "bf16": 2.0,
    "fp16": 2.0,
    "fp8": 1.0,
    "int8": 1.0,
    "int4": 0.5,
    "fp4": 0.5,
}

#: Spellings found in config.json (`torch_dtype`, `dtype`) and on the command line.
DTYPE_ALIASES: dict[str, str] = {
    "float32": "fp32",
    "float": "fp32",
    "fp32": "fp32",
    "bfloat16": "bf16",
    "bf16": "bf16",
    "float16": "fp16",
    "half": "fp16",
    "fp16": "fp16",
    "float8": "fp8",
    "fp8": "fp8",
    "fp8_e4m3": "fp8",
    "int8": "int8",
    "int4": "int4",
    "fp4": "fp4",
}

_SIZE = re.compile(r"^\s*(\d{1,15}(?:\.\d{1,15})?)\s*([kKmM]?)\s*$")
_SUFFIX = {"": 1, "k": 1024, "m": 1024 * 1024}


def _scaled(number: str, unit: int) -> tuple[int, bool]:
    """(number x unit rounded down, exact?) in integer arithmetic: '0.5' x 1024 = 512 exactly, where a
    float would make 0.99999999999999999999 x 1024 a whole 1024."""
    whole, _, frac = number.partition(".")
    value, scale = int(whole + frac) * unit, 10 ** len(frac)
    return value // scale, value % scale == 0


def canonical_dtype(name: str) -> str:
    """'bfloat16' -> 'bf16'; raises InputError for a dtype gpusize does not know."""
    key = name.strip().lower().removeprefix("torch.")
    if key not in DTYPE_ALIASES:
        known = ", ".join(sorted(set(DTYPE_ALIASES.values())))
        raise InputError(f"unknown dtype '{name[:40]}'; use one of {known}")
    return DTYPE_ALIASES[key]


def parse_tokens(text: str, what: str = "context") -> int:
    """Parse '32768', '32k', '32K', '128k', '1m' (k = 1024, m = 1024²) into a positive int <= MAX_TOKENS.

    Decimal arithmetic: '0.5k' is 512 exactly, '0.99999999999999999999k' is not a whole number."""
    shown = str(text)[:40]
    match = _SIZE.match(str(text))
    if not match:
        raise InputError(f"invalid {what} '{shown}': use a number such as 8192, 32k or 1m")
    value, exact = _scaled(match.group(1), _SUFFIX[match.group(2).lower()])
    if not exact:
        raise InputError(f"invalid {what} '{shown}': not a whole number of tokens")
    if value <= 0:
        raise InputError(f"invalid {what} '{shown}': must be greater than zero")
    if value > MAX_TOKENS:
        raise InputError(f"invalid {what} '{shown}': at most {MAX_TOKENS:,} tokens")
    return int(value)


def parse_count(value: int, what: str, largest: int = 1 << 20) -> int:
    """A positive whole count given on the command line (--batch, --users), bounded."""
    if value <= 0:
        raise InputError(f"invalid {what} {value}: must be greater than zero")
    if value > largest:
        raise InputError(f"invalid {what} {value}: at most {largest:,}")
    return value


def gib(n_bytes: int | float) -> float:
    """Bytes to GiB (2**30), for display only."""
    return n_bytes / GIB


def human_tokens(n: int) -> str:
    """32768 -> '32k', 1048576 -> '1m', 16000 -> '16000'."""
    if n and n % (1024 * 1024) == 0:
        return f"{n // (1024 * 1024)}m"
    if n and n % 1024 == 0:
        return f"{n // 1024}k"
    return str(n)


#: A token budget (`parse_budget`), compiled where first used (`re`'s cache), not on import (start-up).
_BUDGET = r"^\s*(\d{1,15}(?:\.\d{1,15})?)\s*([kKmMbBtT]?)\s*$"
_DECIMAL = {"": 1, "k": 10**3, "m": 10**6, "b": 10**9, "t": 10**12}
#: Largest token budget accepted: 10^15, a thousand times Llama 3's 15T-token pre-training run.
MAX_BUDGET = 10**15


def parse_budget(text: str, what: str = "--tokens") -> int:
    """'1B' -> 10**9, '500m' -> 5 x 10**8, '20000' -> 20000: decimal, as token budgets are quoted."""
    shown = str(text)[:40]
    match = re.match(_BUDGET, str(text))
    if not match:
        raise InputError(f"invalid {what} '{shown}': use a number such as 20000, 500M or 1B")
    value, _ = _scaled(match.group(1), _DECIMAL[match.group(2).lower()])
    if value < 1:
        raise InputError(f"invalid {what} '{shown}': must be at least one token")
    if value > MAX_BUDGET:
        raise InputError(f"invalid {what} '{shown}': at most {MAX_BUDGET:.0e} tokens")
    return value
