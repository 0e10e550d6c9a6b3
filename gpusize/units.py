"""Units: bytes per dtype, GiB conversions and parsing of sizes such as '32k'."""

from __future__ import annotations

import re

from gpusize.errors import UsageError

GIB = 1 << 30
MIB = 1 << 20

#: Bytes per element of each storage dtype gpusize knows. int4/fp4 are half a byte; their
#: per-group scales are added by the quantization rules in `memory`, not here.
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

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kKmM]?)\s*$")


def canonical_dtype(name: str) -> str:
    """'bfloat16' -> 'bf16'; raises UsageError for a dtype gpusize does not know."""
    key = name.strip().lower().removeprefix("torch.")
    if key not in DTYPE_ALIASES:
        known = ", ".join(sorted(set(DTYPE_ALIASES.values())))
        raise UsageError(f"unknown dtype '{name}'; use one of {known}")
    return DTYPE_ALIASES[key]


def parse_tokens(text: str, what: str = "context") -> int:
    """Parse '32768', '32k', '32K', '128k', '1m' (k = 1024, m = 1024²) into a positive int."""
    match = _SIZE.match(str(text))
    if not match:
        raise UsageError(f"invalid {what} '{text}': use a number such as 8192, 32k or 1m")
    number, suffix = float(match.group(1)), match.group(2).lower()
    value = number * {"": 1, "k": 1024, "m": 1024 * 1024}[suffix]
    if value != int(value):
        raise UsageError(f"invalid {what} '{text}': not a whole number of tokens")
    if value <= 0:
        raise UsageError(f"invalid {what} '{text}': must be greater than zero")
    return int(value)


def gib(n_bytes: int | float) -> float:
    """Bytes to GiB (2**30), for display only."""
    return n_bytes / GIB


def human_tokens(n: int) -> str:
    """32768 -> '32k', 1048576 -> '1m', 16000 -> '16000'."""
    if n % (1024 * 1024) == 0:
        return f"{n // (1024 * 1024)}m"
    if n % 1024 == 0:
        return f"{n // 1024}k"
    return str(n)
