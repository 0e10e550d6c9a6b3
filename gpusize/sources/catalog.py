"""The catalogs: data/gpus.yaml and data/models.yaml (bundled) plus the user's own files.

Reading a catalog file: bounded in size, decoded as UTF-8, parsed by PyYAML's safe loader, refused
when its aliases would expand beyond a node budget (a 646-byte "billion laughs" file), then each entry
validated strictly by pydantic (`sources.schema`, imported only when a file must be validated). The
validated rows are cached as JSON under the user's cache folder, keyed by the BLAKE2b-256 digest of the
file's bytes (a CRC-32 let a forged file of equal length and CRC answer for another), so a later run
reads a small JSON file instead of parsing YAML and building validators (start-up time); an
unwritable cache folder only costs that speed. A cache file is used only when its format, kind and
digest match and every row has the shape of a validated row (the keys of its kind, each value of its
field's JSON type); anything else is ignored and rebuilt. Values are not re-validated: the digest
ties them to bytes gpusize validated itself, and re-validating would cost what the cache saves.
Merging the bundled and user catalogs is linear: a user entry replaces the bundled one that answers
to any of its names, and says so (`Shadow`).
"""

from __future__ import annotations

import difflib
import functools
import json
import os
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from gpusize.core.gpu import GpuSpec
from gpusize.errors import CatalogError, UnknownNameError

__all__ = [
    "CACHE_ENV",
    "ENV_VARS",
    "MAX_CATALOG_BYTES",
    "Catalogs",
    "CatalogModel",
    "data_dir",
    "find_gpu",
    "find_model",
    "load_gpus",
    "load_models",
    "merge_by_name",
    "normalize",
    "validated_rows",
]

#: A catalog file larger than this is refused (the bundled models file is well under 1 MiB).
MAX_CATALOG_BYTES = 32 * 1024 * 1024
#: Environment variables naming extra catalog files (os.pathsep-separated).
ENV_VARS = {"models": "GPUSIZE_MODELS", "gpus": "GPUSIZE_GPUS"}
#: Where validated catalogs are cached (default: $XDG_CACHE_HOME/gpusize or ~/.cache/gpusize);
#: set it to an empty string to turn the cache off.
CACHE_ENV = "GPUSIZE_CACHE_DIR"
#: Bumped whenever the cached row format or the validation rules change (5: BLAKE2b key, digest and
#: kind inside the file, memory floor).
CACHE_FORMAT = 5

try:  # start-up: hashlib loads OpenSSL (2.3 ms measured with -X importtime); _blake2 alone is 0.19 ms
    from _blake2 import blake2b  # the very function hashlib.blake2b is (hashlib imports it from here)
except ImportError:  # pragma: no cover - a Python built without the module
    from hashlib import blake2b


@dataclass(frozen=True)
class CatalogModel:
    """A model of a catalog: the config.json content and where it and its parameter count come from."""

    name: str
    hf_id: str
    source: str
    config: dict[str, Any] = field(compare=False)
    aliases: tuple[str, ...] = ()
    params_published: int | None = None
    params_source: str | None = None
    family: str | None = None

    @property
    def keys(self) -> set[str]:
        return {normalize(k) for k in (self.name, self.hf_id, *self.aliases)}


def normalize(name: str) -> str:
    return name.strip().lower().replace("_", "-").replace(" ", "-")


def data_dir() -> Path:
    """gpusize/data inside an installed wheel, else the checkout's top-level data/."""
    packaged = Path(__file__).resolve().parent.parent / "data"
    if (packaged / "gpus.yaml").is_file():
        return packaged
    return Path(__file__).resolve().parent.parent.parent / "data"


# --------------------------------------------------------------------------- reading one file


def _read_bytes(path: Path) -> bytes:
    try:
        size = path.stat().st_size
        if size > MAX_CATALOG_BYTES:
            raise CatalogError(
                f"{path}: {size:,} bytes, larger than a catalog may be ({MAX_CATALOG_BYTES:,})"
            )
        with path.open("rb") as handle:
            return handle.read(MAX_CATALOG_BYTES + 1)
    except IsADirectoryError:
        raise CatalogError(f"{path}: is a folder, not a catalog file") from None
    except OSError as exc:
        raise CatalogError(f"{path}: cannot read ({exc.strerror or exc})") from None


