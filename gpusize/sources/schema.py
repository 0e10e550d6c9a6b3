"""Strict validation of catalog files (pydantic; imported only when a file is not in the cache).

GPU entries are validated as `core.gpu.GpuSpec` itself (pydantic validates the stdlib dataclass in
strict JSON mode: "80000" or true is not a memory size, .inf and NaN are not numbers, unknown keys
are refused), then the ranges and cross-field rules below. Model entries follow `ModelEntry`.
Errors name the file, the entry and the field: `gpus.yaml: [12].memory_mib: must be > 0`.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from gpusize.core.gpu import GpuSpec
from gpusize.errors import CatalogError

__all__ = ["MAX_YAML_NODES", "ModelEntry", "validate_file"]

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
#: Nodes a catalog may expand to once YAML aliases are followed (the bundled models file has about
#: 40,000); a few hundred bytes of nested aliases would otherwise expand to billions.
MAX_YAML_NODES = 2_000_000
#: GpuSpec fields that must be > 0 when present, and those that must be >= 0.
_POSITIVE = (
    "marketing_memory_gb",
    "memory_mib",
    "cuda_visible_gib",
    "ecc_off_memory_mib",
    "bandwidth_gbps",
    "bf16_tflops",
    "fp8_tflops",
    "nvlink_gbps",
    "pcie_gen",
    "tdp_w",
    "price_usd_per_hour",
)
_NON_NEGATIVE = ("mig_instances",)
_FILE_GPU_FIELDS = {f.name for f in fields(GpuSpec)} - {"free_mib"}


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
    config: dict[str, Any]


def _yaml_rows(path: Path, raw: bytes) -> list[Any]:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CatalogError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    try:
        data = yaml.load(text, Loader=_Loader)  # noqa: S506 - CSafeLoader/SafeLoader only
    except yaml.YAMLError as exc:
        raise CatalogError(f"{path.name}: not valid YAML ({exc})".splitlines()[0]) from None
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
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else ()
        total = 1 + sum(size(child, depth + 1) for child in children)
        if total > MAX_YAML_NODES:
            raise CatalogError(f"{path.name}: expands to more than {MAX_YAML_NODES:,} values (YAML aliases?)")
        sizes[key] = total
        return total

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
    if gpu.cuda_visible_gib is not None and gpu.cuda_visible_gib * 1024 > gpu.memory_mib:
        raise CatalogError(f"{_where(path, i, ('cuda_visible_gib',))}: above the reported total memory_mib")
    if gpu.memory_mib > 16 * 1024 * 1024:
        raise CatalogError(f"{_where(path, i, ('memory_mib',))}: beyond any accelerator (16 TiB)")
    return {k: v for k, v in asdict(gpu).items() if k != "free_mib"}


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
