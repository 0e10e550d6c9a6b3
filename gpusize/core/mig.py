"""MIG slices as GPUs (pure): each profile of a MIG-capable catalog GPU becomes a GpuSpec of its own,
derived from the whole GPU's entry (data/gpus.yaml, whose `mig_instances` says it has MIG) and the
profile table below, so a slice is declared once.

A slice is one CUDA device with its own memory, SMs and share of the memory bandwidth; a process sees
one MIG instance and slices have no peer-to-peer ("P2P No" in `nvidia-smi mig -lgip`), so one engine
instance runs per slice (GpuSpec.one_device) and more slices scale only as replicas.

Memory is as `nvidia-smi mig -lgip` lists it (GiB, two decimals) on a real board; SMs from the same
listing. Bandwidth: the parent's, times the slice's fraction of the memory slices (NVIDIA MIG User
Guide, "Supported MIG Profiles": 1/8 for 1g.10gb, 2/8 for 1g.20gb and 2g.20gb, 4/8 for 3g and 4g,
all for 7g; RTX PRO 6000: quarters); dense tensor TFLOPS: the parent's times its compute slices over
all of them (g/7, g/4) - an estimate, shown as derived. A profile whose memory no public listing shows
is left out (named in the table's `omitted`), never guessed. The CUDA-visible total of a slice is left
to the assumed HBM reserve (core/gpu.py): one public torch reading (an H100 NVL 7g.94gb slice,
total_memory 93.12 GiB = its listed memory) suggests a slice shows all of it, too few to rely on.
"""

from __future__ import annotations

from dataclasses import replace

from gpusize.core.gpu import GpuSpec
from gpusize.dataclass import dataclass

__all__ = ["MIG_TABLES", "MigProfile", "MigTable", "mig_slices", "slice_name"]


@dataclass(frozen=True)
class MigProfile:
    """One GPU-instance profile: name ('3g.40gb'), memory as listed (GiB), SMs (None: not listed),
    instances one GPU holds, and its share of the memory slices (numerator over the table's)."""

    name: str
    memory_gib: float
    sm_count: int | None
    per_gpu: int
    memory_slices: int

    @property
    def compute_slices(self) -> int:
        return int(self.name.split("g.", 1)[0])


@dataclass(frozen=True)
class MigTable:
    """The profiles of one board, with the listing they are copied from."""

    profiles: tuple[MigProfile, ...]
    memory_slices: int
    compute_slices: int
    source: str
    omitted: str = ""


_GUIDE = (
    "fractions of memory and SMs: NVIDIA Multi-Instance GPU User Guide, Supported MIG Profiles "
    "(docs.nvidia.com/datacenter/tesla/mig-user-guide/supported-mig-profiles.html)"
)

