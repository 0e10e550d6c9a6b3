"""serve / quote / train --nodes through the CLI (in process): the issue's done-when cases and the
refusals of bad link options."""

from __future__ import annotations

import json

import pytest

from tests.helpers import run_in_process


@pytest.mark.parametrize("model", ["DeepSeek-V3", "DeepSeek-R1", "Llama-3.1-405B", "Kimi-K2"])
def test_serve_two_nodes_gives_a_multi_node_layout_with_the_network(model: str) -> None:
    proc = run_in_process("serve", model, "--gpu", "H200", "--users", "50", "--nodes", "2", "--json")
    assert proc.code == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["num_gpus"] == 16 and data["nodes"]["nodes"] == 2
    assert data["nodes"]["link"] == {
        "kind": "ib",
        "gbytes_per_s": 50.0,
        "source": "one 400 Gb/s NIC per GPU, as NVIDIA's DGX reference server for H200-SXM",
    }
    pick = data["recommendation"]
    assert pick["serves_all"] and pick["nodes"] == 2 and pick["headroom_bytes"] > 0
    spanning = [x for x in data["layouts"] if x["gpus_per_replica"] == 16 and x["fits"]]
    assert spanning and all("per GPU" in x["network"] for x in spanning)
    text = run_in_process("serve", model, "--gpu", "H200", "--users", "50", "--nodes", "2").stdout
    assert "Layouts over 2 servers" in text and "InfiniBand 50 GB/s (400 Gb/s) per GPU" in text


@pytest.mark.parametrize("model", ["DeepSeek-V3", "Llama-3.1-405B", "Kimi-K2"])
def test_quote_two_nodes_gives_multi_node_options(model: str) -> None:
    proc = run_in_process(
        "quote", model, "--gpu", "H200", "--gpu", "B200", "--users", "50", "--nodes", "2", "--json"
    )
    assert proc.code == 0, proc.stderr
    data = json.loads(proc.stdout)
    for option in data["options"]:
        assert option["num_gpus"] == 16 and option["nodes"] == 2 and option["network"]
    assert data["recommendation"]["fits"] and data["recommendation"]["weights_bytes"] > 0


def test_train_405b_full_on_four_nodes_answers_memory_and_time() -> None:
    proc = run_in_process(
        "train",
        "Llama-3.1-405B",
        "--method",
        "full",
        "--nodes",
        "4",
        "--gpu",
        "H100",
        "--tokens",
        "1B",
        "--json",
    )
    assert proc.code in (0, 1), proc.stderr
    data = json.loads(proc.stdout)
    plan = data["plan"]
    assert plan["num_gpus"] == 32 and plan["per_gpu"]["device_bytes"] > 0
    step = data["nodes"]
    assert step["num_gpus"] == 32 and step["sharding"] == "fsdp"
    assert 0 < step["step_s_low"] <= step["step_s_high"]
    assert step["hours_low"] > 0 and step["cost_usd_low"] > 0
    text = run_in_process(
        "train", "Llama-3.1-405B", "--method", "full", "--nodes", "4", "--gpu", "H100", "--tokens", "1B"
    ).stdout
    assert "Across 4 servers (32 GPUs, fsdp" in text


def test_train_hsdp_shards_inside_a_server() -> None:
    proc = run_in_process(
        "train",
        "Llama-3.1-70B",
        "--method",
        "full",
        "--nodes",
        "2",
        "--sharding",
        "hsdp",
        "--gpu",
        "H100",
        "--json",
    )
    assert proc.code in (0, 1), proc.stderr
    step = json.loads(proc.stdout)["nodes"]
    assert step["sharding"] == "hsdp" and step["shard_gpus"] == 8


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("serve", "Qwen3-8B", "--users", "4", "--nodes", "1"), "invalid --nodes 1"),
        (("serve", "Qwen3-8B", "--users", "4", "--interconnect", "ib"), "describe the link of --nodes"),
        (
            ("serve", "Qwen3-8B", "--users", "4", "--nodes", "2", "--interconnect", "myrinet"),
            "--interconnect",
        ),
        (("serve", "Qwen3-8B", "--users", "4", "--nodes", "2", "--gpus", "3"), "invalid --gpus 3"),
        (("quote", "Qwen3-8B", "--gpus", "4"), "--gpus sets each server of --nodes N"),
        (("quote", "Qwen3-8B", "--nodes", "2", "--gpus", "6"), "invalid --gpus 6"),
        (("serve", "Qwen3-8B", "--users", "4", "--nodes", "2", "--node-bandwidth", "-1"), "--node-bandwidth"),
        (("train", "Qwen3-8B", "--method", "lora", "--sharding", "hsdp"), "give --nodes"),
        (("train", "Qwen3-8B", "--method", "lora", "--sharding", "none", "--nodes", "2"), "--sharding"),
    ],
)
def test_bad_node_options_are_one_line_exit_2(args: tuple[str, ...], words: str) -> None:
    proc = run_in_process(*args)
    assert proc.code == 2 and proc.stdout == ""
    assert words in proc.stderr and proc.stderr.count("\n") == 1


