"""Instruction counts of `gpusize batch` over all-distinct rows (issue 22), load-independent.

The 400 rows 1, 26, 51, ... of bench_batch.py's all-distinct file, after a warm-up batch of 400 others
(rows 4, 29, 54, ...), in one process under valgrind's callgrind; the figure is the difference of two
runs, the warm-up alone and the warm-up then the 400 rows, so start-up and the warm-up cancel.
PYTHONHASHSEED=0; compile the .pyc first (`python -m compileall -q gpusize`).

Usage: python bench/bench_batch_instructions.py [SOURCES]   (SOURCES: a tree to measure instead of
this checkout, e.g. `git archive REV | tar -x -C DIR`; recorded in bench/RESULTS.md)
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROWS, STEP = 400, 25


def _slice(folder: Path) -> tuple[Path, Path]:
    sys.path.insert(0, str(Path(__file__).parent))
    import bench_batch  # noqa: PLC0415 - the files bench_batch.py measures

    header, *rows = bench_batch._files(folder)["all rows distinct"].read_text().splitlines()
    warm, measured = folder / "warm.csv", folder / "measured.csv"
    warm.write_text("\n".join([header, *rows[3::STEP][:ROWS]]) + "\n")
    measured.write_text("\n".join([header, *rows[0::STEP][:ROWS]]) + "\n")
    return warm, measured


def _batches(paths: list[str]) -> None:
    """Run each file as `gpusize batch FILE --format jsonl` in this process, output discarded."""
    from gpusize.cli import register  # noqa: PLC0415 - imported from the tree measured
    from gpusize.cli.app import run_command  # noqa: PLC0415

    register(["batch"])
    for path in paths:
        with contextlib.redirect_stdout(io.StringIO()):
            run_command(["batch", path, "--format", "jsonl"])


def _instructions(paths: list[str], sources: str | None) -> int:
    env = dict(os.environ, PYTHONHASHSEED="0")
    if sources:
        env["PYTHONPATH"] = sources
    argv = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, __file__]
    done = subprocess.run([*argv, "--run", *paths], env=env, capture_output=True, text=True, check=True)
    found = re.search(r"Collected : (\d+)", done.stderr)
    assert found, done.stderr[-2000:]
    return int(found.group(1))


def main(sources: str | None) -> None:
    with tempfile.TemporaryDirectory() as folder:
        warm, measured = _slice(Path(folder))
        alone = _instructions([str(warm)], sources)
        both = _instructions([str(warm), str(measured)], sources)
    print(f"{ROWS} all-distinct rows: {both - alone:,} instructions ({(both - alone) // ROWS:,} a row)")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--run"]:
        _batches(sys.argv[2:])
    else:
        main(sys.argv[1] if len(sys.argv) > 1 else None)
