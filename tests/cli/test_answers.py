"""Answers a person can act on: a fix when it does not fit, numbers that agree between commands, the
best model for a GPU, servers for a load, buy versus rent. Every command runs in this process
(tests.helpers.cli)."""

from __future__ import annotations

import json
import math
import re
from typing import Any

import pytest

from gpusize.serving.which import generation
from tests.conftest import ROOT
from tests.helpers import cli as run


def as_json(*args: str) -> tuple[int, dict[str, Any]]:
    r = run(*args, "--json")
    assert r.code in (0, 1), r.stderr
    data: dict[str, Any] = json.loads(r.stdout)
    return r.code, data


def flags(suggestion: dict[str, Any]) -> list[str]:
    out: list[str] = []
    for c in suggestion["changes"]:
        out += [c["flag"], c["value"]] if c["value"] else [c["flag"]]
    return out


# --------------------------------------------------------------------------- fit: what would fit

FIT_70B = ("fit", "Llama-3.3-70B", "--gpu", "RTX3090", "--gpus", "2", "--ctx", "8k")


def test_does_not_fit_ends_with_computed_fixes_that_fit_when_run() -> None:
    code, data = as_json(*FIT_70B)
    assert code == 1 and not data["fits"]
    found = data["suggestions"]
    changes = [{(c["flag"], c["value"]) for c in s["changes"]} for s in found]
    assert {("--dtype", "int4")} in changes
    assert any(("--tensor-parallel-size", "4") in c for c in changes)
    assert any(("--tensor-parallel-size", "8") in c for c in changes)
    priced = [s["usd_per_hour"] for s in found if s["usd_per_hour"] is not None]
    assert priced == sorted(priced)  # cheapest first
    assert all(s["fits"] and s["kv_cache_capacity_tokens"] for s in found)
    for s in found:  # each suggestion, run as printed, fits
        r = run(*FIT_70B, *flags(s), "--quiet")
        assert r.code == 0, (s["summary"], r.stderr)
    text = run(*FIT_70B).stdout
    tail = text[text.index("Would fit") :]
    assert "--dtype int4" in tail and "pre-quantized" in tail and "--tensor-parallel-size 8" in tail


def test_pinned_gpus_beyond_need_say_runs_on_and_needs() -> None:
    r = run("fit", "Qwen3-8B", "--gpu", "H100", "--gpus", "8")
    assert r.code == 0
    assert "runs on 8x NVIDIA H100 SXM5 80GB (needs 1x" in r.stdout.splitlines()[0]
    _, data = as_json("fit", "Qwen3-8B", "--gpu", "H100", "--gpus", "8")
    assert data["plan"]["num_gpus"] == 8 and data["min_gpus"] == 1


def test_nodes_show_the_pipeline_degree_and_a_real_largest_context() -> None:
    args = ("fit", "Llama-3.1-405B-Instruct", "--gpu", "H100", "--ctx", "32k", "--nodes", "2")
    r = run(*args)
    assert r.code == 0
    assert "TP=8 x PP=2" in r.stdout.splitlines()[0] and "16 (TP=8xPP=2)" in r.stdout
    assert "largest context that fits 131,072 tokens" in r.stdout.replace("\n  ", " ")
    _, data = as_json(*args)
    plan = data["plan"]
    assert plan["pipeline_parallel"] == 2 and plan["tensor_parallel"] == 8
    assert plan["max_context_tokens"] == 131072


def test_h100_needing_two_where_an_a100_fits_one_is_explained() -> None:
    args = ("fit", "Qwen3-32B", "--ctx", "32k", "--engine-version", "0.19.1")
    code, data = as_json(*args)
    assert code == 0
    h100 = [s for s in data["suggestions"] if s["gpu"] == "H100-SXM"]
    assert h100 and h100[0]["num_gpus"] == 1
    assert [c["flag"] for c in h100[0]["changes"]] == ["--gpu", "--max-num-seqs"]  # names its type
    assert "1024 sequences" in h100[0]["note"] and "A100" in h100[0]["note"]
    r = run(*args, *flags(h100[0]), "--quiet")
    assert r.code == 0
    text = run(*args).stdout.replace("\n  ", " ")
    assert (
        "Fewer GPUs of the same type with a setting" in text
        and "--max-num-seqs" in text
        and "scheduler defaults" in text
    )


def test_context_above_the_maximum_names_the_yarn_flag() -> None:
    r = run("fit", "Qwen3-235B-A22B", "--ctx", "128k")
    assert r.code == 2 and "--rope-scaling yarn:4:32768" in r.stderr
    assert run("fit", "Qwen3-235B-A22B", "--ctx", "128k", "--rope-scaling", "yarn:4:32768").code == 0


# --------------------------------------------------------------------------- train


def test_train_lora_does_not_suggest_lora_and_its_fixes_fit() -> None:
    args = ("train", "Llama-3.3-70B", "--method", "lora", "--gpu", "RTX4090", "--seq", "4k")
    code, data = as_json(*args)
    assert code == 1
    assert all("--method lora" not in (c["reason"] or "") for c in data["candidates"])
    found = data["suggestions"]
    assert found and all(
        ("--method", "lora") not in {(c["flag"], c["value"]) for c in s["changes"]} for s in found
    )
    assert any(("--method", "qlora") in {(c["flag"], c["value"]) for c in s["changes"]} for s in found)
    for s in found:
        assert run(*args, *flags(s), "--quiet").code == 0, s["summary"]


# --------------------------------------------------------------------------- which


@pytest.fixture(scope="module")
def which_4090() -> dict[str, Any]:
    _, data = as_json("which", "--gpu", "RTX4090", "--gpus", "2", "--ctx", "32k")
    return data


