"""The only YAML reader: schemas for data/gpus.yaml and data/models.yaml, lookup with suggestions.

Catalogs ship inside the wheel as gpusize/data/*.yaml and live in the checkout's top-level data/;
`data_dir()` finds whichever exists. Files are parsed with the C loader when PyYAML has it.
"""

from __future__ import annotations

import difflib
import functools
import os
import re
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from gpusize.errors import CatalogError, UnknownNameError
from gpusize.units import GIB, MIB

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

#: When no CUDA-visible total is published, the driver/CUDA reserve subtracted from the reported
#: total: the largest gap seen between nvidia-smi's total and torch's (A100 80GB: 696 MiB, H200:
#: 698 MiB, H100: 468 MiB; ../shared/reference/gpus.md, surprise 2). An assumption, shown as such.
DEFAULT_CUDA_RESERVE_MIB = 698


class _Entry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1)
    aliases: tuple[str, ...] = ()
    source: str = Field(min_length=1)


class GpuSpec(_Entry):
    full_name: str
    vendor: Literal["NVIDIA", "AMD", "Intel"]
    segment: Literal["consumer", "workstation", "datacenter"]
    architecture: str
    memory_type: str
    marketing_memory_gb: float = Field(gt=0)
    memory_mib: int = Field(gt=0)
    cuda_visible_gib: float | None = Field(default=None, gt=0)
    ecc: Literal["on", "off", "none"]
    ecc_off_memory_mib: int | None = Field(default=None, gt=0)
    bandwidth_gbps: float | None = Field(default=None, gt=0)
    bf16_tflops: float | None = Field(default=None, gt=0)
    fp8_tflops: float | None = Field(default=None, gt=0)
    nvlink_gbps: float | None = Field(default=None, gt=0)
    interconnect: Literal["nvswitch", "bridge-pairs", "pcie", "unknown"]
    pcie_gen: int | None = Field(default=None, gt=0)
    tdp_w: float | None = Field(default=None, gt=0)
    mig_instances: int | None = Field(default=None, ge=0)  # None: supported, count unsourced
    price_usd_per_hour: float | None = Field(default=None, gt=0)
    price_date: str | None = None
    notes: str | None = None
    #: Free memory measured on this machine (`--gpu local` only; never in the bundled catalog).
    free_mib: int | None = Field(default=None, ge=0)

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


class ModelEntry(_Entry):
    hf_id: str = Field(min_length=3)
    params_published: int | None = Field(default=None, gt=0)
    params_source: str | None = None
    config: dict[str, Any]

    @field_validator("config")
    @classmethod
    def _has_model_type(cls, value: dict[str, Any]) -> dict[str, Any]:
        if "model_type" not in value:
            raise ValueError("config has no model_type")
        return value


def data_dir() -> Path:
    """gpusize/data inside an installed wheel, else the checkout's top-level data/."""
    packaged = Path(__file__).parent / "data"
    if (packaged / "gpus.yaml").is_file():
        return packaged
    return Path(__file__).resolve().parent.parent / "data"


def _read_yaml(path: Path) -> list[Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise CatalogError(f"{path}: cannot read ({exc.strerror})") from None
    try:
        data = yaml.load(text, Loader=_Loader)  # noqa: S506 - CSafeLoader/SafeLoader only
    except yaml.YAMLError as exc:
        raise CatalogError(f"{path.name}: not valid YAML ({exc})".splitlines()[0]) from None
    if not isinstance(data, list):
        raise CatalogError(f"{path.name}: expected a list of entries")
    return data


def _validate(path: Path, rows: list[Any], schema: type[_Entry]) -> list[Any]:
    entries: list[Any] = []
    seen: dict[str, int] = {}
    for i, row in enumerate(rows):
        try:
            entry = schema.model_validate(row)
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(p) for p in err["loc"])
            raise CatalogError(f"{path.name}: [{i}].{where}: {err['msg'].lower()}") from None
        for key in _keys(entry):
            if key in seen:
                raise CatalogError(f"{path.name}: [{i}]: name '{key}' already used by [{seen[key]}]")
            seen[key] = i
        entries.append(entry)
    return entries


def _keys(entry: _Entry) -> set[str]:
    keys = {entry.name.lower(), *(a.lower() for a in entry.aliases)}
    if isinstance(entry, ModelEntry):
        keys.add(entry.hf_id.lower())
    return keys


@functools.cache
def _load_file(path: Path, schema: type[_Entry]) -> tuple[Any, ...]:
    return tuple(_validate(path, _read_yaml(path), schema))


#: User catalogs added on top of the bundled ones (CLI --models-file / --gpus-file, env vars).
_USER_FILES: dict[str, list[Path]] = {"models": [], "gpus": []}
ENV_VARS = {"models": "GPUSIZE_MODELS", "gpus": "GPUSIZE_GPUS"}


