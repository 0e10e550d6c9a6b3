"""The link between servers (core/network.py): sourced defaults per GPU type and the collective rules.

Synthetic cases: each rule is the textbook formula its docstring cites (NCCL's ring, nccl-tests
doc/PERFORMANCE.md), so the tests pin the arithmetic, not a measured fabric."""

from __future__ import annotations

import math

import pytest

from gpusize.core import network
from gpusize.core.network import NodeLink, NodePlan, default_link, node_link
from gpusize.sources.catalog import find_gpu

IB = NodeLink(kind="ib", gbytes_per_s=50.0, source="test")


def test_dgx_gpus_default_to_400_gbit_infiniband_per_gpu() -> None:
    """DGX H100/H200/B200: one ConnectX-7 at 400 Gb/s per GPU (NVIDIA DGX user guides) = 50 GB/s."""
    for name in ("H100", "H200", "B200"):
        link = default_link(find_gpu(name))
        assert link.kind == "ib" and link.gbytes_per_s == 50.0, name
        assert "400 Gb/s" in link.source
    assert default_link(find_gpu("A100-80GB")).gbytes_per_s == 25.0  # DGX A100: 200 Gb/s HDR per GPU


def test_roce_keeps_the_rate_and_ethernet_shares_one_nic() -> None:
    h100 = find_gpu("H100")
    assert default_link(h100, "roce").gbytes_per_s == 50.0
    shared = default_link(h100, "ethernet")
    assert shared.kind == "ethernet"
    assert shared.gbytes_per_s == pytest.approx(100 / 8 / 8)  # 100 GbE over 8 GPUs
    pcie = default_link(find_gpu("L40S"))  # no reference fabric: the shared NIC, said as assumed
    assert pcie.kind == "ethernet" and "assumed" in pcie.source


def test_node_bandwidth_overrides_the_default() -> None:
    link = node_link(find_gpu("H100"), None, 100.0)
    assert link.gbytes_per_s == 100.0 and link.kind == "ib" and "--node-bandwidth" in link.source


def test_ring_allreduce_moves_2_n_minus_1_over_n_of_the_bytes() -> None:
    n, size = 16, 1e9
    expected = 2 * (n - 1) * IB.latency_s + 2 * (n - 1) / n * size / (50e9 * network.EFFICIENCY["ib"])
    assert network.allreduce_s(IB, n, size) == pytest.approx(expected)
    assert network.allreduce_s(IB, 1, size) == 0.0


def test_reduce_scatter_is_half_an_allreduce_in_bytes() -> None:
    n, size = 32, 4e9
    rs = network.reduce_scatter_s(IB, n, size) - (n - 1) * IB.latency_s
    ar = network.allreduce_s(IB, n, size) - 2 * (n - 1) * IB.latency_s
    assert rs == pytest.approx(ar / 2)


def test_all_to_all_sends_only_the_other_servers_share_over_the_link() -> None:
    one = network.all_to_all_s(IB, 2, 1e9) - IB.latency_s
    four = network.all_to_all_s(IB, 4, 1e9) - IB.latency_s
    assert four / one == pytest.approx((3 / 4) / (1 / 2))
    assert network.all_to_all_s(IB, 1, 1e9) == 0.0


def test_a_slower_link_costs_more_time() -> None:
    slow = NodeLink(kind="ethernet", gbytes_per_s=12.5, source="test")
    assert network.p2p_s(slow, 1e6) > network.p2p_s(IB, 1e6)
    assert math.isclose(network.p2p_s(IB, 0), IB.latency_s)


def test_plan_words_state_the_link_and_that_it_is_an_estimate() -> None:
    words = NodePlan(nodes=2, gpus_per_node=8, link=IB).words()
    assert "InfiniBand 50 GB/s (400 Gb/s) per GPU" in words and "estimate" in words


def test_a_plan_for_another_gpu_type_takes_its_link_unless_one_was_named() -> None:
    pcie = NodePlan(nodes=2, gpus_per_node=8, link=default_link(find_gpu("L40S")))
    assert pcie.for_gpu(find_gpu("H100")).link.kind == "ib"
    named = NodePlan(nodes=2, gpus_per_node=8, link=IB, asked_kind="ethernet", asked_gbytes_per_s=3.0)
    moved = named.for_gpu(find_gpu("H100")).link
    assert moved.kind == "ethernet" and moved.gbytes_per_s == 3.0
