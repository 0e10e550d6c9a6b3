"""Strict validation of catalog files (pydantic; imported only when a file is not in the cache).

GPU entries are validated as `core.gpu.GpuSpec` itself (pydantic validates the stdlib dataclass in
strict JSON mode: "80000" or true is not a memory size, .inf and NaN are not numbers, unknown keys
are refused), then the ranges and cross-field rules below. Model entries follow `ModelEntry`.
Errors name the file, the entry and the field: `gpus.yaml: [12].memory_mib: must be > 0`.
"""

from __future__ import annotations

import datetime
import functools
import json
import re
from dataclasses import fields
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from gpusize.core.gpu import GpuSpec
from gpusize.core.registry import ENGINE_NAMES
from gpusize.dataclass import dataclass
from gpusize.errors import CatalogError
from gpusize.sources import yaml_events

__all__ = ["MAX_YAML_NODES", "ModelEntry", "validate_file"]

#: Nodes a catalog may expand to once YAML aliases are followed (the bundled models file has about
#: 40,000); a few hundred bytes of nested aliases would otherwise expand to billions.
MAX_YAML_NODES = 2_000_000
#: GpuSpec fields that must be > 0 when present, and those that must be >= 0.
_POSITIVE = (
    "marketing_memory_gb",
    "memory_mib",
    "memory_max_mib",
    "cuda_visible_gib",
    "rocm_visible_gib",
    "ecc_off_memory_mib",
    "bandwidth_gbps",
    "bf16_tflops",
    "fp8_tflops",
    "nvlink_gbps",
    "pcie_gen",
    "tdp_w",
    "price_usd_per_hour",
    "purchase_price_usd",
)
#: Date fields: full dates, except a purchase price's source date, which may give only a month or a year.
_DATES = {
    "price_date": ("%Y-%m-%d",),
    "source_date": ("%Y-%m-%d",),
    "purchase_price_date": ("%Y-%m-%d", "%Y-%m", "%Y"),
}
_COMPUTE_CAPABILITY = re.compile(r"\d{1,2}\.\d{1,2}")
_GFX_TARGET = re.compile(r"gfx[0-9a-f]{3,4}")
#: Interconnects that belong to one vendor (NVLink parts vs AMD Infinity Fabric / xGMI).
_VENDOR_LINKS = {"nvswitch": "NVIDIA", "bridge-pairs": "NVIDIA", "infinity-fabric": "AMD"}
_NON_NEGATIVE = ("mig_instances",)
#: The GpuSpec fields a catalog entry may hold (not the measured free memory, not the file's own name).
_FILE_GPU_FIELDS = {f.name for f in fields(GpuSpec) if f.metadata.get("catalog", True)}


@dataclass(frozen=True)
class _StrictGpu(GpuSpec):
    """GpuSpec as pydantic validates a catalog entry: strict JSON types, no unknown keys."""

    __pydantic_config__ = ConfigDict(strict=True, extra="forbid", allow_inf_nan=False)


class ModelEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)

    name: str = Field(min_length=1, max_length=200)
    hf_id: str = Field(min_length=3, max_length=200)
    aliases: tuple[str, ...] = ()
    source: str = Field(min_length=1)
    params_published: int | None = Field(default=None, gt=0)
    params_source: str | None = None
    family: str | None = None
    #: YYYY-MM, the month of the first public weights (with released_source).
    released: str | None = Field(default=None, pattern=r"^(19|20)[0-9]{2}-(0[1-9]|1[0-2])$")
    released_source: str | None = None
    config: dict[str, Any]


def _yaml_rows(path: Path, raw: bytes) -> list[Any]:
    try:
        raw.decode("utf-8")  # checked, then parsed from the bytes: a str copy costs the file's size twice
    except UnicodeDecodeError as exc:
        raise CatalogError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    try:
        data = yaml_events.safe_load(raw)  # CSafeLoader (SafeLoader without libyaml) only
    except yaml.YAMLError as exc:
        raise CatalogError(f"{path.name}: not valid YAML ({exc})".splitlines()[0]) from None
    except ValueError as exc:  # PyYAML's constructors raise it for a date such as 2026-13-45
        raise CatalogError(f"{path.name}: not valid YAML (a value: {exc})".splitlines()[0]) from None
    except RecursionError:
        raise CatalogError(f"{path.name}: nested too deeply") from None
    if not isinstance(data, list):
        raise CatalogError(f"{path.name}: expected a list of entries")
    _check_expansion(path, data)
    return data


