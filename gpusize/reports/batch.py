"""`gpusize batch`: one answer per configuration row, in input order (pure values).

Each row keeps what its command answered — the exit status it would end with (0 yes, 1 no, 2 could
not answer, 3 internal error), the one-line answer (the headline, or the error), the warnings and the
command's own report — so a row that fails is data, never the end of the batch.
"""

from __future__ import annotations

from typing import Any

from gpusize.dataclass import dataclass

__all__ = ["BatchAssumptions", "BatchReport", "BatchRowAnswer", "batch_exit_code"]


@dataclass(frozen=True)
class BatchRowAnswer:
    """One batch row's answer: the command line it ran, its exit status and message, and the report
    the single command would give."""

    #: The row's line in the file (1-based; a CSV header is line 1).
    line: int
    command: str
    model: str | None
    #: The command line the row ran (`gpusize` + these words reproduces it alone).
    argv: tuple[str, ...]
    exit_code: int
    #: The headline of the answer, or the error line when the row could not be answered.
    answer: str
    error: str | None
    warnings: tuple[str, ...]
    #: The command's own report (serialised as its `--json` object); None when it could not answer.
    result: Any


@dataclass(frozen=True)
class BatchAssumptions:
    """How the rows were answered (each row's result carries its command's own assumptions)."""

    order: str = "input order; each row is the command line in its argv, answered as that command alone"
    reuse: str = (
        "catalogs and models are read once for the whole file; a row repeating an earlier row's "
        "command line gets that row's answer"
    )
    exit_code: str = "0 only when every row answered yes; else the worst row: 3 internal, 2 error, 1 no"


@dataclass(frozen=True, kw_only=True)
class BatchReport:
    """The answer of `batch`: one row answer per input row, in input order (its `--json`)."""

    gpusize_version: str
    command: str
    rows: tuple[BatchRowAnswer, ...]
    assumptions: BatchAssumptions = BatchAssumptions()

    __json_properties__ = ("exit_code", "counts")

    @property
    def exit_code(self) -> int:
        return batch_exit_code(row.exit_code for row in self.rows)

    @property
    def counts(self) -> dict[str, int]:
        """Rows by outcome: yes (0), no (1), error (2), internal (3)."""
        names = {0: "yes", 1: "no", 2: "error", 3: "internal"}
        out = dict.fromkeys(names.values(), 0)
        for row in self.rows:
            out[names.get(row.exit_code, "internal")] += 1
        return out


def batch_exit_code(codes: Any) -> int:
    """The batch's status: 0 only when every row answered yes; else the most severe row status, in
    the order internal error (3) > could not answer (2) > does not fit (1)."""
    seen = set(codes)
    for code in (3, 2, 1):
        if code in seen:
            return code
    return 0 if seen <= {0} else 3
