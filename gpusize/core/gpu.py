"""GpuSpec: the facts of one accelerator type (pure value; `sources.catalog` builds it from YAML)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from gpusize.units import GIB, MIB

__all__ = ["DEFAULT_CUDA_RESERVE_MIB", "GpuSpec", "Interconnect", "Segment", "Vendor"]

Vendor = Literal["NVIDIA", "AMD", "Intel"]
Segment = Literal["consumer", "workstation", "datacenter"]
Interconnect = Literal["nvswitch", "bridge-pairs", "infinity-fabric", "pcie", "unknown"]

#: When no CUDA-visible total is published, the driver/CUDA reserve subtracted from the reported
#: total: the largest gap seen between nvidia-smi's total and torch's (A100 80GB: 696 MiB, H200:
#: 698 MiB, H100: 468 MiB; shared reference gpus.md). An assumption, shown as such in every output.
DEFAULT_CUDA_RESERVE_MIB = 698


@dataclass(frozen=True)
class GpuSpec:
    """One accelerator type. Memory in MiB as the device reports it; everything else as sourced."""

    name: str
    full_name: str
    vendor: Vendor
    segment: Segment
    architecture: str
    memory_type: str
    marketing_memory_gb: float
    memory_mib: int
    ecc: Literal["on", "off", "none"]
    interconnect: Interconnect
    source: str
    aliases: tuple[str, ...] = ()
    #: Total seen by torch.cuda.mem_get_info (what vLLM's utilization multiplies), where measured.
    cuda_visible_gib: float | None = None
    ecc_off_memory_mib: int | None = None
    bandwidth_gbps: float | None = None
    bf16_tflops: float | None = None
    fp8_tflops: float | None = None
    nvlink_gbps: float | None = None
    pcie_gen: int | None = None
    tdp_w: float | None = None
    #: Maximum MIG instances (0 = no MIG; None = supported, count unsourced).
    mig_instances: int | None = None
    price_usd_per_hour: float | None = None
    price_date: str | None = None
    notes: str | None = None
    #: Free memory measured on this machine (`--gpu local` only; never in the bundled catalog).
    free_mib: int | None = field(default=None, compare=False, metadata={"json": False})

    __json_properties__ = ("visible_bytes", "visible_is_measured")

    @property
    def reported_bytes(self) -> int:
        return self.memory_mib * MIB

    @property
    def visible_bytes(self) -> int:
        """What the CUDA runtime reports as total (vLLM's utilization multiplies this)."""
        if self.cuda_visible_gib is not None:
            return round(self.cuda_visible_gib * GIB)
        return (self.memory_mib - DEFAULT_CUDA_RESERVE_MIB) * MIB

    @property
    def visible_is_measured(self) -> bool:
        return self.cuda_visible_gib is not None

    def price_for(self, count: int) -> float | None:
        """Indicative USD per hour for `count` of these GPUs; None when unpriced."""
        return self.price_usd_per_hour * count if self.price_usd_per_hour else None
