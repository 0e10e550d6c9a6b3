"""The link between servers (pure): InfiniBand, RoCE or Ethernet, its bandwidth per GPU (a sourced
default per GPU type, or the user's figure), and what the traffic of a multi-node layout costs over
it: pipeline hops, tensor-parallel all-reduces, expert-parallel all-to-all, gradient collectives.
Every time here is an ESTIMATE: line rate x an achievable fraction, plus a per-message latency.

Inside a server the GPUs talk over NVLink/NVSwitch (serving/throughput.py `link`); between servers
each GPU reaches the others through the NIC(s) of its server. A DGX-class server has one NIC per GPU
("rail-optimized"), so the bandwidth is stated per GPU.
"""

from __future__ import annotations

from dataclasses import field, replace
from typing import Literal

from gpusize.core.gpu import GpuSpec
from gpusize.dataclass import dataclass

__all__ = [
    "ACTIVATION_BYTES",
    "EFFICIENCY",
    "GPUS_PER_NODE",
    "KINDS",
    "LATENCY_S",
    "MAX_NODES",
    "LinkKind",
    "NodeLink",
    "NodePlan",
    "all_to_all_s",
    "allreduce_s",
    "default_link",
    "node_link",
    "p2p_s",
    "reduce_scatter_s",
]

LinkKind = Literal["ib", "roce", "ethernet"]
#: The inter-node link kinds `--interconnect` takes.
KINDS: tuple[LinkKind, ...] = ("ib", "roce", "ethernet")
#: Most servers a plan spans (fit --nodes takes the same range).
MAX_NODES = 64
#: GPUs in one server of a multi-node plan: the 8-GPU HGX/DGX baseboard (fit --nodes' TP=8 x PP=N).
GPUS_PER_NODE = 8
#: Bytes per element of the activations a pipeline stage hands to the next (bf16 hidden states).
ACTIVATION_BYTES = 2

#: Fraction of the line rate a collective reaches, by link kind. ib: 0.9 (nccl-tests all_reduce
#: bus bandwidth on NDR 400 Gb/s reaches ~360 Gb/s per rail, NVIDIA's published DGX SuperPOD
#: figures); roce: 0.85 (the same NICs over lossless Ethernet, congestion control costs a few
#: percent); ethernet: 0.5 (TCP sockets without GPUDirect RDMA, NCCL's socket transport).
#: Planning figures, not measurements of a given fabric.
EFFICIENCY: dict[str, float] = {"ib": 0.9, "roce": 0.85, "ethernet": 0.5}
#: Seconds per message (one ring step, one send/recv) by link kind: a few microseconds of wire and
#: switch plus NCCL's proxy (nccl-tests small-message latency over IB is ~10-20 us); TCP ~50 us.
LATENCY_S: dict[str, float] = {"ib": 15e-6, "roce": 20e-6, "ethernet": 50e-6}

#: Gb/s per GPU of the compute fabric of the vendor's reference server, by GPU type (catalog names).
#: DGX H100/H200: eight single-port ConnectX-7, 400 Gb/s NDR InfiniBand each, one per GPU
#: (docs.nvidia.com/dgx/dgxh100-user-guide/introduction-to-dgxh100.html, "Hardware overview");
#: DGX B200: eight ConnectX-7 at 400 Gb/s (docs.nvidia.com/dgx/dgxb200-user-guide/introduction-to-
#: dgxb200.html); DGX B300: eight ConnectX-8 SuperNICs at 800 Gb/s (docs.nvidia.com/dgx/dgxb300-user-
#: guide); DGX A100: eight single-port ConnectX-6, 200 Gb/s HDR InfiniBand each
#: (docs.nvidia.com/dgx/dgxa100-user-guide/introduction-to-dgxa100.html).
DGX_GBIT_PER_GPU: dict[str, float] = {
    "H100-SXM": 400.0,
    "H200-SXM": 400.0,
    "B200": 400.0,
    "B300": 800.0,
    "GB200": 400.0,
    "A100-80GB": 200.0,
    "A100-40GB": 200.0,
}
#: A server without a reference fabric (PCIe cards, workstations): one 100 GbE NIC shared by its GPUs,
#: a common cloud / on-premises configuration (an assumption, stated in the output).
SHARED_ETHERNET_GBIT_PER_NODE = 100.0


@dataclass(frozen=True, kw_only=True)
class NodeLink:
    """The link between servers as one GPU sees it: kind, line rate per GPU (GB/s, one direction),
    what was assumed and why."""

    kind: LinkKind
    gbytes_per_s: float
    source: str

    @property
    def effective_bytes_per_s(self) -> float:
        """What a collective reaches: line rate x EFFICIENCY."""
        return self.gbytes_per_s * 1e9 * EFFICIENCY[self.kind]

    @property
    def latency_s(self) -> float:
        return LATENCY_S[self.kind]

    def words(self) -> str:
        """'InfiniBand 50 GB/s (400 Gb/s) per GPU' for the text."""
        name = {"ib": "InfiniBand", "roce": "RoCE", "ethernet": "Ethernet"}[self.kind]
        return f"{name} {self.gbytes_per_s:g} GB/s ({self.gbytes_per_s * 8:g} Gb/s) per GPU"