A100_40GB = MigTable(
    (
        MigProfile("1g.5gb", 4864 / 1024, 14, 7, 1),
        MigProfile("1g.10gb", 9856 / 1024, 14, 4, 2),
        MigProfile("2g.10gb", 9856 / 1024, 28, 3, 2),
        MigProfile("3g.20gb", 19968 / 1024, 42, 2, 4),
        MigProfile("4g.20gb", 19968 / 1024, 56, 1, 4),
        MigProfile("7g.40gb", 40192 / 1024, 98, 1, 8),
    ),
    8,
    7,
    "MemorySizeMB and SMs of NVIDIA/go-nvml pkg/nvml/mock/shared/gpus/a100.go (NVML's mock of a DGX A100; "
    "its 7g.40gb SM count 96 read as 98 as in the 80GB table); " + _GUIDE,
)
A100_80GB = MigTable(
    (
        MigProfile("1g.10gb", 9856 / 1024, 14, 7, 1),
        MigProfile("1g.20gb", 19968 / 1024, 14, 4, 2),
        MigProfile("2g.20gb", 19968 / 1024, 28, 3, 2),
        MigProfile("3g.40gb", 40192 / 1024, 42, 2, 4),
        MigProfile("4g.40gb", 40192 / 1024, 56, 1, 4),
        MigProfile("7g.80gb", 80384 / 1024, 98, 1, 8),
    ),
    8,
    7,
    "NVIDIA/go-nvml pkg/nvml/mock/shared/gpus/a100.go (A100 80GB profiles); 2g.20gb = 19968MiB and 28 SMs "
    "also in a real A100-SXM4-80GB nvidia-smi (XuehaiPan/nvitop#8); " + _GUIDE,
)
H100_80GB = MigTable(
    (
        MigProfile("1g.10gb", 9.75, 16, 7, 1),
        MigProfile("1g.20gb", 19.62, 26, 4, 2),
        MigProfile("2g.20gb", 19.62, 32, 3, 2),
        MigProfile("3g.40gb", 39.50, 60, 2, 4),
        MigProfile("4g.40gb", 39.50, 64, 1, 4),
        MigProfile("7g.80gb", 79.25, 132, 1, 8),
    ),
    8,
    7,
    "nvidia-smi mig -lgip on an H100 80GB (jbarrow.ai/field_notes/nvidia-mig, 2026-06-11); " + _GUIDE,
)
H100_94GB = MigTable(
    (
        MigProfile("1g.12gb", 10.75, 16, 7, 1),
        MigProfile("1g.24gb", 21.62, 26, 4, 2),
        MigProfile("2g.24gb", 21.62, 32, 3, 2),
        MigProfile("3g.47gb", 46.38, None, 2, 4),
        MigProfile("4g.47gb", 46.38, 64, 1, 4),
        MigProfile("7g.94gb", 93.12, 132, 1, 8),
    ),
    8,
    7,
    "nvidia-smi mig -lgip on an H100 NVL (NVIDIA/gpu-operator#900, 2024-08-05); 3g.47gb = 46.38 GiB "
    "(NVIDIA/mig-parted#101, tariq1890, 2024-07-25); 4g.47gb 46.38 GiB / 64 SMs and 7g.94gb 93.12 GiB / 132 "
    "SMs in a public -lgip listing of an H100 NVL (GitHub code index); " + _GUIDE,
    "3g.47gb SM count: not in the listings found",
)
H200_141GB = MigTable(
    (
        MigProfile("1g.18gb", 16.00, 16, 7, 1),
        MigProfile("1g.35gb", 32.25, 26, 4, 2),
        MigProfile("2g.35gb", 32.25, 32, 3, 2),
        MigProfile("3g.71gb", 69.50, 60, 2, 4),
        MigProfile("4g.71gb", 69.50, 64, 1, 4),
        MigProfile("7g.141gb", 139.75, 132, 1, 8),
    ),
    8,
    7,
    "nvidia-smi mig -lgip on an H200 (NVIDIA/mig-parted#120, KeithMnemonic); " + _GUIDE,
)
GH200_144GB = MigTable(
    (
        MigProfile("1g.18gb", 17.50, 16, 7, 1),
        MigProfile("1g.36gb", 35.25, 26, 4, 2),
        MigProfile("2g.36gb", 35.25, 32, 3, 2),
    ),
    8,
    7,
    "nvidia-smi mig -lgip on a GH200 144G HBM3e (NVIDIA/mig-parted#139, 2024-10-23); " + _GUIDE,
    "3g.72gb, 4g.72gb and 7g.144gb: the listing's excerpt stops before them",
)
B200_180GB = MigTable(
    (
        MigProfile("1g.23gb", 20.50, 18, 7, 1),
        MigProfile("1g.45gb", 44.25, 30, 4, 2),
        MigProfile("2g.45gb", 44.25, 36, 3, 2),
        MigProfile("3g.90gb", 89.00, 70, 2, 4),
        MigProfile("4g.90gb", 89.00, 72, 1, 4),
        MigProfile("7g.180gb", 178.50, 148, 1, 8),
    ),
    8,
    7,
    "nvidia-smi mig -lgip on a B200 (NVIDIA/gpu-operator#1351, 2025-03-20: 1g.23gb 20.50, 1g.45gb, 2g.45gb "
    "44.25 GiB; an earlier driver listed 1g.23gb at 22.00, NVIDIA/gpu-operator#1242: the smaller is used); "
    "all six profiles with SMs as re-measured on a B200 180 GB on 2026-09-06 (a TensorRT cookbook note, "
    "'MIG (Multi-Instance GPU)': 7g.180gb 148 SM 178.50 GiB, 4g.90gb 72 SM and 3g.90gb 70 SM 89.00 GiB); "
    + _GUIDE,
)
GB200_186GB = MigTable(
    (
        MigProfile("1g.23gb", 22.00, 18, 7, 1),
        MigProfile("1g.47gb", 45.50, 32, 4, 2),
        MigProfile("2g.47gb", 45.50, 38, 3, 2),
    ),
    8,
    7,
    "nvidia-smi mig -lgip on a production GB200 (NVIDIA/mig-parted#227, 2025-08-07); " + _GUIDE,
    "3g.93gb, 4g.93gb and 7g.186gb: the listing's excerpt stops before them",
)
RTX_PRO_6000_SERVER = MigTable(
    (
        MigProfile("1g.24gb", 23.12, 46, 4, 1),
        MigProfile("2g.48gb", 46.50, 94, 2, 2),
    ),
    4,
    4,
    "nvidia-smi mig -lgip on an RTX PRO 6000 Blackwell Server Edition (bigstack-oss/cubecos#312); "
    "4 memory and compute slices (NVIDIA MIG User Guide, RTX PRO 6000 profiles)",
    "4g.96gb: not in the listing's excerpt",
)

