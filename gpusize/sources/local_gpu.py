"""This machine's GPUs (I/O edge): NVML through nvidia-ml-py when installed, else `nvidia-smi`.

`--gpu local` sizes against what is really there: each GPU's total and its FREE memory (vLLM
refuses to start when free memory is below utilization x total). The catalog supplies the rest
(bandwidth, TFLOPS, interconnect) when the device name matches an entry.
"""

from __future__ import annotations

import math
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from gpusize.core.gpu import GpuSpec
from gpusize.dataclass import dataclass
from gpusize.errors import InputError, UsageError
from gpusize.sources.catalog import Catalogs

__all__ = ["LocalGpu", "detect", "local_spec", "parse_nvidia_smi"]


@dataclass(frozen=True)
class LocalGpu:
    """A GPU of this machine as NVML or nvidia-smi reports it: name, total and free MiB."""

    name: str
    total_mib: int
    free_mib: int


def _from_nvml() -> list[LocalGpu] | None:
    try:
        # optional extra (pip install gpusize[nvml]): loaded only for --gpu local
        import pynvml  # type: ignore[import-not-found]
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
    except Exception:  # noqa: BLE001 - NVML raises its own error types; no driver -> fall back
        return None
    try:
        out = []
        for i in range(pynvml.nvmlDeviceGetCount()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(i)
            info = pynvml.nvmlDeviceGetMemoryInfo(handle)
            name = pynvml.nvmlDeviceGetName(handle)
            out.append(
                LocalGpu(
                    name.decode() if isinstance(name, bytes) else str(name),
                    int(info.total) // (1 << 20),
                    int(info.free) // (1 << 20),
                )
            )
        return out
    finally:
        pynvml.nvmlShutdown()


def parse_nvidia_smi(text: str) -> list[LocalGpu]:
    """Lines of `nvidia-smi --query-gpu=name,memory.total,memory.free --format=csv,noheader,nounits`.

    A figure that cannot be a GPU's memory (zero or negative total, free below zero or above the
    total, not a finite number) is an error: sizing against it would give a wrong verdict."""
    gpus = []
    for line in text.strip().splitlines()[:64]:
        parts = [p.strip() for p in line.rsplit(",", 2)]
        if len(parts) != 3:
            continue
        total, free = _mib(parts[1]), _mib(parts[2])
        if total is None or free is None or total <= 0 or not 0 <= free <= total:
            raise InputError(
                f"--gpu local: nvidia-smi reported total {parts[1][:20]!r} MiB and free "
                f"{parts[2][:20]!r} MiB "
                "for one GPU, which cannot be right; name the GPU with --gpu instead"
            )
        gpus.append(LocalGpu(parts[0][:120], total, free))
    return gpus


def _mib(text: str) -> int | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return int(value) if math.isfinite(value) and abs(value) < 1 << 40 else None


def _from_nvidia_smi(run: Callable[..., Any]) -> list[LocalGpu] | None:
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None
    try:
        result = run(
            [exe, "--query-gpu=name,memory.total,memory.free", "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=15,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return parse_nvidia_smi(result.stdout) if result.returncode == 0 else None


def detect(run: Callable[..., Any] = subprocess.run) -> list[LocalGpu]:
    gpus = _from_nvml()
    if not gpus:
        gpus = _from_nvidia_smi(run)
    if not gpus:
        raise UsageError(
            "--gpu local: no NVIDIA GPU found (NVML unavailable and nvidia-smi missing or "
            "failing); install the driver, or 'pip install nvidia-ml-py', or name a GPU"
        )
    return gpus


def _catalog_match(name: str, catalogs: Catalogs) -> GpuSpec | None:
    wanted = name.lower().replace("nvidia ", "").replace("geforce ", "")
    best = None
    for gpu in catalogs.gpus():
        names = [gpu.full_name, *gpu.aliases]
        if any(n.lower().replace("nvidia ", "").replace("geforce ", "") == wanted for n in names):
            return gpu
        if best is None and gpu.full_name.lower().replace("nvidia ", "").startswith(wanted):
            best = gpu
    return best


def local_spec(gpus: list[LocalGpu], catalogs: Catalogs | None = None) -> tuple[GpuSpec, int]:
    """A GpuSpec for the first local GPU type (total and free memory as measured) and how many
    GPUs of that type this machine has."""
    first = gpus[0]
    same = [g for g in gpus if g.name == first.name]
    match = _catalog_match(first.name, catalogs or Catalogs.with_env())
    measured = f"this machine: {first.name} x{len(same)} (measured now)"
    if match is None:
        base = GpuSpec(
            name="local",
            full_name=first.name,
            vendor="NVIDIA",
            segment="datacenter",
            architecture="unknown",
            memory_type="unknown",
            marketing_memory_gb=round(first.total_mib / 1024),
            memory_mib=first.total_mib,
            ecc="none",
            interconnect="unknown",
            source=measured,
        )
    else:
        base = replace(match, source=f"{measured}; other facts from catalog entry {match.name}")
    spec = replace(
        base,
        name="local",
        aliases=(),
        memory_mib=first.total_mib,
        cuda_visible_gib=None,
        rocm_visible_gib=None,
        free_mib=min(g.free_mib for g in same),
    )
    return spec, len(same)