def test_curve_two_nodes_draws_the_pipeline_plan() -> None:
    """curve --nodes: TP=8 x PP=2 over 16 GPUs, the same KV pool as fit --nodes 2 at 8k."""
    data = json.loads(
        run_in_process("curve", "DeepSeek-V3", "--gpu", "H100", "--nodes", "2", "--json").stdout
    )
    assert data["num_gpus"] == 16 and data["nodes"]["link"]["kind"] == "ib"
    fit = json.loads(
        run_in_process("fit", "DeepSeek-V3", "--gpu", "H100", "--nodes", "2", "--ctx", "8k", "--json").stdout
    )
    at_8k = next(p for p in data["points"] if p["context_tokens"] == 8192)
    assert at_8k["max_concurrency"] == fit["candidates"][-1]["max_concurrency"]
    refused = run_in_process("curve", "DeepSeek-V3", "--gpu", "H100", "--nodes", "2", "--engine", "sglang")
    assert refused.code == 2 and "modelled for vLLM" in refused.stderr


def test_serve_disaggregate_states_the_split_and_the_comparison() -> None:
    args = ("serve", "Llama-3.1-8B", "--gpu", "H100", "--gpus", "8", "--rps", "10", "--prompt-tokens", "8k")
    proc = run_in_process(*args, "--ctx", "16k", "--disaggregate", "--json")
    assert proc.code in (0, 1), proc.stderr
    d = json.loads(proc.stdout)["disaggregated"]
    assert d["prefill"]["role"] == "prefill" and d["decode"]["role"] == "decode"
    assert d["aggregated_layout"] and d["verdict"]
    text = run_in_process(*args, "--ctx", "16k", "--disaggregate").stdout
    assert "Disaggregated (estimate): prefill" in text and "Disaggregation " in text
    assert json.loads(run_in_process(*args, "--ctx", "16k", "--json").stdout)["disaggregated"] is None


def test_disaggregate_refuses_one_gpu_and_layer_split_engines() -> None:
    one = run_in_process("serve", "Qwen3-8B", "--users", "4", "--gpus", "1", "--disaggregate")
    assert one.code == 2 and "at least 2 GPUs" in one.stderr
    cpp = run_in_process("serve", "Qwen3-8B", "--users", "4", "--engine", "llamacpp", "--disaggregate")
    assert cpp.code == 2 and "--disaggregate" in cpp.stderr


def test_the_disaggregated_comparison_names_the_aggregated_layout_as_the_table_does() -> None:
    # the aggregated layout it is compared with is the recommendation, named as every layout is
    # (serving.layouts.layout_name): across servers a DP x EP layout, not "1 x TP=1"
    # 150 users: where DP x EP is the recommendation (at 100, TP=8 x PP=2 is, since Hopper's prefill
    # and the routed experts' GEMMs have MFUs of their own, 2026-12-04; at 50 before)
    args = ("serve", "Kimi-K2", "--gpu", "H200", "--nodes", "2", "--users", "150", "--disaggregate")
    report = json.loads(run_in_process(*args, "--json").stdout)
    pick = report["recommendation"]
    assert (pick["replicas"], pick["expert_parallel"]) == (1, 16)
    assert report["disaggregated"]["aggregated_layout"] == "1 x DP=16 x EP=16"
    assert "aggregated 1 x DP=16 x EP=16:" in " ".join(run_in_process(*args).stdout.split())


