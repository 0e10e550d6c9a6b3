"""Multi-node serving layouts (serving/nodes.py): memory per GPU of each layout and the cost of its
inter-node traffic. Synthetic rule checks against the upstream behaviour each rule cites."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusize.core.network import NodeLink
from gpusize.core.weights import weights_bytes
from gpusize.serving import nodes
from gpusize.serving.layouts import Demand, layout_name
from gpusize.sources.catalog import find_gpu
from tests.helpers import catalog_spec, workload

IB = NodeLink(kind="ib", gbytes_per_s=50.0, source="test")
SLOW = NodeLink(kind="ethernet", gbytes_per_s=1.5, source="test")


def test_pipeline_hop_is_hidden_states_and_residual_in_bf16() -> None:
    """vLLM's IntermediateTensors {"hidden_states", "residual"}: 2 x tokens x hidden x 2 bytes."""
    spec = catalog_spec("Llama-3.1-405B")
    assert nodes.pipeline_hop_bytes(spec, 10) == 2 * 10 * spec.hidden_size * 2


def test_expert_parallel_holds_dense_weights_whole_and_a_share_of_the_experts() -> None:
    """DP attention + EP: dense weights on every GPU, ceil(E / ep) whole experts each (vLLM
    determine_expert_map gives the first ranks one more when ep does not divide E)."""
    spec = catalog_spec("DeepSeek-V3")
    work = workload(spec, 8192)
    fmt = work.weights
    experts = spec.params.experts * fmt.role_bytes("experts") * fmt.checkpoint_scale
    whole = weights_bytes(spec, fmt, 1)
    assert spec.moe is not None and spec.moe.num_experts == 256
    assert nodes.expert_parallel_weights_bytes(spec, work, 16) == int(whole - experts + experts * 16 / 256)
    # 3 servers = 24 GPUs: 256 / 24 -> the fullest rank holds 11 experts
    assert nodes.expert_parallel_weights_bytes(spec, work, 24) == int(whole - experts + experts * 11 / 256)
    dense = catalog_spec("Llama-3.1-405B")
    assert nodes.expert_parallel_weights_bytes(dense, workload(dense, 8192), 16) == weights_bytes(
        dense, workload(dense, 8192).weights, 1
    )


def _layouts(name: str, gpu: str, link: NodeLink = IB, users: int = 50) -> dict[str, object]:
    spec = catalog_spec(name)
    out = nodes.node_layouts(spec, find_gpu(gpu), 2, workload(spec, 8192), Demand(users=users), link)
    return {layout_name(x): x for x in out}


def test_moe_model_gets_pipeline_tensor_and_expert_layouts_across_two_servers() -> None:
    got = _layouts("DeepSeek-V3", "H100")
    assert {"1 x TP=8 x PP=2", "1 x TP=16", "1 x DP=16 x EP=16", "2 x TP=8"} <= set(got)
    pp, ep = got["1 x TP=8 x PP=2"], got["1 x DP=16 x EP=16"]
    assert pp.fits and ep.fits  # type: ignore[attr-defined]
    # MLA's latent is replicated under TP, split by sequences under DP attention: EP holds more
    assert ep.capacity_sequences > pp.capacity_sequences  # type: ignore[attr-defined]
    for x in (pp, ep):
        assert x.nodes == 2 and x.network and "InfiniBand" in x.network  # type: ignore[attr-defined]
        assert x.network_s_per_step and x.network_s_per_step > 0  # type: ignore[attr-defined]


def test_dense_model_has_no_expert_layout() -> None:
    got = _layouts("Llama-3.1-405B", "H100")
    assert not any("EP=" in name for name in got)
    assert got["1 x TP=8 x PP=2"].fits  # type: ignore[attr-defined]
    assert not got["2 x TP=8"].fits  # type: ignore[attr-defined]  # 405B bf16 beyond one server


@pytest.mark.parametrize("name", ["1 x TP=8 x PP=2", "1 x TP=16"])
def test_a_slower_link_slows_the_layouts_that_cross_it(name: str) -> None:
    fast, slow = _layouts("Llama-3.1-405B", "H100")[name], _layouts("Llama-3.1-405B", "H100", SLOW)[name]
    assert slow.per_request_tokens_per_s < fast.per_request_tokens_per_s  # type: ignore[attr-defined]
    assert slow.network_s_per_step > fast.network_s_per_step  # type: ignore[attr-defined]


def test_replicas_on_separate_servers_do_not_pay_for_the_link() -> None:
    fast, slow = _layouts("Qwen3-32B", "H100")["2 x TP=8"], _layouts("Qwen3-32B", "H100", SLOW)["2 x TP=8"]
    assert fast.per_request_tokens_per_s == slow.per_request_tokens_per_s  # type: ignore[attr-defined]
    assert fast.network_s_per_step is None  # type: ignore[attr-defined]