#: Catalog GPU name -> its board's profiles. A MIG-capable GPU not named here has no slices yet
#: (H100 PCIe: 114 SMs, no listing found; H200 NVL, GH200 96GB, B300: no listing found).
MIG_TABLES: dict[str, MigTable] = {
    "A100-40GB": A100_40GB,
    "A100-40GB-PCIe": A100_40GB,
    "A100-80GB": A100_80GB,
    "A100-80GB-PCIe": A100_80GB,
    "H100-SXM": H100_80GB,
    "H100-NVL": H100_94GB,
    "H200-SXM": H200_141GB,
    "GH200-144GB": GH200_144GB,
    "B200": B200_180GB,
    "GB200": GB200_186GB,
    "RTX-PRO-6000-Server": RTX_PRO_6000_SERVER,
}


def slice_name(gpu_name: str, profile: str) -> str:
    """'H100-SXM' + '3g.40gb' -> 'H100-SXM-MIG-3g.40gb' (each alias gets the same suffix)."""
    return f"{gpu_name}-MIG-{profile}"


def mig_slices(gpu: GpuSpec) -> tuple[GpuSpec, ...]:
    """The MIG slices of one catalog GPU: none when its entry says it has no MIG (`mig_instances` 0 or
    null), when no profile table is known, or when the table's most instances disagree with the entry."""
    table = MIG_TABLES.get(gpu.name)
    if table is None or not gpu.mig_instances or gpu.mig_instances != table.compute_slices:
        return ()
    return tuple(_slice(gpu, table, p) for p in table.profiles)


def _scaled(value: float | None, share: float) -> float | None:
    return round(value * share, 1) if value else None


def _slice(gpu: GpuSpec, table: MigTable, p: MigProfile) -> GpuSpec:
    memory_share = p.memory_slices / table.memory_slices
    compute_share = p.compute_slices / table.compute_slices
    names = (gpu.name, *(a for a in gpu.aliases if " " not in a))
    return replace(
        gpu,
        name=slice_name(gpu.name, p.name),
        full_name=f"{gpu.full_name} MIG {p.name}",
        aliases=tuple(slice_name(n, p.name) for n in names[1:]),
        memory_mib=round(p.memory_gib * 1024),
        marketing_memory_gb=float(p.name.split(".", 1)[1].removesuffix("gb")),
        cuda_visible_gib=None,
        ecc_off_memory_mib=None,
        bandwidth_gbps=_scaled(gpu.bandwidth_gbps, memory_share),
        bf16_tflops=_scaled(gpu.bf16_tflops, compute_share),
        fp8_tflops=_scaled(gpu.fp8_tflops, compute_share),
        nvlink_gbps=None,
        interconnect="none",
        p2p=False,
        tdp_w=None,
        mig_instances=0,
        price_usd_per_hour=None,
        price_date=None,
        price_source=f"not priced: a MIG slice is rented by the slice where offered; the whole {gpu.name} "
        f"is priced in its own entry",
        purchase_price_usd=None,
        purchase_price_date=None,
        purchase_price_kind=None,
        purchase_price_source=None,
        source=f"{table.source}; bandwidth = {gpu.name}'s x {p.memory_slices}/{table.memory_slices} memory "
        f"slices, TFLOPS = {gpu.name}'s x {p.compute_slices}/{table.compute_slices} compute slices (derived)",
        notes=f"MIG slice of {gpu.full_name}: {p.per_gpu} per GPU; one engine instance per slice, no "
        "tensor parallel across slices",
        mig_parent=gpu.name,
        mig_profile=p.name,
        mig_per_gpu=p.per_gpu,
        sm_count=p.sm_count,
    )
