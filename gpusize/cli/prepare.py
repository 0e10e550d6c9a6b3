"""Turning command-line values into core values: catalogs, the model, the request, the GPUs.

Every check of a user's number (ranges, combinations) lives here, before any arithmetic, and fails
with a one-line InputError (exit 2).
"""

from __future__ import annotations

import contextlib
import math
import sys
from collections.abc import Iterator
from pathlib import Path

from gpusize.cli.output import warn
from gpusize.core.engines import engine as engine_model
from gpusize.core.engines.hf_prefill import ATTN_IMPLEMENTATIONS, TRANSFORMERS_VERSIONS
from gpusize.core.gpu import GpuSpec
from gpusize.core.parse import parse_config
from gpusize.core.plan import TP_SIZES
from gpusize.core.spec import ModelSpec
from gpusize.core.workload import (
    DTYPES,
    ENGINE_NAMES,
    KV_DTYPES,
    EngineName,
    EngineSettings,
    Request,
    Workload,
    resolve,
)
from gpusize.errors import CatalogError, InputError, UsageError
from gpusize.render.text import safe
from gpusize.sources.catalog import Catalogs
from gpusize.sources.resolve import ResolvedModel, resolve_model
from gpusize.units import canonical_dtype, parse_count, parse_tokens

__all__ = [
    "Targets",
    "catalogs",
    "choice",
    "engine_settings",
    "gpu_count",
    "load_model",
    "number",
    "progress",
    "request",
    "targets",
    "workload",
]


def choice(value: str, allowed: tuple[str, ...], flag: str) -> str:
    key = value.strip().lower()
    if key not in allowed:
        raise UsageError(f"unknown {flag} '{safe(value[:40])}'; use one of {', '.join(allowed)}")
    return key


def number(value: float | None, flag: str, low: float, high: float, low_open: bool = True) -> float | None:
    """A finite float in (low, high] (or [low, high] when not low_open)."""
    if value is None:
        return None
    inside = (value > low if low_open else value >= low) and value <= high
    if not math.isfinite(value) or not inside:
        bracket = "(" if low_open else "["
        raise UsageError(f"invalid {flag} {value}: must be in {bracket}{low:g}, {high:g}]")
    return value


def gpu_count(value: int | None) -> int | None:
    if value is not None and value not in TP_SIZES:
        raise UsageError(f"invalid --gpus {value}: one server runs 1, 2, 4 or 8 GPUs")
    return value


def catalogs(models_files: list[str] | None, gpus_files: list[str] | None) -> Catalogs:
    for path in [*(models_files or []), *(gpus_files or [])]:
        if not Path(path).is_file():
            raise CatalogError(f"{safe(path[:200])}: no such catalog file")
    return Catalogs.with_env([Path(p) for p in models_files or []], [Path(p) for p in gpus_files or []])


@contextlib.contextmanager
def progress(message: str) -> Iterator[None]:
    """One status line on stderr while the network is used, cleared after; silent off a terminal."""
    shown = sys.stderr.isatty()
    if shown:
        with contextlib.suppress(OSError, ValueError):
            sys.stderr.write(f"{safe(message)}...")
            sys.stderr.flush()
    try:
        yield
    finally:
        if shown:
            with contextlib.suppress(OSError, ValueError):
                sys.stderr.write("\r\x1b[K")
                sys.stderr.flush()


def load_model(
    reference: str, revision: str | None, best_effort: bool, cats: Catalogs
) -> tuple[ResolvedModel, ModelSpec]:
    resolved = resolve_model(reference, revision, cats, progress)
    where = "config.json" if resolved.source != "gguf" else "GGUF metadata"
    return resolved, parse_config(resolved.config, best_effort=best_effort, where=where)


