"""README examples are real commands with real output."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from tests.conftest import ROOT

README = ROOT / "README.md"


def test_readme_example_output_is_current() -> None:
    """Every console block of the README is a real command with its real output."""
    text = README.read_text()
    blocks = re.findall(r"```console\n\$ NO_COLOR=1 COLUMNS=100 gpusize (.+?)\n(.*?)\n```", text, re.S)
    assert blocks, "README example block missing"
    assert len(blocks) == text.count("```console")
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "100"}
    for command, expected in blocks:
        out = subprocess.run(
            [sys.executable, "-m", "gpusize", *command.split()],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
        assert out.returncode == 0
        assert out.stdout.rstrip("\n") == expected


def test_readme_opens_with_the_two_commands() -> None:
    text = README.read_text()
    assert "gpusize fit Qwen3-32B --ctx 32k" in text
    assert "pip install -e '.[test]' && python -m pytest -q" in text
    assert "python -m pytest -q" in (README.parent / ".ci" / "run").read_text()
