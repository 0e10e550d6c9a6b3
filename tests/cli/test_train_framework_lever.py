"""The training framework is a lever: a LoRA job that does not fit one card under transformers is
offered `--framework unsloth` where it fits, evaluated (running the flags back gives a fit)."""

from __future__ import annotations

import json

from tests.helpers import cli as run

JOB = (
    "train",
    "Llama-3.1-8B",
    "--method",
    "lora",
    "--gpu",
    "RTX4090",
    "--gpus",
    "1",
    "--tokens",
    "1B",
    "--seq",
    "8k",
)


def test_unsloth_is_offered_where_it_fits_and_fits_when_run() -> None:
    r = run(*JOB, "--json")
    assert r.code == 1, r.stderr
    data = json.loads(r.stdout)
    unsloth = [s for s in data["suggestions"] if {"flag": "--framework", "value": "unsloth"} in s["changes"]]
    assert unsloth and unsloth[0]["num_gpus"] == 1
    flags = [x for c in unsloth[0]["changes"] for x in (c["flag"], c["value"]) if x]
    assert run(*JOB, *flags, "--quiet").code == 0