def _check_expansion(path: Path, data: Any) -> None:
    """Refuse a document whose aliases expand beyond MAX_YAML_NODES (sizes memoized per object, so
    the check is linear in the document, not in its expansion)."""
    sizes: dict[int, int] = {}

    def size(node: Any, depth: int = 0) -> int:
        if depth > 200:
            raise CatalogError(f"{path.name}: nested too deeply")
        key = id(node)
        if key in sizes:
            return sizes[key]
        total = 1
        for child in node.values() if isinstance(node, dict) else node:
            # a scalar counts one without a call (most values are scalars: 5x faster on a large file)
            total += size(child, depth + 1) if isinstance(child, (dict, list)) else 1
        if total > MAX_YAML_NODES:
            raise CatalogError(f"{path.name}: expands to more than {MAX_YAML_NODES:,} values (YAML aliases?)")
        sizes[key] = total
        return total

    if isinstance(data, (dict, list)):
        size(data)


def _where(path: Path, i: int, loc: tuple[Any, ...]) -> str:
    tail = ".".join(str(p) for p in loc)
    return f"{path.name}: [{i}]{'.' + tail if tail else ''}"


def _gpu_row(path: Path, i: int, row: Any, text: str, adapter: TypeAdapter[_StrictGpu]) -> dict[str, Any]:
    if not isinstance(row, dict):
        raise CatalogError(f"{path.name}: [{i}]: expected a mapping of fields")
    unknown = sorted(set(row) - _FILE_GPU_FIELDS)
    if unknown:
        raise CatalogError(f"{_where(path, i, (unknown[0],))}: unknown field")
    try:
        gpu = adapter.validate_json(text)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise CatalogError(f"{_where(path, i, tuple(err['loc']))}: {err['msg'].lower()}") from None
    for name in _POSITIVE:
        value = getattr(gpu, name)
        if value is not None and value <= 0:
            raise CatalogError(f"{_where(path, i, (name,))}: must be > 0")
    for name in _NON_NEGATIVE:
        value = getattr(gpu, name)
        if value is not None and value < 0:
            raise CatalogError(f"{_where(path, i, (name,))}: must be >= 0")
    for name in ("cuda_visible_gib", "rocm_visible_gib"):
        value = getattr(gpu, name)
        if value is not None and value * 1024 > gpu.memory_mib:
            raise CatalogError(f"{_where(path, i, (name,))}: above the reported total memory_mib")
    if gpu.memory_mib <= gpu.assumed_reserve_mib:  # nothing would be left: negative visible bytes
        raise CatalogError(
            f"{_where(path, i, ('memory_mib',))}: {gpu.memory_mib:,} MiB is not above the "
            f"{gpu.assumed_reserve_mib} MiB the runtime reserves ({gpu.memory_type} class)"
        )
    if gpu.memory_mib > 16 * 1024 * 1024:
        raise CatalogError(f"{_where(path, i, ('memory_mib',))}: beyond any accelerator (16 TiB)")
    problem = _gpu_rule(gpu)
    if problem:
        raise CatalogError(f"{_where(path, i, (problem[0],))}: {problem[1]}")
    # the instance's own fields less those no file holds, and none of what it keeps beside them (its
    # hash, its visible bytes), in field order (dataclasses.asdict deep-copies: 10x slower)
    return {name: value for name, value in vars(gpu).items() if name in _FILE_GPU_FIELDS}


@functools.lru_cache(maxsize=4096)  # a large catalog repeats its dates; strptime is slow
def _date_problem(value: str, formats: tuple[str, ...]) -> str | None:
    for fmt in formats:
        try:
            datetime.datetime.strptime(value, fmt)
            return None
        except ValueError:
            continue
    return f"'{value[:40]}' is not a date ({' or '.join(f.replace('%', '') for f in formats)})"