def test_power_across_servers_is_each_server_s_own() -> None:
    # two servers of 8 H200s each carry their own power supplies and PCIe lanes: the figures are one
    # 8-GPU server's (economics.power_plan), never one 16-GPU server's
    one = json.loads(run_in_process("serve", "DeepSeek-R1", "--gpu", "H200", "--gpus", "8", "--users", "50",
                                    "--json").stdout)["power"]  # fmt: skip
    args = ("serve", "DeepSeek-R1", "--gpu", "H200", "--nodes", "2", "--users", "50")
    two = json.loads(run_in_process(*args, "--json").stdout)["power"]
    assert one["servers"] == 1 and two["servers"] == 2
    for key in ("gpu_tdp_w", "total_w_high", "psu_capacity_w", "psu_layout", "pcie_lanes"):
        assert two[key] == one[key]
    assert "Power, each of 2 servers: GPUs 5,600 W" in " ".join(run_in_process(*args).stdout.split())
    quote = json.loads(
        run_in_process("quote", "DeepSeek-V3", "--nodes", "2", "--users", "40", "--json").stdout
    )
    h200 = next(o for o in quote["options"] if o["gpu"] == "H200-SXM")
    assert h200["num_gpus"] == 16 and h200["power_w"] == one["total_w_high"]
    text = " ".join(run_in_process("quote", "DeepSeek-V3", "--nodes", "2", "--users", "40").stdout.split())
    assert "price and tok/s for the 2 servers, power and PSU per server" in text
    assert "GPUs only, for the 2 servers of an option" in text


def _words(command: str) -> list[str]:
    import shlex

    return shlex.split(command)


def test_servers_of_fewer_gpus_take_their_own_tensor_parallel_size() -> None:
    # --nodes N --gpus G: N servers of G GPUs (the "a node's GPU count"); a replica stays
    # inside one server, one engine over them all is TP=G x PP=N or TP=G*N, and the launch says so
    args = ("serve", "Llama-3.1-405B", "--gpu", "H100", "--nodes", "4", "--gpus", "4", "--users", "10")
    report = json.loads(run_in_process(*args, "--json").stdout)
    assert report["nodes"]["gpus_per_node"] == 4 and report["num_gpus"] == 16
    layouts = report["layouts"]
    assert all(x["gpus_per_replica"] <= 4 or x["gpus_per_replica"] == 16 for x in layouts)
    assert all(x["tensor_parallel"] <= 4 for x in layouts if x["replicas"] > 1 or x["pipeline_parallel"] > 1)
    (pp,) = [x for x in layouts if x["pipeline_parallel"] > 1]
    assert (pp["tensor_parallel"], pp["pipeline_parallel"]) == (4, 4)
    assert any(x["tensor_parallel"] == 16 for x in layouts)
    pick = report["recommendation"]
    words = _words(report["launch"]["vllm"]["command"])
    assert words[words.index("--tensor-parallel-size") + 1] == str(pick["tensor_parallel"])
    if pick["pipeline_parallel"] > 1:
        assert words[words.index("--pipeline-parallel-size") + 1] == str(pick["pipeline_parallel"])
    text = " ".join(run_in_process(*args).stdout.split())
    assert "4 servers of 4 GPUs" in text and "Power, each of 4 servers: GPUs 2,800 W" in text


def test_fit_and_curve_over_servers_of_two_gpus_are_tp2_x_pp2() -> None:
    fit = json.loads(
        run_in_process(
            "fit", "Llama-3.3-70B", "--gpu", "L40S", "--gpus", "2", "--nodes", "2", "--json"
        ).stdout
    )
    plan = fit["plan"]
    assert (plan["tensor_parallel"], plan["pipeline_parallel"], plan["num_gpus"]) == (2, 2, 4)
    curve = json.loads(
        run_in_process(
            "curve", "Llama-3.3-70B", "--gpu", "L40S", "--gpus", "2", "--nodes", "2", "--json"
        ).stdout
    )
    assert curve["num_gpus"] == 4 and curve["nodes"]["gpus_per_node"] == 2
    at_8k = next(p for p in curve["points"] if p["context_tokens"] == 8192)
    assert at_8k["max_concurrency"] == plan["max_concurrency"]


@pytest.mark.parametrize(("per_node", "gbytes"), [("8", 1.5625), ("4", 3.125), ("2", 6.25)])
def test_a_shared_nic_is_split_over_the_server_s_own_gpus(per_node: str, gbytes: float) -> None:
    # network.SHARED_ETHERNET_GBIT_PER_NODE: one 100 GbE NIC per server without a reference fabric
    args = (
        "serve",
        "Qwen3-8B",
        "--gpu",
        "L40S",
        "--nodes",
        "2",
        "--gpus",
        per_node,
        "--users",
        "8",
        "--json",
    )
    link = json.loads(run_in_process(*args).stdout)["nodes"]["link"]
    assert link["kind"] == "ethernet" and link["gbytes_per_s"] == gbytes


