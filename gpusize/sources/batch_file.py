"""Reading a batch file: one configuration a row, as CSV with a header or as JSON Lines.

CSV: the header names the columns (`command`, `model`, and long flag names without dashes such as
`gpu`, `gpus`, `ctx`, `engine_version`); every cell is a string and an empty cell is "not given".
JSON Lines: one JSON object a line (blank lines skipped); values are strings, numbers, booleans,
null or lists of those. The format is told by the name (`.csv`, `.jsonl`/`.ndjson`), else by the
first character (`{` is JSON Lines). `-` reads standard input.

A file that cannot be read at all is an InputError (exit 2); a row that is not an object (a JSON
line that is a list, a CSV row with more cells than the header) is kept as that row's error, so the
batch answers every other row.
"""

from __future__ import annotations

import csv
import io
import json
import sys
from pathlib import Path
from typing import Any

from gpusize.dataclass import dataclass
from gpusize.errors import InputError

__all__ = ["MAX_BATCH_BYTES", "BatchRow", "read_batch"]

#: Largest batch file read (256 MiB: a million rows of a dozen columns fit many times over).
MAX_BATCH_BYTES = 256 * 1024 * 1024


@dataclass(frozen=True)
class BatchRow:
    """One row: its number (1-based, as an editor shows data rows), its values, or why it is unusable."""

    number: int
    values: dict[str, Any]
    problem: str | None = None


def read_batch(path: str) -> list[BatchRow]:
    text = _text(path)
    name = path.lower()
    if name.endswith((".jsonl", ".ndjson")) or (not name.endswith(".csv") and text.lstrip().startswith("{")):
        return _json_lines(text)
    return _csv_rows(text, path)


def _text(path: str) -> str:
    shown = path[:200]
    try:
        if path == "-":
            raw = sys.stdin.buffer.read(MAX_BATCH_BYTES + 1) if sys.stdin is not None else b""
        else:
            with Path(path).open("rb") as handle:
                raw = handle.read(MAX_BATCH_BYTES + 1)
    except IsADirectoryError:
        raise InputError(f"{shown}: is a folder, not a batch file") from None
    except OSError as exc:
        raise InputError(f"{shown}: cannot read ({exc.strerror or exc})") from None
    if len(raw) > MAX_BATCH_BYTES:
        raise InputError(f"{shown}: larger than a batch file may be ({MAX_BATCH_BYTES:,} bytes)")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"{shown}: not UTF-8 text (byte {exc.start})") from None


def _json_lines(text: str) -> list[BatchRow]:
    rows: list[BatchRow] = []
    for line_number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except (ValueError, RecursionError) as exc:
            rows.append(BatchRow(line_number, {}, f"line {line_number}: not JSON ({str(exc)[:80]})"))
            continue
        if not isinstance(value, dict):
            rows.append(BatchRow(line_number, {}, f"line {line_number}: a row must be a JSON object"))
            continue
        rows.append(BatchRow(line_number, value))
    if not rows:
        raise InputError("the batch file has no rows")
    return rows


def _csv_rows(text: str, path: str) -> list[BatchRow]:
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader)
    except StopIteration:
        raise InputError(f"{path[:200]}: empty batch file (a CSV needs a header row)") from None
    except csv.Error as exc:
        raise InputError(f"{path[:200]}: not CSV ({exc})") from None
    names = [h.strip() for h in header]
    if not any(names) or len(set(names)) != len(names):
        raise InputError(f"{path[:200]}: the header must name each column once")
    rows: list[BatchRow] = []
    try:
        for cells in reader:
            number = reader.line_num
            if not any(c.strip() for c in cells):
                continue
            if len(cells) > len(names):
                rows.append(
                    BatchRow(number, {}, f"line {number}: {len(cells)} cells for {len(names)} columns")
                )
                continue
            rows.append(BatchRow(number, {n: c.strip() for n, c in zip(names, cells, strict=False) if n}))
    except csv.Error as exc:
        raise InputError(f"{path[:200]}: not CSV ({exc})") from None
    if not rows:
        raise InputError(f"{path[:200]}: the batch file has no rows")
    return rows
