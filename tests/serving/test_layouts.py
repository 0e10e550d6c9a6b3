"""Serving plans: layouts, recommendation, JSON and launch commands."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys

from gpusize.serving import layouts

ENV = {**os.environ, "NO_COLOR": "1", "COLUMNS": "160"}


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gpusize", *args], capture_output=True, text=True, env=ENV, timeout=60
    )


def test_layouts_for_a_server() -> None:
    assert layouts.layouts_for(4) == [(4, 1), (2, 2), (1, 4)]
    assert layouts.layouts_for(8) == [(8, 1), (4, 2), (2, 4), (1, 8)]


def test_serve_qwen3_8b_on_four_l40s() -> None:
    """The comparison, a recommendation, and the same numbers in --json."""
    human = run("serve", "Qwen3-8B", "--ctx", "8k", "--users", "64", "--gpu", "L40S", "--gpus", "4")
    assert human.returncode == 0, human.stderr
    for layout in ("4 x TP=1", "2 x TP=2", "1 x TP=4"):
        assert layout in human.stdout
    assert "Why:" in human.stdout and "vllm serve Qwen/Qwen3-8B" in human.stdout
    data = json.loads(
        run(
            "serve", "Qwen3-8B", "--ctx", "8k", "--users", "64", "--gpu", "L40S", "--gpus", "4", "--json"
        ).stdout
    )
    assert len(data["layouts"]) == 3 and data["recommendation"] is not None
    rec = data["recommendation"]
    assert f"{rec['replicas']} replica(s) x TP={rec['tensor_parallel']}" in human.stdout
    assert data["power"]["gpu_tdp_w"] == 4 * 350


def test_launch_command_round_trips_the_plan() -> None:
    data = json.loads(
        run(
            "serve", "Llama-3.3-70B", "--ctx", "16k", "--users", "8", "--gpu", "H100", "--gpus", "4", "--json"
        ).stdout
    )
    rec, cmd = data["recommendation"], data["launch"]["vllm"]["command"]
    assert int(re.search(r"--tensor-parallel-size (\d+)", cmd).group(1)) == rec["tensor_parallel"]  # type: ignore[union-attr]
    assert int(re.search(r"--max-model-len (\d+)", cmd).group(1)) == data["workload"]["context_tokens"]  # type: ignore[union-attr]


def test_serve_input_errors() -> None:
    assert run("serve", "Qwen3-8B").returncode == 2
    r = run("serve", "Qwen3-8B", "--users", "4", "--rps", "2")
    assert r.returncode == 2 and "exactly one" in r.stderr


def test_model_too_big_for_server_exits_1() -> None:
    r = run("serve", "DeepSeek-V3", "--users", "4", "--gpu", "L4", "--gpus", "4", "--json")
    assert r.returncode == 1 and json.loads(r.stdout)["recommendation"] is None


def test_littles_law_unit() -> None:
    """In flight = rate x time in the system: 5 req/s x (0.5 s TTFT + 256 tokens at 25.6 tok/s) = 52.5 ->
    53."""
    demand = layouts.Demand(rps=5, prompt_tokens=512, output_tokens=256)
    assert layouts.concurrency_for(demand, 25.6, 0.5) == 53
    assert layouts.concurrency_for(layouts.Demand(users=7), 1.0, 9.0) == 7


def test_rps_mode_uses_littles_law() -> None:
    """The sequences each layout has in flight follow from the rate, its TTFT and its decode speed."""
    data = json.loads(
        run(
            "serve",
            "Qwen3-8B",
            "--rps",
            "5",
            "--prompt-tokens",
            "512",
            "--output-tokens",
            "256",
            "--gpu",
            "H100",
            "--gpus",
            "2",
            "--json",
        ).stdout
    )
    checked = 0
    for x in data["layouts"]:
        if not x["fits"] or not x["serves_all"]:
            continue
        expected = 5 * (x["ttft_s"] + 256 / x["per_request_tokens_per_s"])
        assert abs(x["concurrent_sequences"] - math.ceil(expected)) <= 1, (x, expected)
        assert x["concurrent_sequences"] > 1  # 5 req/s of 256 tokens each cannot be one sequence
        checked += 1
    assert checked >= 1


def test_multi_node_only_when_asked() -> None:
    """--nodes N allows TP=8 x PP=N when one server is not enough; never chosen silently."""
    single = json.loads(run("fit", "DeepSeek-V3", "--gpu", "H100", "--ctx", "32k", "--json").stdout)
    assert single["fits"] is False and all(c["pipeline_parallel"] == 1 for c in single["candidates"])
    multi = run("fit", "DeepSeek-V3", "--gpu", "H100", "--ctx", "32k", "--nodes", "2", "--json")
    plan = json.loads(multi.stdout)["plan"]
    assert multi.returncode == 0 and plan["num_gpus"] == 16 and plan["pipeline_parallel"] == 2
    assert "inter-node network" in plan["warning"]
    human = run("fit", "DeepSeek-V3", "--gpu", "H100", "--ctx", "32k", "--nodes", "2")
    assert "PP=2 across 2 servers" in human.stdout