def test_train_and_deploy_over_servers_of_four_gpus() -> None:
    train = json.loads(
        run_in_process(
            "train",
            "Llama-3.1-8B",
            "--method",
            "full",
            "--gpu",
            "H100",
            "--nodes",
            "2",
            "--gpus",
            "4",
            "--sharding",
            "hsdp",
            "--json",
        ).stdout  # fmt: skip
    )
    assert train["nodes"]["gpus_per_node"] == 4
    import yaml

    args = ("serve", "Llama-3.1-405B", "--gpu", "H100", "--nodes", "4", "--gpus", "4", "--users", "10")
    report = json.loads(run_in_process(*args, "--json").stdout)
    pick = report["recommendation"]
    if pick["gpus_per_replica"] > 4 and pick["expert_parallel"] == 1:
        out = run_in_process(*args, "--format", "k8s")
        lws = next(d for d in yaml.safe_load_all(out.stdout) if d["kind"] == "LeaderWorkerSet")
        assert lws["spec"]["leaderWorkerTemplate"]["size"] == 4
        leader = lws["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"][0]
        assert leader["resources"]["limits"] == {"nvidia.com/gpu": "4"}


def test_quote_over_servers_draws_each_server() -> None:
    spanning = json.loads(
        run_in_process(
            "quote", "Llama-3.1-405B", "--gpu", "H100", "--nodes", "2", "--users", "10", "--json"
        ).stdout
    )
    assert spanning["recommendation"]["tensor_parallel"] == 16
    text = spanning["topology_text"]
    assert text.startswith("requests -> one engine over 2 servers (2 x 8x H100-SXM)")
    assert "server 2: TP ranks 9-16 of 16" in text and "in one server" not in text
    assert spanning["topology_mermaid"].count("subgraph S") == 2
    replicas = json.loads(
        run_in_process(
            "quote", "Qwen3-8B", "--gpu", "H100", "--nodes", "2", "--users", "500", "--json"
        ).stdout
    )
    text = replicas["topology_text"]
    assert "replica(s) over 2 servers (2 x 8x H100-SXM)" in text and "on server 2:" in text
    four = json.loads(
        run_in_process(
            "quote",
            "Llama-3.1-405B",
            "--gpu",
            "H100",
            "--nodes",
            "4",
            "--gpus",
            "4",
            "--users",
            "10",
            "--json",
        ).stdout  # fmt: skip
    )
    (option,) = four["options"]
    assert option["num_gpus"] == 16 and option["nodes"] == 4


def test_a_split_over_small_servers_keeps_each_instance_inside_one() -> None:
    # serve --nodes 4 --gpus 2 --disaggregate: the pools' instances sit inside a server (the KV moves
    # over the link between them), so no instance takes a TP above the server's 2 GPUs
    args = ("serve", "Llama-3.3-70B", "--gpu", "H200", "--nodes", "4", "--gpus", "2", "--users", "20")
    split = json.loads(run_in_process(*args, "--disaggregate", "--json").stdout)["disaggregated"]
    assert split is not None and split["num_gpus"] == 8
    assert split["prefill"]["tensor_parallel"] <= 2 and split["decode"]["tensor_parallel"] <= 2
    assert "InfiniBand" in split["link"]


