"""Tables fit the terminal: at 60, 80 and 120 columns every row keeps its verdict, its GPU and its count
whole, and no line is longer than the width (long prose goes under the table, never into a cell).
A pipe or a file gets 80 columns unless COLUMNS says otherwise."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest

from gpusize.cli import register
from gpusize.cli.app import run_command
from gpusize.render.format import human_tokens
from gpusize.render.text import terminal_width

WIDTHS = (60, 80, 120)


def run(args: list[str], width: int | None, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """The command in this process (as the entry point runs it), stdout captured."""
    with pytest.MonkeyPatch.context() as env:
        env.setenv("NO_COLOR", "1")
        if width is None:
            env.delenv("COLUMNS", raising=False)
        else:
            env.setenv("COLUMNS", str(width))
        register(args)
        code = run_command(args)
    return code, capsys.readouterr().out


def unwrapped(text: str) -> str:
    """Prose as one line per paragraph (continuation lines start with two spaces)."""
    return re.sub(r"\n  +", " ", text)


def fit_rows(data: dict[str, Any]) -> list[str]:
    last = {c["gpu"]: c for c in data["candidates"]}
    return [
        rf"^{re.escape(c['gpu'])}\s+{c['num_gpus']} \(TP=\d+\)\s+{'yes' if c['fits'] else 'NO'}\b"
        for c in last.values()
    ]


def train_rows(data: dict[str, Any]) -> list[str]:
    last = {c["gpu"]: c for c in data["candidates"]}
    return [
        rf"^{re.escape(c['gpu'])}\s+{c['num_gpus']}\s+(\S+\s+)?{'yes' if c['fits'] else 'NO'}\b"
        for c in last.values()
    ]


def serve_rows(data: dict[str, Any]) -> list[str]:
    def verdict(x: dict[str, Any]) -> str:
        return ("yes" if x["serves_all"] else "yes, queues") if x["fits"] else "NO"

    return [
        rf"^{x['replicas']} x TP={x['tensor_parallel']}\s+{verdict(x)}(\s|$)" for x in data["layouts"]
    ] + [rf"{data['num_gpus']}x {re.escape(data['gpu_full_name'])}"]


def quote_rows(data: dict[str, Any]) -> list[str]:
    def verdict(o: dict[str, Any]) -> str:
        return ("yes" if o["serves_all"] else "yes, queues") if o["fits"] else "no"

    return [
        rf"^{o['num_gpus']}x {re.escape(o['gpu'])}\s+{o['replicas']} x TP={o['tensor_parallel']}\s+"
        rf"{verdict(o)}(\s|$)"
        for o in data["options"]
    ]


def which_rows(data: dict[str, Any]) -> list[str]:
    def name(m: dict[str, Any]) -> str:  # a quantized build is marked after the name: "Qwen3-32B [int4]"
        return re.escape(m["name"] + (f" [{m['weight_dtype']}]" if m["changes"] else ""))

    return [rf"^{name(m)}\s+yes\b" for m in data["models"] if m["fits"]] + [
        rf"{data['num_gpus']}x {re.escape(data['gpu_full_name'])}"
    ]


def curve_rows(data: dict[str, Any]) -> list[str]:
    return [
        rf"^\s*{human_tokens(p['context_tokens'])} #* *{p['max_concurrency']:,.1f}"
        + ("" if p["fits"] else r" \(does not fit\)")
        for p in data["points"]
    ] + [rf"{data['num_gpus']}x {re.escape(data['gpu_full_name'])}"]


CASES: dict[str, tuple[list[str], Callable[[dict[str, Any]], list[str]]]] = {
    "fit": (["fit", "Qwen3-32B", "--ctx", "32k", "--all"], fit_rows),
    "fit, does not fit": (["fit", "Llama-3.3-70B", "--gpu", "RTX3090", "--gpus", "2"], fit_rows),
    "train": (["train", "Qwen3-8B", "--method", "lora", "--tokens", "1B", "--all"], train_rows),
    "serve": (["serve", "Qwen3-32B", "--gpu", "H100", "--gpus", "4", "--users", "500"], serve_rows),
    "quote": (["quote", "Qwen3-32B", "--ctx", "16k", "--users", "100"], quote_rows),
    "which": (["which", "--gpu", "RTX4090", "--gpus", "2", "--ctx", "32k"], which_rows),
    "curve": (["curve", "Llama-3.3-70B", "--gpu", "H100", "--gpus", "2"], curve_rows),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_row_keeps_its_verdict_gpu_and_count(case: str, capsys: pytest.CaptureFixture[str]) -> None:
    args, rows = CASES[case]
    code, out = run([*args, "--json"], None, capsys)
    wanted = rows(json.loads(out))
    for width in WIDTHS:
        text_code, text = run(args, width, capsys)
        assert text_code == code
        too_long = [line for line in text.splitlines() if len(line) > width]
        assert not too_long, (width, too_long)
        lines = text.splitlines() + unwrapped(text).splitlines()
        missing = [row for row in wanted if not any(re.search(row, line) for line in lines)]
        assert not missing, (width, missing)


def test_default_fit_shows_the_pick_and_its_nearest_options(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run(["fit", "Qwen3-32B", "--ctx", "32k", "--json"], None, capsys)
    data = json.loads(out)
    assert code == 0 and len({c["gpu"] for c in data["candidates"]}) > 40  # JSON keeps every candidate
    _, text = run(["fit", "Qwen3-32B", "--ctx", "32k"], 100, capsys)
    rows = [line for line in text.splitlines() if re.match(r"^\S+\s+\d+ \(TP=\d+\)\s+(yes|NO)\b", line)]
    assert len(rows) == 4 and rows[0].startswith(data["plan"]["gpu"] + " ")
    assert re.search(r"\(\d+ more GPU types: --all lists them", text)
    _, every = run(["fit", "Qwen3-32B", "--ctx", "32k", "--all"], 100, capsys)
    assert len([line for line in every.splitlines() if re.match(r"^\S+\s+\d+ \(TP=", line)]) > 40


def test_a_caveat_repeated_per_gpu_type_is_said_once(capsys: pytest.CaptureFixture[str]) -> None:
    # vLLM 0.19 keeps the CUDA-graph pool outside the budget: a small model on every GDDR card warns
    _, text = run(["fit", "Phi-4-mini-instruct", "--engine-version", "0.19.0", "--all"], 120, capsys)
    said = unwrapped(text).count("CUDA context + graph pool may need")
    assert said == 1
    line = next(line for line in unwrapped(text).splitlines() if "graph pool may need" in line)
    assert line.count(" x1") > 3  # the GPUs it applies to, named once


def test_memory_totals_say_what_they_hold(capsys: pytest.CaptureFixture[str]) -> None:
    """The whole-model total (one GPU, TP=1) and the plan's per-GPU total are labelled apart, and the
    plan's column equals the 'need' of the plan's row."""
    code, out = run(["fit", "Qwen3-32B", "--ctx", "32k", "--gpu", "RTX-A6000", "--json"], None, capsys)
    plan = json.loads(out)["plan"]
    assert code == 0 and plan["num_gpus"] == 2
    _, text = run(["fit", "Qwen3-32B", "--ctx", "32k", "--gpu", "RTX-A6000"], 100, capsys)
    assert "the whole model on one RTX-A6000 (TP=1), and per GPU on 2x RTX-A6000 (TP=2)" in (unwrapped(text))
    total = next(line for line in text.splitlines() if line.startswith("total "))
    need = f"{plan['per_gpu']['total_bytes'] / 2**30:.1f}"
    row = next(line for line in text.splitlines() if re.match(r"^RTX-A6000\s+2 \(TP=2\)", line))
    assert total.split()[2] == need and need in row.split()


def test_a_pipe_gets_80_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    assert terminal_width(io.StringIO()) == 80
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    out = subprocess.run(
        [sys.executable, "-m", "gpusize", "fit", "Qwen3-32B", "--ctx", "32k"],
        capture_output=True,
        text=True,
        env={**env, "NO_COLOR": "1"},
        timeout=60,
    ).stdout
    assert 70 < max(len(line) for line in out.splitlines()) <= 80
