"""GGUF reading cost on a hostile file: a GGUF declaring many tensors (default 100,000, about 12 MB)
and no vocabulary, which gpusize must refuse. Also a well-formed file with the same table and a
vocabulary, which it must size. Each is one cold `python -m gpusize fit FILE` process; the figures are
its CPU seconds (user + system) and peak RSS (VmHWM, Linux), medians over N runs.

Usage: python bench/bench_gguf.py [N] [TENSORS]       (figures recorded in bench/RESULTS.md)
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.gguf_files import write_many_tensors  # noqa: E402 - the tests' GGUF builder, from the checkout


def measure(path: Path) -> tuple[float, int, int, str]:
    """(CPU seconds, peak RSS in bytes, exit code, last stderr line) of one cold `fit` process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    code = (
        "import runpy, sys; sys.argv = ['gpusize', 'fit', sys.argv[1], '--gpu', 'H100']\n"
        "try:\n    runpy.run_module('gpusize', run_name='__main__')\n"
        "finally:\n    hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM')][0]\n"
        "    print('maxrss', hwm.split()[1], file=sys.stderr)"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(path)],
        capture_output=True,
        text=True,
        env={**os.environ, "NO_COLOR": "1", "HF_HUB_OFFLINE": "1"},
        timeout=300,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    lines = proc.stderr.strip().splitlines()
    # VmHWM (KiB) of the process itself: ru_maxrss would carry this script's size across fork + exec
    rss = int(lines[-1].split()[1]) * 1024
    return cpu, rss, proc.returncode, (lines[-2] if len(lines) > 1 else "")[:160]


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    tensors = int(sys.argv[2]) if len(sys.argv) > 2 else 100_000
    with tempfile.TemporaryDirectory() as tmp:
        for label, vocabulary in (("no vocabulary (refused)", False), ("with vocabulary (sized)", True)):
            path = write_many_tensors(Path(tmp) / f"hostile-{vocabulary}.gguf", tensors, vocabulary)
            figures = [measure(path) for _ in range(runs)]
            cpu = statistics.median(f[0] for f in figures)
            rss = statistics.median(f[1] for f in figures)
            print(
                f"{label}: {tensors:,} tensors, {path.stat().st_size / 1e6:.1f} MB file: "
                f"CPU {cpu:.2f} s, peak RSS {rss / 2**20:.0f} MiB, exit {figures[0][2]}"
            )
            print(f"    {figures[0][3]}")


if __name__ == "__main__":
    main()
