"""GpuSpec: the facts of one accelerator type (pure value; `sources.catalog` builds it from YAML)."""

from __future__ import annotations

import operator
from dataclasses import field, fields
from typing import Literal

from gpusize.dataclass import dataclass, kept_hash
from gpusize.units import GIB, MIB

__all__ = [
    "BF16_MIN_COMPUTE_CAPABILITY",
    "GDDR_RESERVE_MIB",
    "HBM_RESERVE_MIB",
    "PCIE_GBPS",
    "GpuSpec",
    "Interconnect",
    "Segment",
    "Vendor",
    "VENDOR_TERMS",
    "VendorTerms",
]

Vendor = Literal["NVIDIA", "AMD", "Intel", "Apple"]
Segment = Literal["consumer", "workstation", "datacenter"]
#: "none": one device with no GPU-to-GPU link at all (a MIG slice, a unified-memory machine).
Interconnect = Literal["nvswitch", "bridge-pairs", "infinity-fabric", "pcie", "none", "unknown"]
#: Per-direction link bandwidth (GB/s) of PCIe x16 by generation (PCI-SIG).
PCIE_GBPS = {3: 16.0, 4: 32.0, 5: 64.0, 6: 128.0}


@dataclass(frozen=True)
class VendorTerms:
    """The words an answer uses for one vendor's GPU link, runtime context and captured graphs, so
    that reports and renderers ask the GPU instead of testing its name (AMD: Infinity Fabric / xGMI,
    HIP graphs: ROCm's hipGraph, which vLLM and SGLang capture through torch.cuda.graphs on ROCm)."""

    link: str
    runtime: str
    context: str
    graphs: str
    #: The variable that picks the devices a process sees (ROCm: HIP_VISIBLE_DEVICES).
    visible_devices: str
    #: The tool that shows a device's memory in use.
    smi: str
    #: The collective library tensor parallel and data parallel use (ROCm: RCCL, NCCL's port).
    collectives: str = "NCCL"


#: Vendor -> its terms (AMD: ROCm documentation, "HIP graphs" and HIP_VISIBLE_DEVICES; Infinity Fabric
#: links are AMD's xGMI, docs: rocm.docs.amd.com "MI300X workload optimization").
VENDOR_TERMS = {
    "NVIDIA": VendorTerms(
        "NVLink", "CUDA", "CUDA context", "CUDA graphs", "CUDA_VISIBLE_DEVICES", "nvidia-smi"
    ),
    "AMD": VendorTerms(
        "Infinity Fabric (xGMI)",
        "ROCm",
        "HIP context",
        "HIP graphs",
        "HIP_VISIBLE_DEVICES",
        "amd-smi",
        "RCCL",
    ),
    "Apple": VendorTerms(
        "none (one device)", "Metal", "Metal context", "Metal command buffers", "-", "Activity Monitor"
    ),
    "Intel": VendorTerms(
        "Xe Link", "Level Zero", "Level Zero context", "graphs", "ZE_AFFINITY_MASK", "xpu-smi"
    ),
}

#: When no runtime-visible total is published, the driver/runtime reserve subtracted from the reported
#: total: the largest reserve measured among the catalog GPUs of the same memory class (reported total
#: minus the total torch reports: data/gpus.yaml entries with `cuda_visible_gib`). An assumption, shown as
#: such in every output. Published totals carry two decimals of GiB (+-5.1 MiB), so each default covers
#: the largest derived reserve. HBM: A100 80GB 81,920 MiB vs 79.32 GiB = 696.3 MiB (H200 615.06 measured
#: exactly, tests/data/reference/measured/h200-device.json; H100 468).
HBM_RESERVE_MIB = 698
#: GDDR: L40S 46,068 MiB vs 44.53 GiB = 469.3 MiB (RTX 3090 430, RTX 4090 346, A10 316, T4 266).
GDDR_RESERVE_MIB = 470
#: vLLM refuses bf16 below compute capability 8.0 ("Bfloat16 is only supported on GPUs with compute
#: capability of at least 8.0. Your Tesla T4 GPU has compute capability 7.5 ... --dtype=half";
#: vllm-project/vllm#9990): those GPUs run 16-bit models in fp16.
BF16_MIN_COMPUTE_CAPABILITY = (8, 0)


#: Field metadata of a derived fact (a MIG slice's): never in a catalog file, not in `gpus --json`.
_DERIVED = {"catalog": False, "json": False}
#: Field metadata of a label, a provenance or a price: no server plan reads it, so GPUs differing only
#: there share one plan, which each option labels with its own (serving/plan_key.py). The name is one
#: too, but for the tables keyed by it (plan_key).
_LABEL = {"plan": False}


