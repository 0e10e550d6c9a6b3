"""Training over several servers (pure), for `train --nodes N`: the step time of a data-parallel job
over N servers of G GPUs (--nodes N --gpus G, 8 by default), its gradient and parameter collectives
over the inter-node link (core/network.py), and the time and cost of a token budget. Memory per GPU
comes from the one-GPU model (training/device.py) at the sharding degree the layout gives: every GPU
for DDP, ZeRO-1/2/3 and FSDP FULL_SHARD; the G GPUs of one server for HSDP (FSDP HYBRID_SHARD: shard
inside the server, replicate across servers). Every time here is an ESTIMATE.
"""

from __future__ import annotations

from gpusize.core import network
from gpusize.core.gpu import GpuSpec
from gpusize.core.network import NodePlan
from gpusize.core.spec import ModelSpec
from gpusize.dataclass import dataclass, replace
from gpusize.training import speed, time_cost
from gpusize.training.anatomy import trainable_params
from gpusize.training.setup import TrainSetup, state_bytes
from gpusize.training.speed import GATHER_BYTES, NVLINK_EFFICIENCY

__all__ = ["NVLINK_EFFICIENCY", "NodeStep", "node_step", "shard_degree"]


@dataclass(frozen=True, kw_only=True)
class NodeStep:
    """One optimizer step of the job over `nodes` servers: what moves, how long, and the job."""

    nodes: int
    gpus_per_node: int
    num_gpus: int
    #: ddp | zero1 | zero2 | zero3 | fsdp | hsdp.
    sharding: str
    #: GPUs each model state is sharded over (1: replicated).
    shard_gpus: int
    link: network.NodeLink
    tokens_per_step: int
    compute_s: float
    #: The step's collectives: over the inter-node link, and inside each server (NVLink).
    inter_node_comm_s: float
    intra_node_comm_s: float
    #: Communication fully hidden behind compute (max of the two; DDP buckets and FSDP prefetch overlap
    #: with backward) and not hidden at all (their sum): the range of the step time.
    step_s_low: float
    step_s_high: float
    comm: str
    tokens_per_s_low: float
    tokens_per_s_high: float
    hours_low: float | None
    hours_high: float | None
    cost_usd_low: float | None
    cost_usd_high: float | None
    #: When the job does not fit these servers: the fewest (2, 4, ... MAX_NODES) on which it does.
    nodes_that_fit: int | None = None

    def words(self) -> str:
        """The step and the job, for the text."""
        tail = ""
        if self.hours_low is not None and self.hours_high is not None:
            tail = f"; the token budget takes {self.hours_low:,.1f}-{self.hours_high:,.1f} h"
            if self.cost_usd_low is not None and self.cost_usd_high is not None:
                tail += f", ${self.cost_usd_low:,.0f}-${self.cost_usd_high:,.0f}"
        return (
            f"Across {self.nodes} servers ({self.num_gpus} GPUs, {self.sharding}, states sharded over "
            f"{self.shard_gpus}): step of {self.tokens_per_step:,} tokens {self.step_s_low:.2f}-"
            f"{self.step_s_high:.2f} s (compute {self.compute_s:.2f} s, collectives "
            f"{self.inter_node_comm_s:.2f} s between servers + {self.intra_node_comm_s:.2f} s inside; "
            "overlapped fully to not at all), "
            f"{self.tokens_per_s_low:,.0f}-{self.tokens_per_s_high:,.0f} tok/s{tail}. {self.comm}. Estimate."
        )


def shard_degree(sharding: str, plan: NodePlan) -> int:
    """GPUs the memory model shards states over: a server's for HSDP, every GPU otherwise (DDP's
    states are replicated whatever the count; training/device.py reads the sharding)."""
    return plan.gpus_per_node if sharding == "hsdp" else plan.nodes * plan.gpus_per_node


def _nvlink_s(gpu: GpuSpec, ranks: int, n_bytes: float) -> float:
    """A reduce-scatter / all-gather of `n_bytes` inside one server over NVLink."""
    if ranks <= 1 or not gpu.nvlink_gbps:
        return 0.0
    return (ranks - 1) / ranks * n_bytes / (gpu.nvlink_gbps / 2 * 1e9 * NVLINK_EFFICIENCY)


