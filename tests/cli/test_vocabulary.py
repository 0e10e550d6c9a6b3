"""One vocabulary for every command: --json, --format, --quiet/-q and --help with an example; the same
JSON key for the same quantity; canonical names; the version and the assumptions in every object; the
exit status as README's table says. The commands run in this process (tests.helpers.run_in_process,
the Hub offline)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from gpusize.cli import COMMANDS
from tests.helpers import CliResult, offline_hub, run_in_process

#: A small, quick call of every command.
CALLS: dict[str, list[str]] = {
    "fit": ["fit", "Qwen3-8B", "--gpu", "H100"],
    "curve": ["curve", "Qwen3-8B", "--gpu", "h100"],
    "which": ["which", "--gpu", "L4"],
    "serve": ["serve", "Qwen3-8B", "--gpu", "H100", "--gpus", "2", "--users", "8"],
    "quote": ["quote", "Qwen3-8B", "--gpu", "L4", "--gpu", "H100"],
    "train": ["train", "Qwen3-8B", "--method", "lora", "--gpu", "H100", "--tokens", "1B"],
    "models": ["models", "qwen3"],
    "gpus": ["gpus"],
    "batch": ["batch", "examples/batch.csv"],
}


def run(*args: str) -> CliResult:
    return run_in_process(*args, env={"NO_COLOR": "1", "COLUMNS": "100"})


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    offline_hub(monkeypatch, tmp_path / "hf")


def test_every_command_is_called_here() -> None:
    assert set(CALLS) == set(COMMANDS)


@pytest.mark.parametrize("command", sorted(CALLS))
def test_json_format_json_and_quiet_on_every_command(command: str) -> None:
    as_json, as_format, quiet, short = (
        run(*CALLS[command], "--json"),
        run(*CALLS[command], "--format", "json"),
        run(*CALLS[command], "--quiet"),
        run(*CALLS[command], "-q"),
    )
    assert as_json.code == as_format.code == quiet.code == short.code == 0
    assert json.loads(as_json.stdout) == json.loads(as_format.stdout)
    assert quiet.stdout == short.stdout == ""
    data = json.loads(as_json.stdout)
    assert data["gpusize_version"] and data["command"] == command and isinstance(data["assumptions"], dict)


@pytest.mark.parametrize("command", sorted(CALLS))
def test_help_is_a_usage_line_and_an_example(command: str) -> None:
    out = run(command, "--help")
    assert out.code == 0
    assert "Example: gpusize " + command in " ".join(out.stdout.split())
    assert "--json" in out.stdout and "--format" in out.stdout and "-q, --quiet" in out.stdout


def test_model_argument_says_what_it_accepts() -> None:
    text = " ".join(run("fit", "--help").stdout.split())
    assert re.search(r"fit \[OPTIONS\] \{?MODEL\}?", text)  # typer writes a required one {MODEL}
    for kind in ("Hugging Face Hub id", ".gguf file", "folder"):
        assert kind in text


@pytest.mark.parametrize("command", ["serve", "which", "quote"])
def test_markdown_and_csv_where_there_is_a_table_to_share(command: str) -> None:
    markdown, csv = run(*CALLS[command], "--format", "markdown"), run(*CALLS[command], "--format", "csv")
    assert markdown.code == csv.code == 0
    assert markdown.stdout.startswith("## ") and "| fits |" in markdown.stdout
    assert ",fits," in csv.stdout.splitlines()[0]


def test_one_format_at_a_time() -> None:
    both = run(*CALLS["fit"], "--json", "--format", "table")
    assert both.code == 2 and "give one" in both.stderr
    assert run(*CALLS["fit"], "--format", "html").code == 2


def _keys(value: Any) -> set[str]:
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in _keys(v)}
    if isinstance(value, list):
        return {k for v in value for k in _keys(v)}
    return set()


def test_one_key_per_price() -> None:
    """`price_usd_per_hour` is per GPU (the catalog's); `usd_per_hour` is for all the GPUs of a
    candidate, layout or option; `usd_per_month` and `usd_per_million_tokens` likewise."""
    gpus = {g["name"]: g for g in json.loads(run("gpus", "--json").stdout)["gpus"]}
    answers = {c: json.loads(run(*CALLS[c], "--json").stdout) for c in ("fit", "serve", "quote", "train")}
    for data in answers.values():
        keys = _keys(data)
        assert not keys & {"price_per_hour", "cost_per_hour", "price_usd_per_month", "cost_per_month"}
        assert "usd_per_hour" in keys and "price_usd_per_hour" not in keys
    plan = answers["fit"]["plan"]
    assert plan["usd_per_hour"] == pytest.approx(gpus[plan["gpu"]]["price_usd_per_hour"] * plan["num_gpus"])
    layout = answers["serve"]["recommendation"]
    assert layout["usd_per_hour"] == pytest.approx(gpus["H100-SXM"]["price_usd_per_hour"] * 2)


def test_names_are_canonical() -> None:
    curve = json.loads(run("curve", "qwen3-8b", "--gpu", "h100", "--json").stdout)
    assert (curve["gpu"], curve["model"]["name"]) == ("H100-SXM", "Qwen3-8B")


@pytest.mark.parametrize(
    "args, code",
    [
        (["fit", "Qwen3-32B", "--gpu", "H100", "--gpus", "4", "--batch", "500"], 1),  # KV for 500 misses
        (["serve", "Qwen3-32B", "--gpu", "H100", "--gpus", "4", "--users", "500"], 1),  # requests queue
        (["serve", "Qwen3-32B", "--gpu", "H100", "--gpus", "4", "--users", "50"], 0),  # held at once
        (["serve", "Llama-3.3-70B", "--gpu", "RTX3090", "--gpus", "2", "--users", "1"], 1),  # no fit
        (["models", "no-such-model"], 1),  # like grep: no match
        (["models"], 0),
    ],
)
def test_exit_status_is_the_answer(args: list[str], code: int) -> None:
    assert run(*args, "-q").code == code


def test_serve_says_whether_it_serves_the_load() -> None:
    queued = json.loads(run(*CALLS["serve"][:-1], "500", "--json").stdout)
    assert queued["fits"] is True and queued["serves_load"] is False
    held = json.loads(run(*CALLS["serve"], "--json").stdout)
    assert held["serves_load"] is True
