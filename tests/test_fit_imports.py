"""`fit` prints no speed, so a `fit` run does not import the speed model (serving.load, throughput,
the speed ranges): importing it cost about 5% of fit's start-up instructions when reports.common
pulled it in (bench/bench_instructions.py). Measured in a fresh process, as a user's run is."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SPEED = ("gpusize.serving.load", "gpusize.serving.throughput", "gpusize.serving.speed_ranges")


def test_a_fit_run_does_not_import_the_speed_model() -> None:
    code = (
        "import contextlib, io, sys\n"
        "from gpusize.cli import register\n"
        "from gpusize.cli.app import run_command\n"
        "register(['fit'])\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try:\n"
        "        run_command(['fit', 'Qwen3-8B', '--gpu', 'H100', '-q'])\n"
        "    except SystemExit:\n"
        "        pass\n"
        f"print(sorted(m for m in {SPEED!r} if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "[]"
