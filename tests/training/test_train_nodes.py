"""Training over several servers (training/nodes.py): the collectives of each sharding and the step.

Synthetic rule checks: DDP's one gradient all-reduce, ZeRO-1/2 the same volume (ZeRO paper,
section 7), ZeRO-3/FSDP 1.5x per pass and per micro-batch, HSDP's inter-node all-reduce of a 1/8
shard; the ring formulas are core/network.py's."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gpusize.core import network
from gpusize.core.network import NodeLink, NodePlan
from gpusize.sources.catalog import find_gpu
from gpusize.training import speed, speed_fit, time_cost
from gpusize.training.anatomy import trainable_params
from gpusize.training.nodes import node_step, shard_degree
from gpusize.training.setup import TrainSetup, state_bytes
from tests.helpers import catalog_spec

LINK = NodeLink(kind="ib", gbytes_per_s=50.0, source="test")
PLAN = NodePlan(nodes=4, gpus_per_node=8, link=LINK)
#: A ring over every GPU of the servers uses all 8 rails of each: 8 x the per-GPU link.
RAILS = replace(LINK, gbytes_per_s=8 * LINK.gbytes_per_s)
SPEC = catalog_spec("Llama-3.1-70B")
GPU = find_gpu("H100")


def _job(**kw: object) -> TrainSetup:
    return replace(TrainSetup(method="full", seq_tokens=2048), **kw)  # type: ignore[arg-type]


def test_ddp_all_reduces_the_gradients_once_per_step() -> None:
    job = _job(sharding="ddp")
    step = node_step(SPEC, job, "ddp", GPU, PLAN, None)
    assert step is not None
    grads = trainable_params(SPEC, job) * state_bytes(job.precision, job.method, job).grad
    assert step.inter_node_comm_s == pytest.approx(network.allreduce_s(RAILS, 32, grads))
    assert step.shard_gpus == 1


def test_fsdp_gathers_twice_and_reduce_scatters_once_per_micro_batch() -> None:
    one = node_step(SPEC, _job(sharding="fsdp"), "fsdp", GPU, PLAN, None)
    four = node_step(SPEC, _job(sharding="fsdp", grad_accum=4), "fsdp", GPU, PLAN, None)
    assert one is not None and four is not None
    weights = SPEC.params.total * 2
    grads = trainable_params(SPEC, _job()) * 2
    expected = 2 * network.reduce_scatter_s(RAILS, 32, weights) + network.reduce_scatter_s(RAILS, 32, grads)
    assert one.inter_node_comm_s == pytest.approx(expected)
    assert four.inter_node_comm_s == pytest.approx(4 * expected)


def test_hsdp_sends_only_a_servers_shard_between_servers() -> None:
    hsdp = node_step(SPEC, _job(sharding="fsdp"), "hsdp", GPU, PLAN, None)
    fsdp = node_step(SPEC, _job(sharding="fsdp"), "fsdp", GPU, PLAN, None)
    assert hsdp is not None and fsdp is not None
    grads = trainable_params(SPEC, _job()) * state_bytes("bf16-mixed", "full", _job(sharding="fsdp")).grad
    assert hsdp.inter_node_comm_s == pytest.approx(network.allreduce_s(LINK, 4, grads / 8))
    assert hsdp.intra_node_comm_s > 0 and hsdp.inter_node_comm_s < fsdp.inter_node_comm_s
    assert shard_degree("hsdp", PLAN) == 8 and shard_degree("fsdp", PLAN) == 32


def test_step_is_compute_and_collectives_overlapped_fully_to_not_at_all() -> None:
    job = _job(sharding="zero1", batch=4, grad_accum=8)
    step = node_step(SPEC, job, "zero1", GPU, PLAN, 10**9)
    assert step is not None and GPU.bf16_tflops
    tokens = 4 * 2048 * 8 * 32
    eff = speed.efficiency(GPU, job)
    # 32 GPUs: peers, so the collective kernels' share of the GPU (speed_fit.CONTENTION) is lost
    rate = GPU.bf16_tflops * 1e12 * eff * (1 - speed_fit.CONTENTION)
    compute = time_cost.flops_per_token(SPEC, job) * tokens / (32 * rate)
    assert step.tokens_per_step == tokens and step.compute_s == pytest.approx(compute)
    assert step.step_s_low == pytest.approx(max(compute, step.inter_node_comm_s))
    assert step.step_s_high == pytest.approx(compute + step.inter_node_comm_s)
    assert step.hours_low == pytest.approx(10**9 / tokens * step.step_s_low / 3600)
    assert step.cost_usd_low is not None and step.cost_usd_high is not None
    assert step.cost_usd_low <= step.cost_usd_high


def test_a_slower_link_lengthens_the_step() -> None:
    slow = replace(PLAN, link=NodeLink(kind="ethernet", gbytes_per_s=1.5, source="test"))
    fast_step = node_step(SPEC, _job(sharding="ddp"), "ddp", GPU, PLAN, None)
    slow_step = node_step(SPEC, _job(sharding="ddp"), "ddp", GPU, slow, None)
    assert fast_step is not None and slow_step is not None
    assert slow_step.step_s_low > fast_step.step_s_low


def test_the_step_is_timed_over_the_link_of_the_gpu_type_chosen() -> None:
    """Several GPU types: the plan built for the first (L40S: the shared Ethernet NIC) is timed over
    the chosen type's own link (H200: InfiniBand at 400 Gb/s per GPU)."""
    from gpusize.core.model import ResolvedModel
    from gpusize.core.network import default_link
    from gpusize.reports.train import build_train_report
    from gpusize.sources.catalog import find_model

    entry = find_model("Llama-3.1-70B")
    resolved = ResolvedModel(entry.hf_id, "catalog", entry.config, catalog_name=entry.name)
    l40s, h200 = find_gpu("L40S"), find_gpu("H200")
    plan = NodePlan(nodes=2, gpus_per_node=8, link=default_link(l40s))
    report = build_train_report(resolved, SPEC, [l40s, h200], _job(sharding="fsdp"), 16, None, 8, (), plan)
    assert report.plan is not None and report.plan.gpu == "H200-SXM"
    assert report.nodes is not None and report.nodes.link.kind == "ib"