def _cache_dir() -> Path | None:
    configured = os.environ.get(CACHE_ENV)
    if configured is not None:
        return Path(configured) if configured else None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "gpusize"


def _cache_file(folder: Path, kind: str, digest: str) -> Path:
    return folder / f"catalog-{CACHE_FORMAT}-{kind}-{digest}.json"


def _cached(kind: str, digest: str) -> list[dict[str, Any]] | None:
    """The cached rows, or None when there are none or the file is unusable (then it is rebuilt)."""
    folder = _cache_dir()
    if folder is None:
        return None
    try:
        data = json.loads(_cache_file(folder, kind, digest).read_bytes())
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(data, dict) or (data.get("format"), data.get("kind"), data.get("digest")) != (
        CACHE_FORMAT,
        kind,
        digest,
    ):
        return None
    rows = data.get("rows")
    return rows if isinstance(rows, list) and all(_row_shape_ok(kind, r) for r in rows) else None


def _store(kind: str, digest: str, rows: list[dict[str, Any]]) -> None:
    """Write the cache atomically (temp file + rename); any failure only loses the speed-up."""
    folder = _cache_dir()
    if folder is None:
        return
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".catalog-", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            payload = {"format": CACHE_FORMAT, "kind": kind, "digest": digest, "rows": rows}
            json.dump(payload, handle, separators=(",", ":"), allow_nan=False)
        os.replace(tmp, _cache_file(folder, kind, digest))
    except (OSError, ValueError):
        return


def validated_rows(path: Path, kind: str) -> list[dict[str, Any]]:
    """The entries of one catalog file as validated plain dicts ('gpus' or 'models'), cached."""
    raw = _read_bytes(path)
    # 25 MiB hash in 26 ms, the bundled files in under 1 ms (measured, 2026-12).
    digest = blake2b(raw, digest_size=32).hexdigest()
    rows = _cached(kind, digest)
    if rows is None:
        from gpusize.sources import schema  # pydantic: imported only when a file must be validated

        rows = schema.validate_file(path, raw, kind)
        _store(kind, digest, rows)
    return rows


#: The JSON types a cached value of each annotation may have (`Literal`s and their aliases are strings).
_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "int": (int,),
    "float": (int, float),
    "bool": (bool,),
    "None": (type(None),),
    "tuple": (list,),
    "dict": (dict,),
}


@functools.cache
def _row_types(kind: str) -> dict[str, tuple[type, ...]]:
    """Field -> the JSON types its cached value may have, read from the dataclass the row becomes."""
    owner = GpuSpec if kind == "gpus" else CatalogModel
    out: dict[str, tuple[type, ...]] = {}
    for f in fields(owner):
        if f.name == "free_mib":
            continue
        annotation = f.type if isinstance(f.type, str) else f.type.__name__
        heads = (part.strip().split("[")[0] for part in annotation.split("|"))
        out[f.name] = tuple(t for head in heads for t in _JSON_TYPES.get(head, (str,)))
    return out


def _row_shape_ok(kind: str, row: object) -> bool:
    """A cached row has exactly its kind's keys, each value of its field's JSON type (and a list of
    names for the aliases): a stale or foreign cache file is then rebuilt, never an internal error."""
    types = _row_types(kind)
    if not isinstance(row, dict) or row.keys() != types.keys():
        return False
    for key, value in row.items():
        if not isinstance(value, types[key]) or (isinstance(value, bool) and bool not in types[key]):
            return False
    return all(isinstance(a, str) for a in row["aliases"])


# --------------------------------------------------------------------------- catalogs


def _gpu(row: dict[str, Any]) -> GpuSpec:
    return GpuSpec(**{**row, "aliases": tuple(row.get("aliases") or ())})


def _model(row: dict[str, Any]) -> CatalogModel:
    return CatalogModel(**{**row, "aliases": tuple(row.get("aliases") or ())})


def merge_by_name(entries: Iterable[Any], keys_of: Any) -> tuple[Any, ...]:
    """Later entries replace earlier ones answering to any of the same names (linear)."""
    slots: list[Any] = []
    owner: dict[str, int] = {}
    for entry in entries:
        replaced = {owner[k] for k in keys_of(entry) if k in owner}
        for i in replaced:
            for k in keys_of(slots[i]):
                owner.pop(k, None)
            slots[i] = None
        slots.append(entry)
        for k in keys_of(entry):
            owner[k] = len(slots) - 1
    return tuple(e for e in slots if e is not None)


