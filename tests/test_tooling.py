"""Tooling as configuration: ruff (lint + format) and mypy --strict on the package stay clean."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import ROOT


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=600
    )


def test_ruff_lint_and_format() -> None:
    lint = _run("ruff", "check", "gpusize", "tests", "bench")
    assert lint.returncode == 0, lint.stdout
    fmt = _run("ruff", "format", "--check", "gpusize", "tests", "bench")
    assert fmt.returncode == 0, fmt.stdout


def test_mypy_strict() -> None:
    result = _run("mypy")
    assert result.returncode == 0, result.stdout