def default_link(gpu: GpuSpec, kind: LinkKind | None = None, per_node: int = GPUS_PER_NODE) -> NodeLink:
    """The reference server's fabric for this GPU type (InfiniBand at its DGX rate per GPU), or one
    shared 100 GbE NIC per server when the type has none; `kind` names the link (RoCE runs on the
    same ConnectX NICs at the same rate; Ethernet without RDMA on the shared NIC, shared by the
    server's `per_node` GPUs)."""
    base = gpu.mig_parent or gpu.name
    rail = DGX_GBIT_PER_GPU.get(base)
    if rail is not None and kind != "ethernet":
        chosen: LinkKind = kind or "ib"
        return NodeLink(
            kind=chosen,
            gbytes_per_s=rail / 8,
            source=f"one {rail:g} Gb/s NIC per GPU, as NVIDIA's DGX reference server for {base}",
        )
    return NodeLink(
        kind=kind or "ethernet",
        gbytes_per_s=SHARED_ETHERNET_GBIT_PER_NODE / 8 / per_node,
        source=f"one {SHARED_ETHERNET_GBIT_PER_NODE:g} GbE NIC shared by the server's {per_node} GPUs "
        "(assumed; give --node-bandwidth)",
    )


def node_link(
    gpu: GpuSpec,
    kind: LinkKind | None = None,
    gbytes_per_s: float | None = None,
    per_node: int = GPUS_PER_NODE,
) -> NodeLink:
    """The link a plan uses: the default for the GPU type in a server of `per_node` GPUs, with the
    user's kind and bandwidth per GPU (--interconnect, --node-bandwidth) where given."""
    base = default_link(gpu, kind, per_node)
    if gbytes_per_s is None:
        return base
    return NodeLink(kind=base.kind, gbytes_per_s=gbytes_per_s, source="as given (--node-bandwidth)")


def p2p_s(link: NodeLink, n_bytes: float) -> float:
    """One send of `n_bytes` from one GPU to a GPU of another server: latency + bytes / bandwidth."""
    return link.latency_s + n_bytes / link.effective_bytes_per_s


def allreduce_s(link: NodeLink, ranks: int, n_bytes: float) -> float:
    """A ring all-reduce of `n_bytes` over `ranks` GPUs whose slowest hop is the inter-node link:
    2 (ranks - 1) steps, each a latency, moving 2 (ranks - 1) / ranks x bytes per GPU (NCCL's ring;
    its bus bandwidth formula, nccl-tests doc/PERFORMANCE.md)."""
    if ranks <= 1:
        return 0.0
    steps = 2 * (ranks - 1)
    return steps * link.latency_s + steps / ranks * n_bytes / link.effective_bytes_per_s


def reduce_scatter_s(link: NodeLink, ranks: int, n_bytes: float) -> float:
    """A reduce-scatter (or all-gather) of `n_bytes` over `ranks` GPUs: half a ring all-reduce,
    (ranks - 1) / ranks x bytes per GPU (nccl-tests doc/PERFORMANCE.md)."""
    if ranks <= 1:
        return 0.0
    return (ranks - 1) * link.latency_s + (ranks - 1) / ranks * n_bytes / link.effective_bytes_per_s


def all_to_all_s(link: NodeLink, nodes: int, n_bytes: float) -> float:
    """One GPU's all-to-all of `n_bytes` spread evenly over `nodes` servers: the share bound for other
    servers, (nodes - 1) / nodes, crosses the link (the share for its own server stays on NVLink,
    DeepEP's internode kernels forward it there), plus one latency."""
    if nodes <= 1:
        return 0.0
    return link.latency_s + (nodes - 1) / nodes * n_bytes / link.effective_bytes_per_s


@dataclass(frozen=True, kw_only=True)
class NodePlan:
    """What a multi-node plan assumed: servers, GPUs each, the link between them."""

    nodes: int
    gpus_per_node: int
    link: NodeLink
    #: What the user named (--interconnect, --node-bandwidth), to draw the link of another GPU type.
    asked_kind: LinkKind | None = field(default=None, metadata={"json": False, "sheet": False})
    asked_gbytes_per_s: float | None = field(default=None, metadata={"json": False, "sheet": False})

    def for_gpu(self, gpu: GpuSpec) -> NodePlan:
        """The same servers of another GPU type: its own default link, unless the user named one."""
        return replace(
            self, link=node_link(gpu, self.asked_kind, self.asked_gbytes_per_s, self.gpus_per_node)
        )

    def words(self) -> str:
        """The assumption line of a multi-node plan."""
        return (
            f"{self.nodes} servers of {self.gpus_per_node} GPUs, joined by {self.link.words()} "
            f"({self.link.source}); {EFFICIENCY[self.link.kind]:.0%} of line rate reached, "
            f"{self.link.latency_s * 1e6:g} us per message: the network terms are estimates"
        )
