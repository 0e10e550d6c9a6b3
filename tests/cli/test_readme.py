"""README examples are real commands with real output."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from tests.conftest import ROOT

README = ROOT / "README.md"


def test_readme_example_output_is_current() -> None:
    text = README.read_text()
    block = re.search(r"```console\n\$ NO_COLOR=1 COLUMNS=100 gpusize (.+?)\n(.*?)\n```", text, re.S)
    assert block, "README example block missing"
    args, expected = block.group(1).split(), block.group(2)
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "100"}
    out = subprocess.run(
        [sys.executable, "-m", "gpusize", *args], capture_output=True, text=True, env=env, timeout=60
    )
    assert out.returncode == 0
    assert out.stdout.rstrip("\n") == expected


def test_readme_opens_with_the_two_commands() -> None:
    text = README.read_text()
    assert "gpusize fit Qwen3-32B --ctx 32k" in text
    assert "pip install -e '.[test]' && python -m pytest -q" in text
    assert "python -m pytest -q" in (README.parent / ".ci" / "run").read_text()
