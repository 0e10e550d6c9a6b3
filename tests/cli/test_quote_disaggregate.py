"""`quote --disaggregate` (issue 22: disaggregated prefill/decode in serve and quote) and the request
lengths a quote is sized for (`--prompt-tokens`, `--output-tokens`, shared with serve).

Each option's split is the split `serve --disaggregate` gives on the same GPUs for the same share of
the users (one function, serving/disagg.disaggregate, asked the same question), and the ranking is
the aggregated options' whether or not the splits are asked for."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.helpers import run_in_process

GPUS = ("--gpu", "H100", "--gpu", "L40S", "--gpu", "RTX-PRO-6000", "--gpu", "A100-80GB")
QUOTE = ("quote", "Llama-3.1-8B", "--users", "64", *GPUS)


def _json(*args: str) -> dict[str, Any]:
    proc = run_in_process(*args, "--json")
    assert proc.code in (0, 1), proc.stderr
    data: dict[str, Any] = json.loads(proc.stdout)
    return data


def test_each_option_s_split_is_serve_s_on_the_same_gpus() -> None:
    report = _json(*QUOTE, "--disaggregate")
    assert report["disaggregated"] is True
    fitting = [o for o in report["options"] if o["fits"]]
    assert len(fitting) == 4
    for o in fitting:
        split = o["disaggregated"]
        assert split is not None and o["servers"] == 1
        # an option of one GPU is split over two, the fewest a prefill and a decode pool take
        assert split["num_gpus"] == max(o["num_gpus"], 2)
        served = _json("serve", "Llama-3.1-8B", "--users", "64", "--gpu", o["gpu"], "--gpus",
                       str(split["num_gpus"]), "--disaggregate")  # fmt: skip
        assert split == served["disaggregated"], o["gpu"]
        if o["num_gpus"] >= 2:  # the aggregated layout compared is the option's own
            name = f"{o['replicas']} x TP={o['tensor_parallel']}"
            assert split["aggregated_layout"] == name


def test_the_ranking_and_the_options_do_not_change_with_the_splits() -> None:
    plain, split = _json(*QUOTE), _json(*QUOTE, "--disaggregate")
    assert plain["disaggregated"] is False
    assert all(o["disaggregated"] is None for o in plain["options"])
    for with_split, without in zip(split["options"], plain["options"], strict=True):
        assert {**with_split, "disaggregated": None} == without


def test_the_text_lists_each_option_s_split_and_its_verdict() -> None:
    text = " ".join(run_in_process(*QUOTE, "--disaggregate").stdout.split())
    assert "Disaggregated prefill/decode (--disaggregate; estimates, not in the ranking)" in text
    assert "- 1x RTX-PRO-6000 (split of 2 GPUs): prefill 1 x TP=1" in text
    assert text.count("disaggregation pays") + text.count("disaggregation does not pay") == 4
    assert "Disaggregated prefill/decode" not in run_in_process(*QUOTE).stdout


def test_a_split_across_servers_is_serve_s_over_the_same_link() -> None:
    args = ("Kimi-K2", "--gpu", "H200", "--nodes", "2", "--users", "50")
    (option,) = _json("quote", *args, "--disaggregate")["options"]
    assert option["nodes"] == 2 and option["disaggregated"] is not None
    assert option["disaggregated"] == _json("serve", *args, "--disaggregate")["disaggregated"]


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("quote", "Llama-3.1-8B", "--disaggregate"), "--disaggregate sizes each option's split for a load"),
        (("quote", "Llama-3.1-8B", "--users", "4", "--prompt-tokens", "lots"), "--prompt-tokens"),
    ],
)
def test_bad_requests_are_one_line_and_exit_2(args: tuple[str, ...], words: str) -> None:
    proc = run_in_process(*args)
    assert proc.code == 2 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and words in proc.stderr


def test_the_request_lengths_size_the_quote_as_they_size_serve() -> None:
    # the defaults are serve's (1k prompt, 256 output): a longer prompt lengthens the TTFT, and each
    # option's speed is serve's on its GPUs at the same lengths
    args = ("Llama-3.1-8B", "--users", "16", "--gpu", "H100")
    base = _json("quote", *args)
    assert (base["prompt_tokens"], base["output_tokens"]) == (1024, 256)
    assert (
        base["options"] == _json("quote", *args, "--prompt-tokens", "1k", "--output-tokens", "256")["options"]
    )
    long = _json("quote", *args, "--prompt-tokens", "8k", "--output-tokens", "1k", "--ctx", "16k")
    (o,) = long["options"]
    assert long["prompt_tokens"] == 8192 and o["ttft_s"] > base["options"][0]["ttft_s"]
    served = _json("serve", *args, "--gpus", str(o["num_gpus"]), "--prompt-tokens", "8k",
                   "--output-tokens", "1k", "--ctx", "16k")["recommendation"]  # fmt: skip
    for key in ("ttft_s", "per_request_tokens_per_s", "aggregate_tokens_per_s", "tensor_parallel"):
        assert o[key] == served[key], key


@pytest.mark.parametrize("command", ["serve", "quote"])
def test_a_context_that_cannot_hold_a_request_is_refused_or_grown(command: str) -> None:
    # vLLM's OpenAI server rejects a request whose prompt + max_tokens pass max_model_len (SGLang's
    # context_length alike): the plan is never sized for shorter requests than those asked about
    base = (command, "Qwen3-8B", "--users", "10", "--gpu", "H100", "--prompt-tokens", "16k")
    refused = run_in_process(*base, "--ctx", "8k")
    assert refused.code == 2 and refused.stdout == "" and refused.stderr.count("\n") == 1
    assert (
        "a request of 16,640 tokens (--prompt-tokens + --output-tokens) does not fit the 8,192"
        in refused.stderr
    )
    grown = run_in_process(*base, "--json")
    assert grown.code in (0, 1)
    assert json.loads(grown.stdout)["workload"]["context_tokens"] == 16_640
    assert "--ctx not given: sized at 16,640 tokens, one request's prompt + output" in grown.stderr
    past = run_in_process(command, "Qwen3-8B", "--users", "10", "--prompt-tokens", "200k")
    assert past.code == 2 and "longer than the model's 40,960-token max_position_embeddings" in past.stderr


@pytest.mark.parametrize("command", ["serve", "quote"])
def test_data_parallel_attention_says_what_its_speed_models(command: str) -> None:
    # the decode step and the prefill are the attention groups' (serving/throughput):
    # the answer says so, and says nothing without the setting
    base = (command, "DeepSeek-V3", "--gpu", "H200", "--users", "64", "--engine", "sglang")
    if command == "serve":
        base = (*base, "--gpus", "8")
    words = "--enable-dp-attention --dp-size 8: the decode step is modelled per attention group"
    asked = _json(*base, "--enable-dp-attention", "--dp-size", "8")
    assert any(words in n for n in asked["assumptions"]["notes"])
    assert any("attention prefills on its own group's GPUs" in n for n in asked["assumptions"]["notes"])
    assert not any("modelled per attention group" in n for n in _json(*base)["assumptions"]["notes"])


@pytest.mark.parametrize(
    "flags", [("--enable-expert-parallel",), ("--engine", "trtllm", "--ep_size", "2")], ids=["vllm", "trtllm"]
)
def test_expert_parallel_on_one_server_says_its_speed_is_not_modelled(flags: tuple[str, ...]) -> None:
    base = ("serve", "Qwen3-30B-A3B", "--gpu", "H100", "--gpus", "2", "--users", "8")
    notes = _json(*base, *flags)["assumptions"]["notes"]
    assert any(n.startswith("expert parallel is sized for memory only") for n in notes)
    assert not any("expert parallel is sized" in n for n in _json(*base)["assumptions"]["notes"])


def test_a_split_without_a_written_launch_says_so() -> None:
    # gpusize writes P/D workers as NVIDIA Dynamo runs them for vLLM only: SGLang's split is sized,
    # and the launch says it is not written (it printed the aggregated command alone)
    args = ("serve", "Llama-3.1-8B", "--users", "64", "--gpu", "H100", "--gpus", "8", "--engine", "sglang")
    report = _json(*args, "--disaggregate")
    assert report["disaggregated"] is not None
    launch = report["launch"]["prefill"]
    assert launch["command"] is None and "not for SGLang: its own P/D launch is not written" in launch["note"]
