"""No internal jargon in what a customer sees: the text and exports of every command, the README and
the catalog notes speak plainly (no record ids, test paths, change-log words). Sources may cite files
and URLs: `source`-like fields are where they belong."""

from __future__ import annotations

import re

import pytest

from gpusize.cli import register
from gpusize.cli.app import run_command
from gpusize.sources.catalog import load_gpus, load_models
from tests.conftest import ROOT

JARGON = re.compile(
    r"\(seed|\bseed \d|\bhelper\b|\bllmd[b]?-|engine-logs|tests/|\bsession\b|\bissue \d|"
    r"\bnew entry\b|\bFIX\b|\bsuperseded\b|\bTODO\b|\bwe\b|\bmy\b",
    re.IGNORECASE,
)

#: What people see: the commands in their common forms, text and exports.
SEEN = [
    ["fit", "Qwen3-32B", "--ctx", "32k"],
    ["fit", "Phi-4-mini-instruct", "--engine-version", "0.19.0", "--all"],
    ["fit", "Llama-3.3-70B", "--gpu", "RTX3090", "--gpus", "2"],
    ["fit", "DeepSeek-V3", "--gpu", "H100", "--ctx", "32k", "--nodes", "2"],
    ["fit", "Qwen3-32B", "--engine", "llamacpp", "--gpu", "RTX4090", "--gpus", "2"],
    ["fit", "Qwen3-32B", "--engine", "sglang", "--gpu", "H100"],
    ["serve", "Qwen3-32B", "--gpu", "H100", "--gpus", "4", "--users", "500"],
    ["serve", "Qwen3-8B", "--gpu", "L40S", "--gpus", "4", "--users", "64", "--format", "markdown"],
    ["quote", "Qwen3-32B", "--ctx", "16k", "--users", "100"],
    ["quote", "Llama-3.3-70B", "--ctx", "32k", "--users", "50", "--format", "html"],
    ["which", "--gpu", "RTX4090", "--gpus", "2", "--ctx", "32k", "--all"],
    ["curve", "Qwen3-32B", "--gpu", "H100", "--gpus", "4"],
    ["train", "Qwen3-8B", "--method", "qlora", "--tokens", "1B"],
    ["models"],
    ["gpus"],
]


@pytest.mark.parametrize("args", SEEN, ids=[" ".join(a) for a in SEEN])
def test_output_speaks_plainly(args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.MonkeyPatch.context() as env:
        env.setenv("COLUMNS", "120")
        env.setenv("NO_COLOR", "1")
        register(args)
        assert run_command(args) in (0, 1)
    out = capsys.readouterr().out
    assert out and not JARGON.findall(out), JARGON.findall(out)


def test_readme_speaks_plainly() -> None:
    text = (ROOT / "README.md").read_text()
    assert not re.findall(r"\(seed|\bseed \d|\bhelper\b|\bllmd[b]?-|\bsession\b", text, re.IGNORECASE)


def test_catalog_notes_speak_plainly() -> None:
    """A GPU's `notes` are shown with it (`gpusize gpus --json`): facts, not edit history. Sources may
    cite files, but not in the first person or as a change log."""
    notes = [(g.name, g.notes or "") for g in load_gpus()]
    assert not [(name, JARGON.findall(note)) for name, note in notes if JARGON.search(note)]
    history = re.compile(r"\bmy\b|\bwe\b|\bFIX\b|\bnew entry\b|\bsuperseded\b", re.IGNORECASE)
    sources = [(m.name, m.params_source or "") for m in load_models()]
    assert not [(name, history.findall(text)) for name, text in sources if history.search(text)]