def _gpu_rule(gpu: GpuSpec) -> tuple[str, str] | None:
    """The first cross-field rule an entry breaks, as (field, message): dates are dates, a price has
    its date (and a purchase price its source), vendor-specific facts stay with their vendor."""
    for name, formats in _DATES.items():
        value = getattr(gpu, name)
        if value is not None and (problem := _date_problem(value, formats)):
            return name, problem
    if gpu.price_usd_per_hour is not None and gpu.price_date is None:
        return "price_date", "required with price_usd_per_hour (the date of the price's source)"
    if gpu.purchase_price_usd is not None:
        for name in ("purchase_price_date", "purchase_price_source"):
            if not getattr(gpu, name):
                return name, "required with purchase_price_usd"
    amd = gpu.vendor == "AMD"
    for name, allowed in (
        ("compute_capability", gpu.vendor == "NVIDIA"),
        ("cuda_visible_gib", gpu.vendor == "NVIDIA"),
        ("rocm_visible_gib", amd),
        ("gfx_target", amd),
    ):
        if getattr(gpu, name) is not None and not allowed:
            return name, f"not a fact of a {gpu.vendor} GPU"
    if gpu.compute_capability is not None and not _COMPUTE_CAPABILITY.fullmatch(gpu.compute_capability):
        return "compute_capability", f"'{gpu.compute_capability[:20]}' is not major.minor (8.9)"
    if gpu.gfx_target is not None and not _GFX_TARGET.fullmatch(gpu.gfx_target):
        return "gfx_target", f"'{gpu.gfx_target[:20]}' is not an LLVM target (gfx942)"
    unknown = [e for e in gpu.engines if e not in ENGINE_NAMES]
    if unknown:
        return "engines", f"'{unknown[0][:20]}' is not an engine (one of {', '.join(ENGINE_NAMES)})"
    for name in ("memory_max_mib", "memory_override"):
        if getattr(gpu, name) is not None and not gpu.unified_memory:
            return name, "only for a unified-memory device (unified_memory: true)"
    if gpu.memory_max_mib is not None and gpu.memory_max_mib < gpu.memory_mib:
        return "memory_max_mib", "below memory_mib (what the override raises the GPU's share to)"
    owner = _VENDOR_LINKS.get(gpu.interconnect)
    if owner is not None and owner != gpu.vendor:
        return "interconnect", f"{gpu.interconnect} is an {owner} interconnect, not {gpu.vendor}'s"
    return None


def _model_row(path: Path, i: int, text: str) -> dict[str, Any]:
    try:
        entry = ModelEntry.model_validate_json(text)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise CatalogError(f"{_where(path, i, tuple(err['loc']))}: {err['msg'].lower()}") from None
    if not isinstance(entry.config.get("model_type"), str):
        raise CatalogError(f"{_where(path, i, ('config', 'model_type'))}: missing (a config.json needs it)")
    return entry.model_dump()


def validate_file(path: Path, raw: bytes, kind: str) -> list[dict[str, Any]]:
    """Every entry of a catalog file validated, as plain dicts; names unique case-insensitively."""
    rows = _yaml_rows(path, raw)
    out: list[dict[str, Any]] = []
    seen: dict[str, int] = {}
    adapter = TypeAdapter(_StrictGpu)
    for i, row in enumerate(rows):
        try:
            text = json.dumps(row, default=str, allow_nan=False)
        except ValueError:  # allow_nan=False refuses .inf and .nan anywhere in the entry
            raise CatalogError(f"{path.name}: [{i}]: holds a value that is not a finite number") from None
        entry = _gpu_row(path, i, row, text, adapter) if kind == "gpus" else _model_row(path, i, text)
        names = [entry["name"], *entry["aliases"], *([entry["hf_id"]] if kind == "models" else [])]
        for key in {n.strip().lower() for n in names}:
            if key in seen:
                raise CatalogError(f"{path.name}: [{i}]: name '{key}' already used by [{seen[key]}]")
            seen[key] = i
        out.append(entry)
    return out
