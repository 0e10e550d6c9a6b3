"""Engine releases and flags under the engines' own names: every inference command takes them, the JSON
names the release assumed, and the printed launch command carries the same values back."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.helpers import CliResult, run_in_process


def run(*args: str) -> CliResult:
    """The command in this process, NO_COLOR (the width as the environment has it, 80 for a pipe)."""
    return run_in_process(*args, env={"NO_COLOR": "1"})


def as_json(*args: str) -> dict[str, Any]:
    r = run(*args, "--json")
    assert r.code in (0, 1), r.stderr
    out: dict[str, Any] = json.loads(r.stdout)
    return out


VLLM_FLAGS = ("--engine-version", "0.15.1", "--max-num-seqs", "64", "--max-num-batched-tokens", "4096")


@pytest.mark.parametrize(
    "args",
    [
        ["fit", "Qwen3-8B", "--gpu", "L4", *VLLM_FLAGS, "--enforce-eager"],
        ["serve", "Qwen3-8B", "--gpu", "L4", "--users", "4", *VLLM_FLAGS, "--enforce-eager"],
        ["quote", "Qwen3-8B", "--gpu", "L4", *VLLM_FLAGS, "--enforce-eager"],
        ["curve", "Qwen3-8B", "--gpu", "L4", *VLLM_FLAGS, "--enforce-eager"],
        ["which", "--gpu", "L4", *VLLM_FLAGS, "--enforce-eager"],
    ],
)
def test_every_inference_command_takes_the_engine_flags_and_names_the_release(args: list[str]) -> None:
    report = as_json(*args)
    assert report["assumptions"]["engine"] == "vLLM 0.15.1"
    if "workload" in report:
        engine = report["workload"]["engine"]
        assert report["workload"]["engine_version"] == "0.15.1"
        assert (engine["max_num_seqs"], engine["max_num_batched_tokens"], engine["enforce_eager"]) == (
            64,
            4096,
            True,
        )


def test_scheduler_flags_change_the_pool() -> None:
    small = as_json(
        "fit", "Qwen3-8B", "--gpu", "H100", "--max-num-seqs", "1", "--max-num-batched-tokens", "2048"
    )
    default = as_json("fit", "Qwen3-8B", "--gpu", "H100")
    assert small["plan"]["kv_cache_capacity_tokens"] > default["plan"]["kv_cache_capacity_tokens"]
    assert small["assumptions"]["settings"]["max_num_seqs"] == 1


def test_the_default_is_the_newest_release_and_older_ones_differ() -> None:
    newest = as_json("fit", "Qwen3-8B", "--gpu", "H100")
    old = as_json("fit", "Qwen3-8B", "--gpu", "H100", "--engine-version", "0.12.0")
    assert (
        newest["workload"]["engine_version"] == "0.33.0" and newest["workload"]["engine"]["version"] is None
    )
    assert old["assumptions"]["settings"]["gpu_memory_utilization"] == 0.9
    assert newest["assumptions"]["settings"]["gpu_memory_utilization"] == 0.92
    assert old["plan"]["kv_cache_capacity_tokens"] != newest["plan"]["kv_cache_capacity_tokens"]


def test_a_version_between_releases_uses_the_older_one_and_says_so() -> None:
    report = as_json("fit", "Qwen3-8B", "--gpu", "H100", "--engine-version", "0.19.7")
    assert report["workload"]["engine_version"] == "0.19.1"
    assert any(
        "0.19.7 is not a release gpusize knows: modelled as 0.19.1" in n
        for n in report["assumptions"]["notes"]
    )


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["--engine-version", "0.6.6"], "supported 0.7.0 to 0.34.x (default 0.33.0)"),
        (["--engine-version", "1.4"], "supported 0.7.0 to 0.34.x (default 0.33.0)"),
        (["--engine-version", "latest"], "is not a vLLM release"),
        (["--engine", "sglang", "--engine-version", "0.3.9"], "supported 0.4.0 to 0.5.x"),
        (["--engine", "llamacpp", "--engine-version", "0.19.0"], "does not apply to --engine llamacpp"),
        (["--engine", "sglang", "--max-num-seqs", "8"], "does not apply to --engine sglang"),
        (["--chunked-prefill-size", "4096"], "does not apply to --engine vllm"),
        (["--reserved-mib", "-5"], "invalid --reserved-mib"),
    ],
)
def test_bad_engine_flags_exit_2_with_one_line(args: list[str], fragment: str) -> None:
    r = run("fit", "Qwen3-8B", "--gpu", "H100", *args)
    assert r.code == 2 and r.stdout == ""
    assert fragment in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_aliases_under_the_engines_names() -> None:
    ours = as_json("fit", "Qwen3-8B", "--ctx", "16k", "--gpus", "2", "--kv-dtype", "fp8", "--gpu", "H100")
    theirs = as_json(
        "fit", "Qwen3-8B", "--max-model-len", "16k", "--tensor-parallel-size", "2", "--kv-cache-dtype", "fp8",
        "--gpu", "H100",
    )  # fmt: skip
    sglang = as_json(
        "fit", "Qwen3-8B", "--context-length", "16384", "--tp", "2", "--gpu", "H100", "--kv-dtype", "fp8"
    )
    assert ours["plan"] == theirs["plan"] and ours["plan"]["num_gpus"] == 2
    assert sglang["workload"]["context_tokens"] == 16384 and sglang["plan"]["num_gpus"] == 2


def test_vllm_flags_round_trip_into_the_launch_command() -> None:
    report = as_json(
        "serve", "Qwen3-30B-A3B", "--users", "16", "--gpu", "H100", "--tp", "2", "--engine-version", "0.15.1",
        "--max-model-len", "16k", "--max-num-seqs", "64", "--max-num-batched-tokens", "4096",
        "--enforce-eager", "--enable-expert-parallel", "--kv-cache-dtype", "fp8",
        "--gpu-memory-utilization", "0.85",
    )  # fmt: skip
    launch = report["launch"]["vllm"]
    words = launch["command"].split()
    for flag, value in [
        ("--max-model-len", "16384"),
        ("--max-num-seqs", "64"),
        ("--max-num-batched-tokens", "4096"),
        ("--kv-cache-dtype", "fp8"),
        ("--gpu-memory-utilization", "0.85"),
    ]:
        assert words[words.index(flag) + 1] == value
    assert "--enforce-eager" in words and "--enable-expert-parallel" in words
    assert launch["engine_version"] == "0.15.1"


def test_sglang_flags_round_trip_into_the_launch_command() -> None:
    report = as_json(
        "serve", "Qwen3-8B", "--users", "16", "--gpu", "H100", "--engine", "sglang",
        "--engine-version", "0.4.6", "--mem-fraction-static", "0.8", "--chunked-prefill-size", "4096",
        "--max-running-requests", "32", "--context-length", "16k",
    )  # fmt: skip
    launch = report["launch"]["sglang"]
    words = launch["command"].split()
    for flag, value in [
        ("--context-length", "16384"),
        ("--mem-fraction-static", "0.8"),
        ("--chunked-prefill-size", "4096"),
        ("--max-running-requests", "32"),
    ]:
        assert words[words.index(flag) + 1] == value
    assert launch["engine_version"] == "0.4.6"


def test_quantization_flag_changes_the_weight_format_and_travels() -> None:
    report = as_json("serve", "Qwen3-8B", "--users", "4", "--gpu", "L4", "--quantization", "fp8")
    assert report["workload"]["weight_dtype"] == "fp8"
    assert "--quantization fp8" in report["launch"]["vllm"]["command"]


def test_fp32_weights_give_fp32_kv_as_the_engines_do() -> None:
    fp32 = as_json("fit", "Qwen3-8B", "--dtype", "fp32", "--gpu", "H100")
    bf16 = as_json("fit", "Qwen3-8B", "--gpu", "H100")
    assert fp32["workload"]["kv_cache_dtype"] == "fp32"
    assert fp32["memory"]["kv_cache_bytes_per_token"] == 2 * bf16["memory"]["kv_cache_bytes_per_token"]


def test_expert_parallel_runs_the_fp8_block_checkpoint_tp8_slicing_rejects() -> None:
    # Qwen3-235B-A22B-FP8 on 8x H100 with fp8 KV started and logged its pool with EP (vLLM 0.10.0).
    sliced = run("fit", "Qwen3-235B-A22B-FP8", "--gpu", "H100", "--gpus", "8", "--kv-cache-dtype", "fp8")
    assert sliced.code == 1 and "--enable-expert-parallel keeps experts whole" in sliced.stdout
    ep = as_json(
        "fit", "Qwen3-235B-A22B-FP8", "--gpu", "H100", "--gpus", "8", "--kv-cache-dtype", "fp8",
        "--enable-expert-parallel",
    )  # fmt: skip
    assert ep["fits"] and ep["assumptions"]["settings"]["enable_expert_parallel"] == "on"


def test_reserved_memory_can_stop_vllm_from_starting() -> None:
    free = as_json("fit", "Qwen3-32B", "--gpu", "H100", "--gpus", "1")
    taken = as_json("fit", "Qwen3-32B", "--gpu", "H100", "--gpus", "1", "--reserved-mib", "7000")
    assert free["fits"] and not taken["fits"]
    assert taken["workload"]["reserved_bytes"] == 7000 * 2**20
    assert "free memory on startup" in taken["candidates"][0]["reason"]


def test_sglang_starts_with_a_pool_shorter_than_the_context_and_says_so() -> None:
    r = run(
        "fit",
        "Qwen3-32B",
        "--gpu",
        "L40S",
        "--gpus",
        "1",
        "--engine",
        "sglang",
        "--ctx",
        "40k",
        "--dtype",
        "fp8",
    )
    assert r.code == 1
    assert "SGLang starts, but" in r.stdout and "requests are capped at" in r.stdout


def test_a_fit_inside_the_models_error_says_so() -> None:
    # Qwen3-32B at 32k on one H100 (vLLM 0.33): the pool beats one request by ~1%, less than the 3% the
    # conformance records allow; the verdict stands and the warning says the next size up is the safe one.
    report = as_json("fit", "Qwen3-32B", "--ctx", "32k", "--gpu", "H100", "--gpus", "1")
    assert report["fits"]
    assert "within gpusize's 3% error" in report["plan"]["warning"]
    roomy = as_json("fit", "Qwen3-32B", "--ctx", "8k", "--gpu", "H100", "--gpus", "1")
    assert roomy["plan"]["warning"] is None