def test_quote_over_servers_sizes_as_many_sets_as_hold_the_users() -> None:
    # as a single-server quote sizes its fleet (serving.quote.fleet): the fewest sets of N servers
    # whose share of the users each set holds at once, priced together and per user served
    args = ("quote", "Llama-3.1-405B", "--nodes", "2", "--users", "1000", "--gpu", "H100", "--json")
    (option,) = json.loads(run_in_process(*args).stdout)["options"]
    sets = option["servers"]
    assert sets > 1 and option["serves_all"] and option["nodes"] == 2
    assert option["fleet_usd_per_hour"] == pytest.approx(sets * option["usd_per_hour"])
    assert option["usd_per_user_hour"] == pytest.approx(option["fleet_usd_per_hour"] / 1000)
    assert option["capacity_sequences"] * sets >= 1000
    fewer = json.loads(
        run_in_process(
            "quote",
            "Llama-3.1-405B",
            "--nodes",
            "2",
            "--users",
            str(-(-1000 // (sets - 1))),
            "--gpu",
            "H100",
            "--json",
        ).stdout  # fmt: skip
    )["options"][0]
    assert not fewer["serves_all"] or fewer["servers"] > 1  # one set fewer does not hold its share
    text = " ".join(run_in_process(*args[:-1]).stdout.split())
    assert f"{sets} sets of 2 servers, no queueing" in text


def test_hsdp_is_named_hsdp_where_it_is_sized() -> None:
    # --sharding hsdp runs FSDP sharded inside each server and replicated across: its row and its
    # assumptions say hsdp (they said fsdp, the sharding of every GPU, beside memory sharded over 4)
    args = ("train", "Llama-3.1-70B", "--method", "full", "--gpu", "H100", "--nodes", "4", "--gpus", "4")
    report = json.loads(run_in_process(*args, "--sharding", "hsdp", "--json").stdout)
    assert {c["sharding"] for c in report["candidates"]} == {"hsdp"} and report["nodes"]["shard_gpus"] == 4
    assert "sharding hsdp, offload" in " ".join(run_in_process(*args, "--sharding", "hsdp").stdout.split())
    fsdp = json.loads(run_in_process(*args, "--sharding", "fsdp", "--json").stdout)
    assert {c["sharding"] for c in fsdp["candidates"]} == {"fsdp"} and fsdp["nodes"]["shard_gpus"] == 16


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (
            ("serve", "DeepSeek-R1", "--gpu", "H200", "--nodes", "2", "--users", "200"),
            "**Launch (nodes):** on each of 2 servers, the command above with --data-parallel-size-local 8",
        ),
        (
            ("serve", "Qwen3-8B", "--gpu", "H100", "--gpus", "8", "--users", "64"),
            "**Launch (replicas):** run 2 copies, one per group of 4 GPU(s)",
        ),
    ],
)
def test_the_markdown_says_what_the_launch_command_cannot(args: tuple[str, ...], words: str) -> None:
    # the command alone runs one replica (or one server's share): the Markdown carries the same notes
    # as the text (it printed the commands only)
    out = run_in_process(*args, "--format", "markdown").stdout.replace("\\_", "_").replace("\\<", "<")
    assert words.replace("\\_", "_") in out.replace("\\>", ">")


def test_quote_csv_over_servers_names_what_is_per_option() -> None:
    # quote --nodes --format csv: a server's GPUs beside the servers of an option; the price, speed and
    # capacity columns are the option's (a set of servers), power a server's; one server unchanged
    import csv
    import io

    args = ("quote", "DeepSeek-V3", "--nodes", "2", "--users", "40", "--gpu", "H200", "--format", "csv")
    (row,) = list(csv.DictReader(io.StringIO(run_in_process(*args).stdout)))
    assert (row["GPUs per server"], row["servers per option"]) == ("8", "2")
    assert float(row["price ($/h per option)"]) == 64.0 and "price ($/h per server)" not in row
    one = ("quote", "Qwen3-8B", "--users", "4", "--gpu", "H100", "--format", "csv")
    plain = next(csv.DictReader(io.StringIO(run_in_process(*one).stdout)))
    assert "price ($/h per server)" in plain and "servers per option" not in plain


def test_layouts_over_servers_say_how_the_ttft_spreads() -> None:
    # the steady-load spread of one server's layouts (load.FirstTokenSpread: half a step either way
    # of the mean), for the layouts that span servers too (they had none)
    args = ("serve", "DeepSeek-R1", "--gpu", "H200", "--nodes", "2", "--users", "50", "--json")
    report = json.loads(run_in_process(*args).stdout)
    for x in (x for x in report["layouts"] if x["fits"]):
        assert x["ttft_p50_s"] is not None and x["ttft_p50_s"] <= x["ttft_p90_s"]
        assert x["ttft_p50_s"] == pytest.approx(x["ttft_s"])


@pytest.mark.parametrize("engine", ["sglang", "trtllm", "llamacpp"])
def test_fit_over_servers_is_refused_where_it_would_be_ignored(engine: str) -> None:
    # fit --nodes asks the engine's plan over servers (vLLM's TP=G x PP=N); an engine without one
    # answered for one server and said nothing of --nodes
    out = run_in_process("fit", "Llama-3.1-405B", "--nodes", "2", "--gpu", "H100", "--engine", engine)
    assert out.code == 2 and out.stdout == "" and out.stderr.count("\n") == 1
    assert f"fit --nodes takes TP=G x PP=N, modelled for vLLM; not --engine {engine}" in out.stderr