def engine_settings(
    name: str | None,
    resolved: ResolvedModel,
    utilization: float | None = None,
    max_num_seqs: int | None = None,
    max_num_batched_tokens: int | None = None,
    mem_fraction: float | None = None,
    n_gpu_layers: int | None = None,
    flash_attn: bool = False,
    attn_implementation: str | None = None,
    transformers_version: str | None = None,
    expandable_segments: bool = False,
) -> EngineSettings:
    chosen = (
        choice(name, ENGINE_NAMES, "--engine")
        if name
        else ("llamacpp" if resolved.source == "gguf" else "vllm")
    )
    if n_gpu_layers is not None and not 0 <= n_gpu_layers <= 100_000:
        raise UsageError(f"invalid --n-gpu-layers {n_gpu_layers}: a count from 0")
    return EngineSettings(
        name=engine_name(chosen),
        gpu_memory_utilization=number(utilization, "--gpu-memory-utilization", 0, 1),
        max_num_seqs=parse_count(max_num_seqs, "--max-num-seqs") if max_num_seqs is not None else None,
        max_num_batched_tokens=parse_count(max_num_batched_tokens, "--max-num-batched-tokens", 1 << 24)
        if max_num_batched_tokens is not None
        else None,
        mem_fraction_static=number(mem_fraction, "--mem-fraction-static", 0, 0.999),
        n_gpu_layers=n_gpu_layers,
        flash_attn=flash_attn,
        attn_implementation=choice(attn_implementation, ATTN_IMPLEMENTATIONS, "--attn-implementation")
        if attn_implementation is not None
        else None,
        transformers_version=choice(transformers_version, TRANSFORMERS_VERSIONS, "--transformers-version")
        if transformers_version is not None
        else None,
        expandable_segments=expandable_segments,
    )


def engine_name(name: str) -> EngineName:
    for known in ENGINE_NAMES:
        if known == name:
            return known
    raise UsageError(f"unknown --engine '{safe(name[:40])}'")


def request(
    resolved: ResolvedModel,
    ctx: str,
    settings: EngineSettings,
    batch: int = 1,
    dtype: str = "auto",
    kv_dtype: str = "auto",
    mtp: bool = False,
) -> Request:
    weight = choice(dtype, DTYPES, "--dtype")
    return Request(
        context_tokens=parse_tokens(ctx),
        batch=parse_count(batch, "--batch", 1 << 16),
        dtype=weight if weight == "auto" else canonical_dtype(weight),
        kv_dtype=choice(kv_dtype, KV_DTYPES, "--kv-dtype"),
        include_mtp=mtp,
        engine=settings,
        checkpoint_bytes=resolved.checkpoint_bytes,
        stored_layers=resolved.stored_layers,
    )


def workload(spec: ModelSpec, req: Request) -> Workload:
    work = resolve(spec, req, engine_model(req.engine.name).settings)
    if work.checkpoint_warning:
        warn(work.checkpoint_warning)
    return work


class Targets:
    """The GPU types to plan over and the most GPUs one server of them may hold."""

    def __init__(self, gpus: list[GpuSpec], max_count: int, local_count: int | None) -> None:
        self.gpus, self.max_count, self.local_count = gpus, max_count, local_count


def targets(name: str | None, cats: Catalogs, wanted: int | None = None) -> Targets:
    """A catalog GPU, every catalog GPU (None), or `local`: this machine's GPUs, whose count bounds
    --gpus (asking for 8 on a machine with one is an error, not a plan)."""
    if not name:
        return Targets(list(cats.gpus()), 8, None)
    if name.strip().lower() != "local":
        return Targets([cats.find_gpu(name)], 8, None)
    # runs nvidia-smi (subprocess, shutil: 4 ms of start-up), so loaded only for --gpu local
    from gpusize.sources import local_gpu

    spec, count = local_gpu.local_spec(local_gpu.detect(), cats)
    if wanted is not None and wanted > count:
        raise InputError(
            f"--gpu local: this machine has {count} {safe(spec.full_name)} GPU(s); --gpus {wanted} asks "
            "for more"
        )
    return Targets([spec], max(n for n in TP_SIZES if n <= count), count)