def test_which_and_fit_agree_on_the_same_hardware(which_4090: dict[str, Any]) -> None:
    rows = {m["name"]: m for m in which_4090["models"]}
    for name in ("Qwen3-8B", "Llama-3.1-8B", "gpt-oss-20b"):
        row = rows[name]
        _, fit = as_json("fit", name, "--gpu", "RTX4090", "--gpus", "2", "--ctx", "32k")
        assert row["tensor_parallel"] == fit["plan"]["tensor_parallel"] == 2
        assert row["kv_cache_capacity_tokens"] == fit["plan"]["kv_cache_capacity_tokens"]
    built = next(m for m in which_4090["models"] if m["fits"] and m["changes"])
    extra = [x for c in built["changes"] for x in (c["flag"], c["value"])]
    _, fit = as_json("fit", built["name"], "--gpu", "RTX4090", "--gpus", "2", "--ctx", "32k", *extra)
    assert fit["fits"] and fit["plan"]["kv_cache_capacity_tokens"] == built["kv_cache_capacity_tokens"]


def test_which_sorts_by_capability_and_tries_quantized_builds(which_4090: dict[str, Any]) -> None:
    fitting = [m for m in which_4090["models"] if m["fits"]]
    # the capability rule (serving/which.SORTS): newest half-year first, then size within it
    gens = [generation(m["released"]) for m in fitting]
    keys = [
        (g is not None, g or 0, m["params_total"], m["params_active"])
        for g, m in zip(gens, fitting, strict=True)
    ]
    assert keys == sorted(keys, reverse=True)
    assert fitting[0]["params_total"] > 20e9  # a quantized build of a recent large model, not SmolLM
    assert any(m["weight_dtype"] == "int4" and m["changes"] for m in fitting)
    assert all(m["replicas"] * m["tensor_parallel"] == 2 for m in fitting)


def test_which_says_why_models_do_not_fit_without_all() -> None:
    text = run("which", "--gpu", "RTX4090", "--gpus", "2", "--ctx", "32k").stdout.replace("\n  ", " ")
    assert "catalog models do not fit; the nearest:" in text and "--all lists them all" in text
    assert "[int4]: its own weights do not fit" in text


# --------------------------------------------------------------------------- quote


def test_quote_for_5000_users_ranks_by_price_per_user_with_server_counts() -> None:
    _, data = as_json("quote", "Llama-3.3-70B", "--ctx", "8k", "--users", "5000")
    fitting = [o for o in data["options"] if o["fits"]]
    # those meeting the per-user speed floor on a safe margin first, then thin, then the rest
    tiers = [(not o["meets_targets"], o["thin_margin"]) for o in fitting]
    assert tiers == sorted(tiers)
    for tier in set(tiers):
        same = [o["usd_per_user_hour"] for o, t in zip(fitting, tiers, strict=True) if t == tier]
        priced = [p for p in same if p is not None]
        assert priced == sorted(priced)
    assert sum(o["usd_per_user_hour"] is not None for o in fitting) >= 5
    for o in fitting:
        assert o["servers"] * o["capacity_sequences"] >= 5000 and o["serves_all"]
        # no server more than needed, but one for a safe margin (within 3% of the load: thin)
        assert (o["servers"] - 1) * o["capacity_sequences"] < 5000 * 1.03
        if o["fleet_usd_per_hour"]:
            assert o["fleet_usd_per_hour"] == pytest.approx(o["servers"] * o["usd_per_hour"])
    assert data["recommendation"]["gpu"] == fitting[0]["gpu"]
    text = run("quote", "Llama-3.3-70B", "--ctx", "8k", "--users", "5000").stdout
    assert "Serving 5,000 users at once" in text and " servers, no queueing, $" in text


def test_quote_buy_versus_rent_break_even_follows_the_utilization() -> None:
    _, full = as_json("quote", "Qwen3-8B", "--gpu", "H100", "--gpu", "RTX4090")
    _, half = as_json("quote", "Qwen3-8B", "--gpu", "H100", "--gpu", "RTX4090", "--utilization-hours", "365")
    for a, b in zip(full["options"], half["options"], strict=True):
        assert a["purchase_usd"] and a["purchase_price_date"]
        months = a["purchase_usd"] / (a["usd_per_hour"] * 730)
        assert a["break_even_months"] == pytest.approx(months)
        assert b["break_even_months"] == pytest.approx(2 * months)
    assert half["assumptions"]["utilization_hours"] == 365
    text = run("quote", "Qwen3-8B", "--gpu", "H100").stdout.replace("\n  ", " ")
    assert "Buy versus rent (730 h a month" in text and "break-even in month" in text
    assert math.isfinite(full["options"][0]["break_even_months"])


def test_quote_assumptions_describe_the_server_sizes_shown() -> None:
    _, data = as_json("quote", "Qwen3-8B", "--gpu", "RTX-PRO-6000", "--users", "200")
    layout = data["assumptions"]["layout"]
    assert "smallest GPU count that runs the model" not in layout
    assert "holds every user at once" in layout
    assert "$/hour, $/month, power and tok/s are per server" in data["assumptions"]["prices"]


def test_readme_fix_example_is_the_real_tail() -> None:
    text = (ROOT / "README.md").read_text()
    pattern = (
        r"```text\n\$ NO_COLOR=1 COLUMNS=100 gpusize (fit Llama-3.3-70B .+?) \| tail -n (\d+)\n(.*?)\n```"
    )
    block = re.search(pattern, text, re.S)
    assert block, "README fix example missing"
    out = run(*block.group(1).split(), env={"COLUMNS": "100"})
    assert out.code == 1
    assert out.stdout.rstrip("\n").split("\n")[-int(block.group(2)) :] == block.group(3).split("\n")