@dataclass(frozen=True)
class GpuSpec:
    """One accelerator type. Memory in MiB as the device reports it; everything else as sourced."""

    name: str = field(metadata=_LABEL)
    full_name: str
    vendor: Vendor
    segment: Segment
    architecture: str
    memory_type: str
    marketing_memory_gb: float
    memory_mib: int
    ecc: Literal["on", "off", "none"]
    interconnect: Interconnect
    source: str = field(metadata=_LABEL)
    aliases: tuple[str, ...] = field(default=(), metadata=_LABEL)
    #: NVIDIA CUDA compute capability, "major.minor" (None for AMD and Intel).
    compute_capability: str | None = None
    #: AMD LLVM target (gfx942...), None elsewhere.
    gfx_target: str | None = None
    #: NVIDIA: total seen by torch.cuda.mem_get_info (what vLLM's utilization multiplies), where measured.
    cuda_visible_gib: float | None = None
    #: AMD: the same total as torch reports it on ROCm, where measured.
    rocm_visible_gib: float | None = None
    ecc_off_memory_mib: int | None = None
    bandwidth_gbps: float | None = None
    bf16_tflops: float | None = None
    fp8_tflops: float | None = None
    nvlink_gbps: float | None = None
    pcie_gen: int | None = None
    #: Peer-to-peer access between two of these GPUs in one host (None: not sourced).
    p2p: bool | None = None
    tdp_w: float | None = None
    #: Maximum MIG instances (0 = no MIG; None = supported, count unsourced).
    mig_instances: int | None = None
    price_usd_per_hour: float | None = field(default=None, metadata=_LABEL)
    #: The date of the price's source (YYYY-MM-DD), per GPU.
    price_date: str | None = field(default=None, metadata=_LABEL)
    #: Where the price comes from (the offer, or why there is none).
    price_source: str | None = field(default=None, metadata=_LABEL)
    #: Purchase price per GPU in USD (buy versus rent), dated and sourced; `purchase_price_kind` says
    #: what kind of price it is (launch MSRP, street estimate).
    purchase_price_usd: float | None = field(default=None, metadata=_LABEL)
    #: YYYY-MM-DD, or YYYY-MM / YYYY where the source gives no day.
    purchase_price_date: str | None = field(default=None, metadata=_LABEL)
    purchase_price_kind: str | None = field(default=None, metadata=_LABEL)
    purchase_price_source: str | None = field(default=None, metadata=_LABEL)
    #: When the facts in `source` were last checked against the sources it names (YYYY-MM-DD).
    source_date: str | None = field(default=None, metadata=_LABEL)
    notes: str | None = field(default=None, metadata=_LABEL)
    #: The GPU shares the host's RAM (Apple M-series, NVIDIA GB10, AMD Strix Halo): memory_mib is what the
    #: GPU may use by default (Metal's recommendedMaxWorkingSetSize, the GTT pool), not a separate VRAM.
    unified_memory: bool = False
    #: Unified memory: what the GPU may use once raised by the documented override (`memory_override`).
    memory_max_mib: int | None = None
    #: Unified memory: how to raise the GPU's share (`sudo sysctl iogpu.wired_limit_mb=...`, ttm.pages_limit).
    memory_override: str | None = None
    #: The engines (--engine names) that run on this device; empty: every engine gpusize models.
    engines: tuple[str, ...] = ()
    #: A MIG slice: the whole GPU it is cut from, its profile ('3g.40gb'), how many of it one GPU holds,
    #: and its streaming multiprocessors. Derived from the parent entry (core/mig.py), never in a file.
    mig_parent: str | None = field(default=None, metadata=_DERIVED)
    mig_profile: str | None = field(default=None, metadata=_DERIVED)
    mig_per_gpu: int | None = field(default=None, metadata=_DERIVED)
    sm_count: int | None = field(default=None, metadata=_DERIVED)
    #: Free memory measured on this machine (`--gpu local` only; never in the bundled catalog).
    free_mib: int | None = field(default=None, compare=False, metadata={"json": False, "catalog": False})
    #: The user catalog file this entry comes from, as given; None for the bundled catalog. Set by
    #: `sources.catalog`, never read from a file (`"catalog": False`: not a field a catalog may hold).
    catalog_file: str | None = field(default=None, compare=False, metadata={"catalog": False, **_LABEL})

    __json_properties__ = ("visible_bytes", "visible_is_measured", "supports_bf16")

    @property
    def reported_bytes(self) -> int:
        return self.memory_mib * MIB

    @property
    def terms(self) -> VendorTerms:
        """The vendor's own words for its link, context and graphs (what answers print)."""
        return VENDOR_TERMS[self.vendor]

    @property
    def tp_link(self) -> str:
        """The link tensor-parallel traffic crosses, as the vendor names it ('NVLink', 'Infinity Fabric
        (xGMI)', 'PCIe'; 'none' for a device that is one of a kind)."""
        if self.interconnect == "none":
            return "none (one device)"
        if self.interconnect in ("nvswitch", "bridge-pairs", "infinity-fabric"):
            return self.terms.link
        return "PCIe"

    @property
    def runtime(self) -> str:
        """The runtime whose view of memory the engines read: ROCm on AMD, Metal on Apple, else CUDA."""
        return self.terms.runtime

    @property
    def one_device(self) -> str | None:
        """Why one engine instance cannot span two of these (a MIG slice, a unified-memory machine), or
        None: tensor parallel and layer splits are then refused and only replicas scale."""
        if self.mig_profile:
            return (
                f"one engine instance runs per MIG slice ({self.name}): a CUDA process sees one MIG "
                "instance and slices have no peer-to-peer, so no tensor parallel across slices; run "
                "replicas instead"
            )
        if self.unified_memory:
            return f"{self.full_name} is one device sharing the host's memory: tensor parallel size 1 only"
        return None

    @property
    def memory_note(self) -> str | None:
        """Unified memory: how much of the host's RAM the GPU may use by default and how to raise it
        (None for a GPU with its own memory)."""
        if not self.unified_memory:
            return None
        if self.memory_max_mib == self.memory_mib:  # core/unified.raised: planned with it applied
            return (
                f"{self.name}: unified memory: planned with the GPU's share raised to "
                f"{self.memory_mib / 1024:.1f} GiB of the {self.marketing_memory_gb:g} GB "
                f"({self.memory_override}); the OS and other programs share the rest"
            )
        if self.memory_max_mib:
            raised = (
                f"; {self.memory_override} raises it to {self.memory_max_mib / 1024:.1f} GiB "
                f"(plan with it: --gpu {self.name}-raised)"
            )
        else:
            raised = f"; {self.memory_override}" if self.memory_override else ""
        return (
            f"{self.name}: unified memory: the GPU may use {self.memory_mib / 1024:.1f} GiB of the "
            f"{self.marketing_memory_gb:g} GB by default{raised}; the OS and other programs share the rest"
        )

    @property
    def speed_caveat(self) -> str | None:
        """Why speed figures for this GPU are not calibrated (the fitted constants come from NVIDIA
        measurements only: serving/calibrated.py), or None."""
        if self.vendor == "NVIDIA" and not self.unified_memory:
            return None
        return (
            f"speed figures for {self.full_name} are uncalibrated: the throughput constants were fitted "
            "on NVIDIA discrete GPUs only, until measurements on this device exist"
        )

    @property
    def measured_visible_gib(self) -> float | None:
        return self.rocm_visible_gib if self.vendor == "AMD" else self.cuda_visible_gib

    @property
    def assumed_reserve_mib(self) -> int:
        """The reserve subtracted from the reported total when no visible total is measured (GDDR
        cards: the GDDR class; HBM and unknown memory: the larger HBM class). Unified memory: none,
        memory_mib is already the GPU's share as the runtime reports it."""
        if self.unified_memory:
            return 0
        return GDDR_RESERVE_MIB if self.memory_type.upper().startswith("GDDR") else HBM_RESERVE_MIB

    @property
    def visible_bytes(self) -> int:
        """What the CUDA (ROCm) runtime reports as total (vLLM's utilization multiplies this). Computed
        once per GPU value (kept in its __dict__ beside its hash): a fit reads it some twenty-five
        times a row of a batch (bench/RESULTS.md)."""
        known: int | None = self.__dict__.get("_visible")
        if known is None:
            known = self._visible_bytes()
            object.__setattr__(self, "_visible", known)
        return known

    def _visible_bytes(self) -> int:
        measured = self.measured_visible_gib
        if measured is not None:
            return round(measured * GIB)
        # never negative: the catalog refuses a total at or below the reserve; a GpuSpec built elsewhere
        # (--gpu local, the API) with a smaller one has nothing visible
        return max(self.memory_mib - self.assumed_reserve_mib, 0) * MIB

    def __hash__(self) -> int:
        """The hash of the compared fields (the dataclass's own), computed once per GPU value, as
        ModelSpec keeps its hash: each engine's evaluation cache hashes the GPU of every plan a fit
        tries (42 fields; bench/RESULTS.md, batch), 8,000 times in a quote over 1,000 GPU types. Equal
        GPUs hash equal."""
        known: int | None = self.__dict__.get("_hash")  # kept: no call
        return kept_hash(self, _HASHED) if known is None else known

    @property
    def visible_is_measured(self) -> bool:
        return self.measured_visible_gib is not None

    @property
    def supports_bf16(self) -> bool:
        """False for NVIDIA GPUs below compute capability 8.0 (T4, V100): engines run them in fp16."""
        if self.compute_capability is None:
            return True
        major, _, minor = self.compute_capability.partition(".")
        return (int(major), int(minor or 0)) >= BF16_MIN_COMPUTE_CAPABILITY

    def price_for(self, count: int) -> float | None:
        """Indicative USD per hour for `count` of these GPUs; None when unpriced."""
        return self.price_usd_per_hour * count if self.price_usd_per_hour else None


#: The fields GpuSpec's equality compares (not the measured free memory, not the catalog file's name),
#: which its hash therefore covers.
_HASHED = operator.attrgetter(*(f.name for f in fields(GpuSpec) if f.compare))
