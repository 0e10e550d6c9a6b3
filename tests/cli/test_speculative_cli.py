"""Speculative decoding on the command line (in process, tests.helpers.run_in_process): every inference
command takes vLLM's --speculative-config and SGLang's --speculative-* flags (before, `--speculative-config`
was "No such option", exit 2), the draft model is read as any model is, the JSON names each reserve in
bytes, and the launch command carries the flags back."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import run_in_process

DRAFT = str(Path(__file__).resolve().parents[1] / "data" / "drafts" / "EAGLE3-LLaMA3.1-Instruct-8B")
EAGLE3 = json.dumps({"method": "eagle3", "model": DRAFT, "num_speculative_tokens": 3})
NGRAM = '{"method": "ngram", "num_speculative_tokens": 3}'
SGLANG = (
    "--engine", "sglang", "--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path", DRAFT,
    "--speculative-num-steps", "3", "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "4",
)  # fmt: skip


def as_json(*args: str) -> dict[str, Any]:
    r = run_in_process(*args, "--json")
    assert r.code in (0, 1), r.stderr
    out: dict[str, Any] = json.loads(r.stdout)
    return out


@pytest.mark.parametrize(
    "args",
    [
        ["fit", "Llama-3.1-8B", "--gpu", "H100"],
        ["serve", "Llama-3.1-8B", "--gpu", "H100", "--users", "4"],
        ["quote", "Llama-3.1-8B", "--gpu", "H100"],
        ["curve", "Llama-3.1-8B", "--gpu", "H100"],
        ["which", "--gpu", "H100"],
    ],
)
@pytest.mark.parametrize("flags", [("--speculative-config", EAGLE3), SGLANG], ids=["vllm", "sglang"])
def test_every_inference_command_takes_the_speculative_flags(args: list[str], flags: tuple[str, ...]) -> None:
    report = as_json(*args, *flags)
    if "workload" in report:
        engine = report["workload"]["engine"]
        assert engine.get("speculative_config") == EAGLE3 or engine.get("speculative_algorithm") == "EAGLE3"


def test_fit_json_names_each_reserve_in_bytes() -> None:
    report = as_json("fit", "Llama-3.1-8B", "--gpu", "H100", "--ctx", "8k", "--speculative-config", EAGLE3)
    reserves = {r["name"]: r for r in report["memory"]["reserves"]}
    assert reserves["draft_weights"]["bytes"] == 849_371_136 and not reserves["draft_weights"]["outside"]
    assert reserves["draft_buffers"]["bytes"] == 134_348_800
    assert {r["name"] for r in report["plan"]["per_gpu"]["reserves"]} == {"draft_weights", "draft_buffers"}
    plain = as_json("fit", "Llama-3.1-8B", "--gpu", "H100", "--ctx", "8k")
    assert report["plan"]["kv_cache_capacity_tokens"] < plain["plan"]["kv_cache_capacity_tokens"]
    assert any("draft's attention layers add 4,096 B per token" in n for n in report["assumptions"]["notes"])


def test_sglang_json_marks_the_draft_outside_the_budget_before_0_5_14() -> None:
    args = ("fit", "Llama-3.1-8B", "--gpu", "H100", "--ctx", "8k", *SGLANG)
    report = as_json(*args, "--engine-version", "0.5.10")
    reserves = {r["name"]: r for r in report["plan"]["per_gpu"]["reserves"]}
    assert reserves["draft_weights"]["outside"] and reserves["draft_kv"]["outside"]
    newest = as_json(*args)
    assert [(r["name"], r["outside"]) for r in newest["plan"]["per_gpu"]["reserves"]] == [
        ("draft_weights", False)
    ]
    assert any("also holds the draft's 1 layer(s)" in n for n in newest["assumptions"]["notes"])
    assert reserves["draft_kv"]["bytes"] % 4_096 == 0


def test_ngram_needs_no_draft_and_changes_nothing_on_the_gpu() -> None:
    report = as_json("fit", "Llama-3.1-8B", "--gpu", "H100", "--speculative-config", NGRAM)
    plain = as_json("fit", "Llama-3.1-8B", "--gpu", "H100")
    assert report["memory"]["reserves"] == []
    assert report["plan"]["kv_cache_capacity_tokens"] == plain["plan"]["kv_cache_capacity_tokens"]


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        ('{"method": "eagle3",', "--speculative-config: not valid JSON"),
        ('{"method": "medusa", "num_speculative_tokens": 2}', "method 'medusa' is not modelled"),
        (
            '{"method": "eagle", "model": "No-Such-Draft-Xyz", "num_speculative_tokens": 2}',
            "draft model: unknown",
        ),
    ],
)
def test_a_bad_speculative_config_exits_2_with_one_line(value: str, fragment: str) -> None:
    r = run_in_process("fit", "Llama-3.1-8B", "--gpu", "H100", "--speculative-config", value)
    assert r.code == 2 and r.stdout == ""
    assert fragment in r.stderr and r.stderr.count("\n") == 1


def test_a_vllm_flag_under_sglang_is_refused() -> None:
    r = run_in_process(
        "fit", "Llama-3.1-8B", "--gpu", "H100", "--engine", "sglang", "--speculative-config", NGRAM
    )
    assert r.code == 2 and "--speculative-config is a setting of --engine vllm" in r.stderr


def test_the_launch_commands_carry_the_flags_back() -> None:
    vllm = as_json("serve", "Llama-3.1-8B", "--gpu", "H100", "--users", "4", "--speculative-config", EAGLE3)
    words = shlex.split(vllm["launch"]["vllm"]["command"])
    assert json.loads(words[words.index("--speculative-config") + 1]) == json.loads(EAGLE3)
    sglang = as_json("serve", "Llama-3.1-8B", "--gpu", "H100", "--users", "4", *SGLANG)
    words = shlex.split(sglang["launch"]["sglang"]["command"])
    for flag, value in zip(SGLANG[2::2], SGLANG[3::2], strict=True):
        assert words[words.index(flag) + 1] == value


def test_serve_takes_a_stated_acceptance_rate() -> None:
    args = ("serve", "Llama-3.1-8B", "--gpu", "H100", "--users", "8", "--speculative-config", EAGLE3)
    plain = as_json(*args)["layouts"][0]["per_request_tokens_per_s"]
    report = as_json(*args, "--acceptance-rate", "0.7")
    assert report["workload"]["acceptance_rate"] == 0.7
    assert report["layouts"][0]["per_request_tokens_per_s"] > 1.5 * plain
    quote = run_in_process(
        "quote", "Llama-3.1-8B", "--gpu", "H100", "--speculative-config", NGRAM, "--acceptance-rate", "0.5"
    )
    assert quote.code in (0, 1), quote.stderr
    alone = run_in_process(
        "serve", "Llama-3.1-8B", "--gpu", "H100", "--users", "8", "--acceptance-rate", "0.7"
    )
    assert alone.code == 2 and "--acceptance-rate needs speculative decoding" in alone.stderr
