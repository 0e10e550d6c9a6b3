"""The question a one-card owner asks: `fit --gpu TYPE` that takes several GPUs also says what ONE
of them can do, each answer evaluated by running it back through `fit`."""

from __future__ import annotations

import json
from typing import Any

from tests.helpers import cli as run

ONE_4090 = ("fit", "Qwen3-32B", "--ctx", "32k", "--gpu", "RTX4090")


def _json(*args: str) -> tuple[int, dict[str, Any]]:
    r = run(*args, "--json")
    assert r.code in (0, 1), r.stderr
    data: dict[str, Any] = json.loads(r.stdout)
    return r.code, data


def _flags(suggestion: dict[str, Any]) -> list[str]:
    out: list[str] = []
    for c in suggestion["changes"]:
        out += [c["flag"], c["value"]]
    return out


def test_a_type_that_takes_several_also_says_what_one_card_does() -> None:
    code, data = _json(*ONE_4090)
    assert code == 0 and data["plan"]["num_gpus"] == 4
    alone = data["one_gpu"]
    assert alone, "no one-card answer"
    assert all(s["num_gpus"] == 1 and s["fits"] for s in alone)
    levers = {c["flag"] for s in alone for c in s["changes"]}
    assert "--dtype" in levers and "--n-gpu-layers" in levers  # int4 at a shorter context; offload
    text = run(*ONE_4090).stdout
    assert "On one NVIDIA GeForce RTX 4090" in text


def test_each_one_card_answer_fits_one_card_when_run() -> None:
    _, data = _json(*ONE_4090)
    for s in data["one_gpu"]:
        code, again = _json(*ONE_4090[:-2], "--gpu", "RTX4090", "--gpus", "1", *_flags(s))
        assert code == 0 and again["fits"], s["summary"]


def test_no_one_card_section_when_the_count_is_fixed_or_one_card_is_enough() -> None:
    _, fixed = _json(*ONE_4090, "--gpus", "4")
    _, small = _json("fit", "Qwen3-0.6B", "--gpu", "RTX4090")
    assert fixed["one_gpu"] == [] and small["one_gpu"] == []
    assert "On one" not in run(*ONE_4090, "--gpus", "4").stdout