def test_pipeline_bubble_few_sequences_leave_stages_idle() -> None:
    """With one sequence in flight only one of the two stages works: aggregate = per-request speed."""
    x = _layouts("Llama-3.1-405B", "H100", users=1)["1 x TP=8 x PP=2"]
    assert x.aggregate_tokens_per_s is not None and x.per_request_tokens_per_s is not None  # type: ignore[attr-defined]
    assert math.isclose(x.aggregate_tokens_per_s, x.per_request_tokens_per_s, rel_tol=0.05)  # type: ignore[attr-defined]


def test_expert_layout_needs_a_release_that_runs_it() -> None:
    """vLLM runs data parallel with expert parallel across nodes from 0.9.0."""
    spec = catalog_spec("DeepSeek-V3")
    work = workload(spec, 8192, version="0.8.5")
    out = nodes.node_layouts(spec, find_gpu("H200"), 2, work, Demand(users=10), IB)
    ep = next(x for x in out if x.expert_parallel > 1)
    assert not ep.fits and ep.reason and "0.9.0" in ep.reason


def test_tensor_parallel_over_servers_all_reduces_hierarchically() -> None:
    """TP=16 over 2 servers: per layer 2 all-reduces; between servers each GPU's NIC carries 1/8 of
    the hidden states of its batch in an all-reduce over the 2 servers (NCCL on rail-optimized nodes)."""
    from gpusize.core import network

    spec = catalog_spec("Llama-3.1-405B")
    x = nodes.node_layouts(spec, find_gpu("H100"), 2, workload(spec, 8192), Demand(users=1), IB)
    tp16 = next(y for y in x if layout_name(y) == "1 x TP=16")
    expected = 2 * len(spec.layers) * network.allreduce_s(IB, 2, 1 * spec.hidden_size * 2 / 8)
    assert tp16.network_s_per_step == pytest.approx(expected)


def test_expert_all_to_all_has_deepep_low_latency_floor_per_ep_size() -> None:
    """DeepEP README low-latency table: EP 16 dispatch 118 us + combine 195 us; EP 32: 155 + 273."""
    assert nodes.all_to_all_floor_s(16) == pytest.approx(313e-6)
    assert nodes.all_to_all_floor_s(24) == pytest.approx(313e-6)
    assert nodes.all_to_all_floor_s(32) == pytest.approx(428e-6)
    spec = catalog_spec("DeepSeek-V3")
    x = nodes.node_layouts(spec, find_gpu("H200"), 2, workload(spec, 8192), Demand(users=1), IB)
    ep = next(y for y in x if y.expert_parallel == 16)
    moe_layers = sum(1 for layer in spec.layers if layer.ffn == "moe")
    assert ep.network_s_per_step == pytest.approx(moe_layers * 313e-6)  # one token: the floor decides


@settings(max_examples=25, deadline=None)
@given(
    name=st.sampled_from(["Qwen3-8B", "Llama-3.3-70B", "Qwen3-30B-A3B", "DeepSeek-V3", "gpt-oss-120b"]),
    gpu=st.sampled_from(["H100", "H200", "L40S", "A100-80GB"]),
    servers=st.integers(2, 4),
    per_node=st.sampled_from([1, 2, 4, 8]),
    users=st.integers(1, 200),
)
def test_layouts_over_servers_of_any_size_use_their_servers_as_the_engines_can(
    name: str, gpu: str, servers: int, per_node: int, users: int
) -> None:
    # --nodes N --gpus G: a replica stays inside one server (its tensor parallel over NVLink, never
    # over the link); one engine over them all takes every GPU: TP=G x PP=N, TP=G*N, DP x EP=G*N;
    # each layout is priced for all the servers' GPUs
    spec, card = catalog_spec(name), find_gpu(gpu)
    total = servers * per_node
    out = nodes.node_layouts(
        spec, card, servers, workload(spec, 8192), Demand(users=users), IB, None, per_node
    )
    spanning = [x for x in out if x.gpus_per_replica > per_node]
    replicas = [x for x in out if x.gpus_per_replica <= per_node]
    assert replicas and all(x.replicas * x.gpus_per_replica == total for x in replicas)
    assert all(x.gpus_per_replica == total and x.replicas == 1 for x in spanning)
    kinds = {(x.tensor_parallel, x.pipeline_parallel, x.expert_parallel) for x in spanning}
    assert (per_node, servers, 1) in kinds and (total, 1, 1) in kinds
    assert ((1, 1, total) in kinds) == (spec.moe is not None)
    assert all(x.usd_per_hour == card.price_for(total) and x.nodes == servers for x in out)
