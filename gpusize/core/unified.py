"""Unified-memory devices planned with their GPU share raised (pure): `<name>-raised` is the catalog
entry with `memory_mib` = `memory_max_mib`, what the documented override (`memory_override`: macOS
`iogpu.wired_limit_mb`, Linux `ttm.pages_limit`) allows; derived from the one entry, never written twice."""

from __future__ import annotations

from dataclasses import replace

from gpusize.core.gpu import GpuSpec

__all__ = ["RAISED_SUFFIX", "raised"]

#: The suffix of a device planned with its GPU share raised ('Strix-Halo-raised').
RAISED_SUFFIX = "-raised"


def raised(gpu: GpuSpec) -> GpuSpec | None:
    """The device with the override applied, or None when it has none (a discrete GPU, GB10)."""
    if not gpu.unified_memory or not gpu.memory_max_mib or gpu.memory_max_mib == gpu.memory_mib:
        return None
    return replace(
        gpu,
        name=gpu.name + RAISED_SUFFIX,
        full_name=f"{gpu.full_name}, GPU share raised",
        aliases=tuple(a + RAISED_SUFFIX for a in gpu.aliases if " " not in a),
        memory_mib=gpu.memory_max_mib,
    )