def add_user_file(kind: str, path: Path) -> None:
    """Register a user catalog file ('models' or 'gpus'); its entries add to or override the
    bundled ones by name (case-insensitive). Errors name the file and the entry path."""
    if not path.is_file():
        raise CatalogError(f"{path}: no such catalog file")
    _USER_FILES[kind].append(path)


def _user_files(kind: str) -> list[Path]:
    env = os.environ.get(ENV_VARS[kind])
    from_env = [Path(p) for p in env.split(os.pathsep) if p] if env else []
    for path in from_env:
        if not path.is_file():
            raise CatalogError(f"{path}: no such catalog file (from {ENV_VARS[kind]})")
    return from_env + _USER_FILES[kind]


def _merged(kind: str, bundled: Path, schema: type[_Entry]) -> tuple[Any, ...]:
    entries = list(_load_file(bundled, schema))
    for path in _user_files(kind):
        for entry in _load_file(path, schema):
            entries = [e for e in entries if not (_keys(e) & _keys(entry))] + [entry]
    return tuple(entries)


def load_gpus(path: Path | None = None) -> tuple[GpuSpec, ...]:
    """The GPU catalog: one file when `path` is given, else bundled + user files."""
    if path is not None:
        return _load_file(path, GpuSpec)
    return _merged("gpus", data_dir() / "gpus.yaml", GpuSpec)


def load_models(path: Path | None = None) -> tuple[ModelEntry, ...]:
    """The model catalog: one file when `path` is given, else bundled + user files."""
    if path is not None:
        return _load_file(path, ModelEntry)
    return _merged("models", data_dir() / "models.yaml", ModelEntry)


def _normalize(name: str) -> str:
    return name.strip().lower().replace("_", "-").replace(" ", "-")


def _lookup(kind: str, name: str, entries: tuple[Any, ...]) -> Any:
    index: dict[str, Any] = {}
    for entry in entries:
        for key in _keys(entry):
            index[_normalize(key)] = entry
            index[_normalize(key).replace("-", "")] = entry
    wanted = _normalize(name)
    found = index.get(wanted) or index.get(wanted.replace("-", ""))
    if found is not None:
        return found
    names = sorted({e.name for e in entries} | {a for e in entries for a in e.aliases})
    close = difflib.get_close_matches(name, names, n=3, cutoff=0.5)
    if not close:
        close = [n for n in names if wanted.split("-")[0] in n.lower()][:3]
    raise UnknownNameError(kind, name, close)


def find_gpu(name: str) -> GpuSpec:
    gpu: GpuSpec = _lookup("GPU", name, load_gpus())
    return gpu


_ENTRY_START = re.compile(r"(?m)^- name:")


@functools.cache
def _bundled_model_chunks() -> tuple[tuple[frozenset[str], str], ...] | None:
    """The bundled models file split into its top-level entries, each with the names it answers to,
    read from the entry's head only (name, hf_id, aliases precede source:). Looking one model up then
    parses and validates one entry instead of all of them. None if the file is not laid out so."""
    path = data_dir() / "models.yaml"
    text = path.read_text(encoding="utf-8")
    starts = [m.start() for m in _ENTRY_START.finditer(text)]
    chunks = []
    for begin, end in zip(starts, [*starts[1:], len(text)], strict=True):
        chunk = text[begin:end]
        head_end = chunk.find("\n  source:")
        if head_end < 0:
            return None
        head = yaml.load(chunk[:head_end], Loader=_Loader)  # noqa: S506 - safe loaders only
        if not isinstance(head, list) or not isinstance(head[0], dict):
            return None
        entry = head[0]
        keys = {
            str(entry.get("name", "")),
            str(entry.get("hf_id", "")),
            *map(str, entry.get("aliases") or []),
        }
        chunks.append((frozenset(_normalize(k) for k in keys if k), chunk))
    return tuple(chunks)


def _find_bundled_model(name: str) -> ModelEntry | None:
    """Fast path for the bundled catalog when no user model file is configured."""
    if _user_files("models"):
        return None
    chunks = _bundled_model_chunks()
    if chunks is None:
        return None
    wanted = {_normalize(name), _normalize(name).replace("-", "")}
    for keys, chunk in chunks:
        if wanted & (keys | {k.replace("-", "") for k in keys}):
            rows = yaml.load(chunk, Loader=_Loader)  # noqa: S506 - safe loaders only
            entry: ModelEntry = _validate(data_dir() / "models.yaml", rows, ModelEntry)[0]
            return entry
    return None


def find_model(name: str) -> ModelEntry:
    """A catalog model by short name, alias or Hub id (case-insensitive; 'Qwen/Qwen3-32B' works)."""
    fast = _find_bundled_model(name)
    if fast is not None:
        return fast
    entries = load_models()
    try:
        entry: ModelEntry = _lookup("model", name, entries)
        return entry
    except UnknownNameError:
        if "/" in name:  # an org/name id whose short name is in the catalog under another org
            entry = _lookup("model", name.split("/", 1)[1], entries)
            return entry
        raise
