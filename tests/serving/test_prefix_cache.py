"""--prefix-hit-rate: prompt tokens served by the engine's prefix cache (vLLM's automatic prefix caching,
SGLang's radix cache, llama-server's slot cache) are not prefilled; memory is unchanged. A workload
input declared once (cli/options.py), carried in `Demand`."""

from __future__ import annotations

import json

import pytest

from gpusize.serving.layouts import Demand
from gpusize.serving.throughput import prefill_seconds
from gpusize.sources.catalog import find_gpu
from tests.helpers import catalog_spec, run_in_process, workload

MODEL = "Llama-3.1-8B"


def test_a_cached_prefix_is_not_computed_but_is_attended_to() -> None:
    """Worked example: 8,192-token prompt, 6,144 cached. Dense work scales with the 2,048 new tokens;
    attention: each new token attends to the 6,144 cached keys plus half the new ones on average
    (4 x width flops per pair), so the attention part is 2,048 x 7,168 / (8,192 x 4,096) = 0.4375 of
    a full prefill's while the dense part is 0.25."""
    spec, h100 = catalog_spec(MODEL), find_gpu("H100")
    work = workload(spec, 16384)
    full = prefill_seconds(spec, work, h100, 1, 8192)
    part = prefill_seconds(spec, work, h100, 1, 8192, cached=6144)
    dense_only = prefill_seconds(spec, work, h100, 1, 1)  # ~ one token: 1/8192 of the dense part
    assert full and part and dense_only
    dense = dense_only * 8192
    attention = full - dense
    assert part == pytest.approx(0.25 * dense + 0.4375 * attention, rel=1e-3)
    assert prefill_seconds(spec, work, h100, 1, 8192, cached=0) == full


def test_the_last_prompt_token_is_always_computed() -> None:
    demand = Demand(users=1, prefix_hit_rate=1.0)
    assert demand.cached_tokens(1000) == 999
    assert Demand(users=1, prefix_hit_rate=0.5).cached_tokens(1000) == 500
    assert Demand(users=1).cached_tokens(1000) == 0


def _layout(*extra: str) -> dict[str, float]:
    args = ("serve", MODEL, "--users", "16", "--gpu", "H100", "--gpus", "1", "--prompt-tokens", "8k")
    result = run_in_process(*args, "--ctx", "16k", *extra, "--json")
    assert result.code == 0, result.stderr
    data = json.loads(result.stdout)
    return {**data["layouts"][0], "rate": data["demand"]["prefix_hit_rate"], "note": data["assumptions"]}


def test_serve_a_hit_rate_lowers_ttft_and_raises_throughput_not_memory() -> None:
    plain, cached = _layout(), _layout("--prefix-hit-rate", "0.75")
    assert (
        cached["ttft_s"] < plain["ttft_s"]
        and cached["aggregate_tokens_per_s"] > plain["aggregate_tokens_per_s"]
    )
    assert cached["kv_cache_capacity_tokens"] == plain["kv_cache_capacity_tokens"]
    assert (plain["rate"], cached["rate"]) == (0.0, 0.75)
    assert "75% of each prompt's tokens served by vLLM's automatic prefix caching" in str(cached["note"])
    assert "prefix" not in str(plain["note"]["throughput"])


def test_quote_carries_the_hit_rate() -> None:
    args = ("quote", MODEL, "--users", "16", "--gpu", "H100", "--json")
    plain = json.loads(run_in_process(*args).stdout)
    cached = json.loads(run_in_process(*args, "--prefix-hit-rate", "0.5", "--engine", "sglang").stdout)
    assert cached["prefix_hit_rate"] == 0.5 and plain["prefix_hit_rate"] == 0.0
    assert "radix cache" in cached["assumptions"]["throughput"]


@pytest.mark.parametrize("value", ["-0.1", "1.5", "nan"])
def test_a_rate_outside_zero_to_one_is_refused(value: str) -> None:
    result = run_in_process("serve", MODEL, "--users", "4", "--prefix-hit-rate", value)
    assert result.code == 2 and result.stderr.count("\n") == 1 and "--prefix-hit-rate" in result.stderr
    assert result.stdout == ""
