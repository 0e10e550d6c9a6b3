"""`serve` without --gpus sizes the server as `fit` does (1/2/4/8 GPUs), ends a no-fit with computed
alternatives, and keeps the MIG note for models that fit one GPU."""

from __future__ import annotations

import json
from typing import Any

from tests.helpers import cli as run


def _json(*args: str) -> tuple[int, dict[str, Any]]:
    r = run(*args, "--json")
    assert r.code in (0, 1), r.stderr
    data: dict[str, Any] = json.loads(r.stdout)
    return r.code, data


def test_serve_without_gpus_tries_eight_where_four_do_not_fit() -> None:
    code, data = _json("serve", "DeepSeek-R1", "--users", "8", "--gpu", "H200")
    assert code == 0 and data["serves_load"] and data["num_gpus"] == 8


def test_serve_without_gpus_takes_the_smallest_server_that_holds_the_load() -> None:
    code, data = _json("serve", "Qwen3-8B", "--users", "4", "--gpu", "H100")
    assert code == 0 and data["num_gpus"] == 1


def test_a_serve_that_does_not_fit_ends_with_alternatives_that_fit_when_run() -> None:
    ask = ("serve", "Llama-3.3-70B", "--users", "8", "--gpu", "RTX4090", "--gpus", "2")
    code, data = _json(*ask)
    assert code == 1 and not data["fits"]
    assert data["suggestions"]
    assert "Would fit" in run(*ask).stdout
    for s in data["suggestions"][:3]:
        flags = [x for c in s["changes"] for x in (c["flag"], c["value"])]
        _, again = _json(*ask, *flags)
        assert again["fits"], s["summary"]


def test_no_mig_note_for_a_model_that_needs_several_gpus() -> None:
    _, big = _json("serve", "DeepSeek-R1", "--users", "8", "--gpu", "H200")
    _, small = _json("serve", "Qwen3-8B", "--users", "4", "--gpu", "H200", "--gpus", "2")
    assert not any("MIG" in n for n in big["power"]["notes"])
    assert any("MIG" in n for n in small["power"]["notes"])


def test_the_failure_section_speaks_only_of_layouts_that_run() -> None:
    out = run("serve", "Qwen3-32B", "--users", "8", "--gpu", "RTX4090", "--gpus", "4").stdout
    failing = out.split("If one GPU fails:\n", 1)[1].split("\nDoes not fit:", 1)[0]
    assert "1 x TP=4: service down" in failing
    assert "4 x TP=1" not in failing and "no room for KV" not in failing
    assert "Does not fit:\n  4 x TP=1: weights" in out
