"""`gpusize train` on the command line: exit codes, JSON values, human output, usage errors. In this
process (tests.helpers.cli)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.helpers import CliResult, cli

GIB = 1 << 30


class Result:
    def __init__(self, proc: CliResult) -> None:
        self.exit_code, self.stdout, self.output = proc.code, proc.stdout, proc.stdout + proc.stderr
        self.stderr = proc.stderr


def invoke(*args: str) -> Any:
    return Result(cli("train", *args))


def test_cli_json_values() -> None:
    r = invoke(
        "Llama-3.1-70B",
        "--method",
        "lora",
        "--gpu",
        "A100-80GB",
        "--gpus",
        "8",
        "--sharding",
        "fsdp",
        "--json",
    )
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["fits"] is True and all(isinstance(v, int) for v in d["memory"].values())
    p = d["plan"]
    assert p["gpu"] == "A100-80GB" and p["num_gpus"] == 8
    assert d["setup"]["method"] == "lora" and d["setup"]["lora_modules"] == [
        "q",
        "k",
        "v",
        "o",
        "gate",
        "up",
        "down",
    ]
    # 29.9 GiB with CUDA context and NCCL; 27.9 GiB of PyTorch peak vs torchtune's 27.6 (torchtune-readme-7).
    torch_peak = p["per_gpu"]["allocated_peak_bytes"] / GIB
    assert abs(torch_peak / 27.6 - 1) < 0.05


def test_cli_does_not_fit_exits_1_with_reason() -> None:
    r = invoke("Llama-3.1-70B", "--method", "full", "--gpu", "H100", "--sharding", "ddp", "--json")
    assert r.exit_code == 1
    d = json.loads(r.stdout)
    assert d["fits"] is False and len(d["candidates"]) == 4
    assert "DDP replicates" in d["candidates"][-1]["reason"]


def test_cli_smallest_count_and_time() -> None:
    r = invoke("Llama-3.1-8B", "--method", "full", "--gpu", "H100", "--tokens", "1B", "--json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    # torch's default foreach AdamW copies the second moment of each GPU's shard at the step (+15 GiB on
    # 2 GPUs): 4 GPUs (2 before the optimizer step was modelled); fused AdamW fits on 2.
    assert [c["num_gpus"] for c in d["candidates"]] == [1, 2, 4] and d["plan"]["num_gpus"] == 4
    assert d["plan"]["peak_phase"] == "optimizer step"
    fused = json.loads(
        invoke(
            "Llama-3.1-8B", "--method", "full", "--gpu", "H100", "--optimizer", "adamw-fused", "--json"
        ).stdout
    )
    assert fused["plan"]["num_gpus"] == 2
    rows = d["time"]["rows"]
    assert [row["num_gpus"] for row in rows] == [1, 2, 4, 8] and rows[0]["fits"] is False
    # more GPUs, fewer hours; the cost may fall too: FSDP shards the optimizer step (training/speed.py)
    assert rows[1]["hours"] < rows[0]["hours"] and rows[2]["hours"] < rows[1]["hours"]
    assert all(row["hours_low"] < row["hours"] < row["hours_high"] for row in rows)


def test_cli_human_output() -> None:
    r = invoke("Llama-3.1-8B", "--method", "qlora", "--gpu", "RTX4090", "--tokens", "100M")
    assert r.exit_code == 0, r.output
    assert r.stdout.startswith("Llama-3.1-8B qlora (bf16-mixed, adamw, 1 x 2k tokens, checkpointed) needs 1x")
    assert "Time and cost for 100,000,000 tokens" in r.stdout and "\x1b[" not in r.stdout


@pytest.mark.parametrize(
    "args",
    [
        ("--method", "dpo"),
        ("--method", "full", "--sharding", "none", "--gpus", "2"),
        ("--method", "full", "--offload", "params", "--sharding", "zero2"),
        ("--method", "full", "--gpus", "3"),
        ("--method", "full", "--batch", "0"),
        ("--method", "full", "--seq", "2q"),
        ("--method", "full", "--tokens", "lots"),
        ("--method", "lora", "--lora-targets", "mlp"),
    ],
)
def test_cli_usage_errors(args: tuple[str, ...]) -> None:
    r = invoke("Llama-3.1-8B", *args)
    assert (
        r.exit_code == 2
        and r.stdout == ""
        and r.stderr.startswith("gpusize: error: ")
        and r.stderr.count("\n") == 1
    )


def test_cli_says_what_fits_and_it_does() -> None:
    """Where the job does not fit: the largest micro-batch / sequence that fit the device figure, as a
    suggestion that keeps the effective batch; re-running it fits."""
    base = ("Llama-3.1-8B", "--method", "lora", "--gpu", "RTX4090", "--gpus", "1", "--sharding", "none")
    r = invoke(*base, "--seq", "8k", "--batch", "4", "--json")
    assert r.exit_code == 1
    c = json.loads(r.stdout)["candidates"][-1]
    s = c["suggestion"]
    assert s["batch"] == 1 and s["grad_accum"] == 4 and s["effective_batch"] == 4 and s["seq_tokens"] < 8192
    again = invoke(*base, "--seq", str(s["seq_tokens"]), "--batch", "1", "--grad-accum", "4", "--json")
    assert again.exit_code == 0, again.output
    human = invoke(*base, "--seq", "8k", "--batch", "4")
    assert "fits with --batch 1 --grad-accum 4 --seq" in human.stdout


def test_cli_optimizer_options_reach_the_model() -> None:
    common = ("Llama-3.1-8B", "--method", "full", "--gpu", "H200", "--gpus", "1", "--sharding", "none")
    foreach = json.loads(invoke(*common, "--json").stdout)["plan"]
    inbwd = json.loads(invoke(*common, "--optimizer-in-backward", "--expandable-segments", "--json").stdout)
    assert inbwd["setup"]["optimizer_in_backward"] is True and inbwd["setup"]["expandable_segments"] is True
    assert inbwd["plan"]["per_gpu"]["allocated_peak_bytes"] < foreach["per_gpu"]["allocated_peak_bytes"]
    paged = json.loads(invoke(*common, "--optimizer", "paged-adamw-8bit", "--json").stdout)["plan"]
    assert paged["per_gpu"]["paged_bytes"] > 0 and paged["per_gpu"]["optimizer_bytes"] == 0