def node_step(
    spec: ModelSpec, setup: TrainSetup, sharding: str, gpu: GpuSpec, plan: NodePlan, tokens: int | None
) -> NodeStep | None:
    """The step over `plan`'s servers (None without the GPU's bf16 TFLOPS).

    compute = training/speed.py's compute (FLOPs per token x tokens per step per GPU / (peak x the
    fitted efficiency)) + QLoRA's dequantization; per GPU traffic of P trainable parameters (G bytes
    per gradient, 2 per gathered weight), `a` micro-batches per step:
    - ddp: one all-reduce of the gradients, 2 (n-1)/n x P G (NCCL ring);
    - zero1 / zero2: reduce-scatter of the gradients + all-gather of the updated bf16 parameters, the
      same volume as DDP (ZeRO paper, section 7: stages 1-2 keep DP's 2 Psi);
    - zero3 / fsdp: per micro-batch an all-gather of the weights in forward and again in backward and
      a reduce-scatter of the gradients: 3 (n-1)/n x P x 2 x a (ZeRO paper: 1.5x DP per pass);
    - hsdp: the zero3 traffic inside each server over NVLink, then an all-reduce of each GPU's 1/8
      gradient shard with its peers in the other servers, over the link.
    A collective spanning servers runs at the server's NICs together (NCCL puts one ring channel on
    each rail: the link's rate per GPU x GPUs per server); HSDP's cross-server all-reduce of a 1/8
    shard runs on each GPU's own rail."""
    n = plan.nodes * plan.gpus_per_node
    one = speed.step_time(spec, setup, gpu, n, plan.link)
    if one is None:
        return None
    n = plan.nodes * plan.gpus_per_node
    per_node = plan.gpus_per_node
    link = plan.link
    # a ring over every GPU spreads its channels over all the server's NICs (speed.inter_node_bytes_per_s)
    rails = replace(link, gbytes_per_s=link.gbytes_per_s * per_node)
    trainable = trainable_params(spec, setup)
    grad_bytes = trainable * state_bytes(setup.precision, setup.method, setup).grad
    gathered = (spec.params.total if setup.method == "full" else trainable) * GATHER_BYTES
    micro = setup.grad_accum
    tokens_per_step = setup.batch * setup.seq_tokens * micro * n
    compute = one.compute_s + one.dequant_s
    inter = intra = 0.0
    if sharding in ("ddp", "zero1", "zero2"):
        inter = network.allreduce_s(rails, n, grad_bytes)
        what = f"gradient all-reduce of {grad_bytes / 1e9:.1f} GB over all {n} GPUs, once per step"
    elif sharding == "hsdp":
        intra = micro * (2 * _nvlink_s(gpu, per_node, gathered) + _nvlink_s(gpu, per_node, grad_bytes))
        inter = network.allreduce_s(link, plan.nodes, grad_bytes / per_node)
        what = (
            f"weights gathered and gradients reduce-scattered inside each server (NVLink), then each GPU's "
            f"1/{per_node} gradient shard all-reduced across the {plan.nodes} servers"
        )
    else:
        inter = micro * (
            2 * network.reduce_scatter_s(rails, n, gathered) + network.reduce_scatter_s(rails, n, grad_bytes)
        )
        what = (
            f"weights all-gathered twice (forward, backward) and gradients reduce-scattered over all {n} "
            f"GPUs, per micro-batch ({micro} per step)"
        )
    comm = inter + intra
    low, high = max(compute, comm), compute + comm
    hours_low = hours_high = cost_low = cost_high = None
    if tokens:
        hours_low = tokens / tokens_per_step * low / 3600
        hours_high = tokens / tokens_per_step * high / 3600
        if gpu.price_usd_per_hour:
            cost_low = time_cost.training_cost_usd(hours_low, gpu.price_usd_per_hour, n)
            cost_high = time_cost.training_cost_usd(hours_high, gpu.price_usd_per_hour, n)
    return NodeStep(
        nodes=plan.nodes,
        gpus_per_node=per_node,
        num_gpus=n,
        sharding=sharding,
        shard_gpus=1 if sharding == "ddp" else shard_degree(sharding, plan),
        link=link,
        tokens_per_step=tokens_per_step,
        compute_s=compute,
        inter_node_comm_s=inter,
        intra_node_comm_s=intra,
        step_s_low=low,
        step_s_high=high,
        comm=f"{what}; over {link.words()}",
        tokens_per_s_low=tokens_per_step / high,
        tokens_per_s_high=tokens_per_step / low,
        hours_low=hours_low,
        hours_high=hours_high,
        cost_usd_low=cost_low,
        cost_usd_high=cost_high,
    )
