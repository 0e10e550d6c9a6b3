"""README examples are real commands with real output."""

from __future__ import annotations

import re

from gpusize.core.releases import SGLANG, VLLM
from tests.conftest import ROOT
from tests.helpers import cli

README = ROOT / "README.md"


def test_readme_example_output_is_current() -> None:
    """Every console block of the README is a real command with its real output."""
    text = README.read_text()
    blocks = re.findall(r"```console\n\$ NO_COLOR=1 COLUMNS=100 gpusize (.+?)\n(.*?)\n```", text, re.S)
    assert blocks, "README example block missing"
    assert len(blocks) == text.count("```console")
    for command, expected in blocks:
        out = cli(*command.split(), env={"COLUMNS": "100"})  # in this process: the same text
        assert out.code == 0
        assert out.stdout.rstrip("\n") == expected


def test_readme_opens_with_the_two_commands() -> None:
    text = README.read_text()
    assert "gpusize fit Qwen3-32B --ctx 32k" in text
    assert "pip install -e '.[test]' && python -m pytest -q" in text
    assert "python -m pytest -q" in (README.parent / ".ci" / "run").read_text()


def test_readme_release_ranges_are_the_release_tables() -> None:
    """The README's prose names the releases core/releases.py models, in the words --help uses."""
    text = " ".join(README.read_text().split())
    first, newest, default = VLLM.versions[0], VLLM.newest, VLLM.default_version
    assert f"--engine-version X.Y[.Z]` (vLLM {VLLM.span}, SGLang {SGLANG.span};" in text
    assert (
        f"(vLLM {first.parts[0]}.{first.parts[1]}-{newest.parts[0]}.{newest.parts[1]} by default {default}"
        in text
    )
    assert f"checked on published start-up logs (vLLM {default}, SGLang {SGLANG.newest})" in text
    assert (
        f"every vLLM wheel from {first} to {newest} and every SGLang wheel from {SGLANG.versions[0]} "
        f"to {SGLANG.newest} was read" in text
    )
    assert f"-{default} | cards of 160 GiB" in text  # the default's row of the behaviour table
    assert f"| {newest} | the extensible KV cache" in text  # the last row: modelled from the source


def test_readme_shows_a_quote_with_a_speed_floor_and_its_csv() -> None:
    """Issue 23: the README shows a quote with a speed floor and the same quote as CSV."""
    text = README.read_text()
    floor = "gpusize quote Llama-3.3-70B --ctx 32k --users 50 --min-tokens-per-s-per-user 20"
    assert f"$ NO_COLOR=1 COLUMNS=100 {floor} --gpu H100 --gpu H200 --gpu L40S\n" in text
    assert f"$ NO_COLOR=1 COLUMNS=100 {floor} --gpu H100 --gpu H200 --gpu L40S --format csv\n" in text