def _gpu_keys(gpu: GpuSpec) -> set[str]:
    return {normalize(k) for k in (gpu.name, *gpu.aliases)}


@dataclass(frozen=True)
class Catalogs:
    """The bundled catalogs plus user files (given, and from GPUSIZE_MODELS / GPUSIZE_GPUS)."""

    models_files: tuple[Path, ...] = ()
    gpus_files: tuple[Path, ...] = ()

    @classmethod
    def with_env(cls, models_files: Iterable[Path] = (), gpus_files: Iterable[Path] = ()) -> Catalogs:
        return cls(
            tuple(_env_files("models")) + tuple(models_files), tuple(_env_files("gpus")) + tuple(gpus_files)
        )

    def gpus(self) -> tuple[GpuSpec, ...]:
        return _gpus_of(_identities((data_dir() / "gpus.yaml", *self.gpus_files)))

    def models(self) -> tuple[CatalogModel, ...]:
        return _models_of(_identities((data_dir() / "models.yaml", *self.models_files)))

    def find_gpu(self, name: str) -> GpuSpec:
        found: GpuSpec = _lookup("GPU", name, self.gpus(), _gpu_keys)
        return found

    def find_model(self, name: str) -> CatalogModel:
        """A catalog model by short name, alias or Hub id (case-insensitive; 'Qwen/Qwen3-32B' works)."""
        models = self.models()
        try:
            found: CatalogModel = _lookup("model", name, models, lambda m: m.keys)
            return found
        except UnknownNameError:
            if "/" in name:  # an org/name id whose short name is in the catalog under another org
                found = _lookup("model", name.split("/", 1)[1], models, lambda m: m.keys)
                return found
            raise


#: A catalog file as the merge caches know it: its path, and its size and modification time, so an
#: edited file is read again.
_Identity = tuple[Path, int, int]


def _identities(files: tuple[Path, ...]) -> tuple[_Identity, ...]:
    out = []
    for path in files:
        try:
            stat = path.stat()
            out.append((path, stat.st_size, stat.st_mtime_ns))
        except OSError:  # validated_rows says what is wrong with it
            out.append((path, -1, -1))
    return tuple(out)


@functools.lru_cache(maxsize=8)
def _gpus_of(files: tuple[_Identity, ...]) -> tuple[GpuSpec, ...]:
    """The merged GPUs of these files, read once per process (a command that looks up eight GPU names
    read and merged the catalog eight times)."""
    return merge_by_name((_gpu(r) for f, _, _ in files for r in validated_rows(f, "gpus")), _gpu_keys)


@functools.lru_cache(maxsize=8)
def _models_of(files: tuple[_Identity, ...]) -> tuple[CatalogModel, ...]:
    return merge_by_name(
        (_model(r) for f, _, _ in files for r in validated_rows(f, "models")), lambda m: m.keys
    )


def _env_files(kind: str) -> list[Path]:
    env = os.environ.get(ENV_VARS[kind])
    files = [Path(p) for p in env.split(os.pathsep) if p] if env else []
    for path in files:
        if not path.is_file():
            raise CatalogError(f"{path}: no such catalog file (from {ENV_VARS[kind]})")
    return files


def _lookup(kind: str, name: str, entries: tuple[Any, ...], keys_of: Any) -> Any:
    wanted = normalize(name)
    for entry in entries:
        keys = keys_of(entry)
        if wanted in keys or wanted.replace("-", "") in {k.replace("-", "") for k in keys}:
            return entry
    names = sorted({e.name for e in entries} | {a for e in entries for a in e.aliases})
    close = difflib.get_close_matches(name[:100], names, n=3, cutoff=0.5)
    if not close:
        close = [n for n in names if wanted.split("-")[0] and wanted.split("-")[0] in n.lower()][:3]
    raise UnknownNameError(kind, name[:100], close)


def load_gpus() -> tuple[GpuSpec, ...]:
    """The GPU catalog: bundled + files named by GPUSIZE_GPUS."""
    return Catalogs.with_env().gpus()


def load_models() -> tuple[CatalogModel, ...]:
    """The model catalog: bundled + files named by GPUSIZE_MODELS."""
    return Catalogs.with_env().models()


def find_gpu(name: str) -> GpuSpec:
    return Catalogs.with_env().find_gpu(name)


def find_model(name: str) -> CatalogModel:
    return Catalogs.with_env().find_model(name)
