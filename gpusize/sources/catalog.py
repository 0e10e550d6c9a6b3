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

import contextlib
import functools
import gc
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpusize.core.gpu import GpuSpec
from gpusize.core.mig import mig_slices
from gpusize.core.model import CatalogModel, ParsedCatalogModel, normalize
from gpusize.core.unified import raised
from gpusize.dataclass import dataclass, made
from gpusize.errors import CatalogError, ConfigError, InputError, UnknownNameError
from gpusize.sources import catalog_cache, shipped
from gpusize.sources.catalog_cache import CACHE_ENV

if TYPE_CHECKING:
    from gpusize.core.spec import ModelSpec

__all__ = [
    "CACHE_ENV",
    "ENV_VARS",
    "MAX_CATALOG_BYTES",
    "Catalogs",
    "CatalogModel",
    "Shadow",
    "data_dir",
    "find_gpu",
    "find_model",
    "load_gpus",
    "load_models",
    "merge_by_name",
    "normalize",
    "row_types_of",
    "validated_rows",
]

#: A catalog file larger than this is refused (the bundled models file is well under 1 MiB).
MAX_CATALOG_BYTES = 32 * 1024 * 1024
#: Environment variables naming extra catalog files (os.pathsep-separated).
ENV_VARS = {"models": "GPUSIZE_MODELS", "gpus": "GPUSIZE_GPUS"}


@functools.cache
def data_dir() -> Path:
    """gpusize/data inside an installed wheel, else the checkout's top-level data/ (where the package
    lives does not change while it runs: looked up once)."""
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


#: The digest of each catalog file as `validated_rows` last read it (`file_specs` keys its specs by it).
_DIGESTS: dict[Path, str] = {}


def validated_rows(path: Path, kind: str) -> list[dict[str, Any]]:
    """The entries of one catalog file as validated plain dicts ('gpus' or 'models'): a bundled one from
    the validated copy shipped beside it (`sources.shipped`), else cached (`sources.catalog_cache`:
    keyed by the BLAKE2b digest of the bytes, shape-checked on read)."""
    types = row_types_of(kind)
    bundled = path == data_dir() / f"{kind}.yaml"
    if bundled:
        known = _known_digest(path)
        rows = shipped.rows(path, kind, known, types) if known is not None else None
        if known is not None and rows is not None:  # the shipped copy of the bytes an earlier run hashed
            _DIGESTS[path] = known
            return rows
    raw = _read_bytes(path)
    digest = _DIGESTS[path] = catalog_cache.digest_of(raw)
    rows = shipped.rows(path, kind, digest, types) if bundled else None
    if rows is not None:
        _remember_digest(path, digest)
    if rows is None:
        rows = catalog_cache.load(kind, digest, types)
    if rows is None:
        from gpusize.sources import schema  # start-up: pydantic, imported only when a file must be validated

        rows = schema.validate_file(path, raw, kind)
        catalog_cache.store(kind, digest, rows, types)
    return rows


def row_types_of(kind: str) -> catalog_cache.RowTypes:
    """The fields of a validated row of this kind, with the JSON types each value may have."""
    if kind == "gpus":
        return catalog_cache.row_types(
            GpuSpec, frozenset(f.name for f in fields(GpuSpec) if not f.metadata.get("catalog", True))
        )
    return catalog_cache.row_types(CatalogModel)


# --------------------------------------------------------------------------- catalogs


def _gpu(row: dict[str, Any], catalog_file: str | None = None) -> GpuSpec:
    lists = {k: tuple(row.get(k) or ()) for k in ("aliases", "engines")}
    return GpuSpec(**{**row, **lists, "catalog_file": catalog_file})


def _model(row: dict[str, Any]) -> CatalogModel:
    return made(CatalogModel, {**row, "aliases": tuple(row.get("aliases") or ())})


def merge_by_name(entries: Iterable[Any], keys_of: Any, on_replace: Any = None) -> tuple[Any, ...]:
    """Later entries replace earlier ones answering to any of the same names (linear);
    `on_replace(new, old, shared_names)` hears of each replacement."""
    slots: list[Any] = []
    owner: dict[str, int] = {}
    for entry in entries:
        keys = keys_of(entry)
        if owner.keys().isdisjoint(keys):  # a new name (most entries): nothing to replace
            slots.append(entry)
            owner.update(dict.fromkeys(keys, len(slots) - 1))
            continue
        replaced = {owner[k] for k in keys if k in owner}
        for i in sorted(replaced):
            old_keys = keys_of(slots[i])
            if on_replace is not None:
                on_replace(entry, slots[i], sorted(keys & old_keys))
            for k in old_keys:
                owner.pop(k, None)
            slots[i] = None
        slots.append(entry)
        for k in keys:
            owner[k] = len(slots) - 1
    return tuple(e for e in slots if e is not None)


@dataclass(frozen=True)
class Shadow:
    """A user catalog entry that replaces an earlier entry (the bundled one, or another file's) because
    it answers to one of its names: said on stderr, since the bundled figures silently vanish."""

    kind: str  # GPU | model
    file: str
    index: int
    name: str
    shared: tuple[str, ...]
    replaced: str
    replaced_file: str | None  # None: the bundled catalog

    @property
    def message(self) -> str:
        where = (
            f"the bundled {self.kind}"
            if self.replaced_file is None
            else f"the {self.kind} of {self.replaced_file}"
        )
        names = ", ".join(repr(n) for n in self.shared)
        entry = f"{self.file}: [{self.index}] {self.name!r}"
        return f"{entry} answers to {names}, so it replaces {where} {self.replaced}"


#: One entry of a catalog file while merging: (file as given, or None for bundled; index; entry).
_Tagged = tuple[str | None, int, Any]


def _merge(kind: str, tagged: Iterable[_Tagged], keys_of: Any) -> tuple[tuple[Any, ...], tuple[Shadow, ...]]:
    shadows: list[Shadow] = []

    def heard(new: _Tagged, old: _Tagged, shared: list[str]) -> None:
        if new[0] is not None and new[0] != old[0]:
            entry = new[2]
            spelled = [
                n for n in (entry.name, getattr(entry, "hf_id", ""), *entry.aliases) if normalize(n) in shared
            ]
            shadows.append(Shadow(kind, new[0], new[1], entry.name, tuple(spelled), old[2].name, old[0]))

    merged = merge_by_name(tagged, lambda t: keys_of(t[2]), heard)
    return tuple(t[2] for t in merged), tuple(shadows)


def _model_keys(model: CatalogModel) -> Any:
    return model.keys


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
        return _gpus_of(_identities((data_dir() / "gpus.yaml", *self.gpus_files)))[0]

    def models(self) -> tuple[CatalogModel, ...]:
        return _models_of(_identities((data_dir() / "models.yaml", *self.models_files)))[0]

    def parsed_models(self) -> tuple[ParsedCatalogModel, ...]:
        """`models()`, each with its config parsed (`ParsedCatalogModel.spec`): decoded from the specs
        stored for its catalog file (`sources.shipped_specs`), else parsed, and stored for a user's."""
        return _parsed_of(_identities((data_dir() / "models.yaml", *self.models_files)))

    def shadows(self) -> tuple[Shadow, ...]:
        """User entries that replace a bundled (or an earlier file's) entry by name; reads only the
        catalogs that have user files."""
        out: tuple[Shadow, ...] = ()
        if self.gpus_files:
            out += _gpus_of(_identities((data_dir() / "gpus.yaml", *self.gpus_files)))[1]
        if self.models_files:
            out += _models_of(_identities((data_dir() / "models.yaml", *self.models_files)))[1]
        return out

    def mig_gpus(self) -> tuple[GpuSpec, ...]:
        """The MIG slices of the catalog's GPUs (core/mig.py): found by name, not planned over when no
        --gpu is given (a slice is a choice, not a GPU to buy)."""
        return _slices_of(self.gpus())

    def find_gpu(self, name: str) -> GpuSpec:
        """A catalog GPU or MIG slice by name or alias; 'MIG' alone lists the slices."""
        if not self.gpus_files:  # the bundled catalog alone: its shipped index finds the row
            found_row = _bundled("gpus", (name,))
            if found_row is not None:
                return _gpu(found_row)
        gpus = self.gpus()
        try:
            found: GpuSpec = _lookup("GPU", name, gpus, _gpu_keys)
            return found
        except UnknownNameError:
            slices = self.mig_gpus()
            if _compact(name) in ("mig", "migslice", "migslices"):
                shown = f"--gpu {name[:20]!r}"
                raise InputError(f"{shown} is not one GPU: name a MIG slice, {_slice_list(slices)}") from None
            try:
                found = _lookup("GPU", name, gpus + slices + _raised_of(gpus), _gpu_keys)
                return found
            except UnknownNameError:
                _refuse_mig_name(name, gpus, slices)
                raise

    def found_gpus(self, names: Iterable[str]) -> list[GpuSpec | None]:
        """What `find_gpu` finds for each name in the user catalogs' merged GPUs, the catalogs read
        once for all (each read checks the files' identities: a quote over 1,000 user GPU types named
        them 1,000 times); None where only find_gpu answers (a MIG slice, a raised share, an unknown
        name, the bundled catalog alone)."""
        if not self.gpus_files:
            return [None for _ in names]
        index = _index(self.gpus(), _gpu_keys)
        return [index.get(_lookup_key(name)) for name in names]

    def find_model(self, name: str) -> CatalogModel:
        """A catalog model by short name, alias or Hub id (case-insensitive; 'Qwen/Qwen3-32B' works)."""
        if not self.models_files:  # the bundled catalog alone: its shipped index finds the row
            keys = (name, name.split("/", 1)[1]) if "/" in name else (name,)
            found_row = _bundled("models", keys)
            if found_row is not None:
                return _model(found_row)
        models = self.models()
        try:
            found: CatalogModel = _lookup("model", name, models, _model_keys)
            return found
        except UnknownNameError:
            if "/" in name:  # an org/name id whose short name is in the catalog under another org
                found = _lookup("model", name.split("/", 1)[1], models, _model_keys)
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
def _gpus_of(files: tuple[_Identity, ...]) -> tuple[tuple[GpuSpec, ...], tuple[Shadow, ...]]:
    """The merged GPUs of these files (the first is the bundled one), read once per process (a command
    that looks up eight GPU names read and merged the catalog eight times), and the shadowed names."""
    tagged = (
        (given, i, _gpu(r, given))
        for given, f in _given(files)
        for i, r in enumerate(validated_rows(f, "gpus"))
    )
    merged: tuple[tuple[GpuSpec, ...], tuple[Shadow, ...]] = _merge("GPU", tagged, _gpu_keys)
    return merged


def _refuse_mig_name(name: str, gpus: tuple[GpuSpec, ...], slices: tuple[GpuSpec, ...]) -> None:
    """'H100-MIG' or 'H100-MIG-3g.41gb': a GPU's name with a MIG profile it lacks gets that GPU's slices
    listed (one line, exit 2); any other unknown name is left to the caller's 'did you mean'."""
    head, mig, _ = name.lower().partition("mig")
    if not mig or not head.strip("-_ "):
        return
    try:
        parent = _lookup("GPU", head.strip("-_ "), gpus, _gpu_keys)
    except UnknownNameError:
        return
    own = tuple(s for s in slices if s.mig_parent == parent.name)
    if not own:
        raise InputError(f"--gpu {name[:40]!r}: {parent.name} has no MIG profiles gpusize knows") from None
    raise InputError(
        f"--gpu {name[:40]!r} names no MIG profile of {parent.name}: {_slice_list(own)}"
    ) from None


def _slice_list(slices: tuple[GpuSpec, ...]) -> str:
    """'H100-SXM-MIG-{1g.10gb,...}; ...': each GPU's slices in one group (one engine instance per slice)."""
    groups: dict[str, list[str]] = {}
    for s in slices:
        groups.setdefault(s.mig_parent or "", []).append(s.mig_profile or "")
    return "; ".join(f"{parent}-MIG-{{{','.join(profiles)}}}" for parent, profiles in groups.items())


@functools.lru_cache(maxsize=8)
def _raised_of(gpus: tuple[GpuSpec, ...]) -> tuple[GpuSpec, ...]:
    """Unified-memory devices planned with their GPU share raised (core/unified.py)."""
    return tuple(r for g in gpus if (r := raised(g)) is not None)


@functools.lru_cache(maxsize=8)
def _slices_of(gpus: tuple[GpuSpec, ...]) -> tuple[GpuSpec, ...]:
    return tuple(s for g in gpus for s in mig_slices(g))


#: Entries from which a merged catalog is a large one (`_collector_paused`): a user's file of
#: thousands; the bundled catalog alone has a few hundred.
LARGE_CATALOG = 2_000


@contextlib.contextmanager
def _collector_paused() -> Iterator[list[int]]:
    """No garbage collection while a catalog is read (JSON values and frozen entries hold no cycle:
    the collections find nothing, and with 10,000 entries took a third of reading them and half of
    `which` after); a large one (LARGE_CATALOG entries, the count appended to the list yielded) is
    then left out of later collections (`gc.freeze`: it lives as long as the process)."""
    size: list[int] = []
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield size
    finally:
        if sum(size) >= LARGE_CATALOG:
            gc.freeze()  # first: enabling runs the collection the reading has made due
        if enabled:
            gc.enable()


@functools.lru_cache(maxsize=8)
def _models_of(files: tuple[_Identity, ...]) -> _MergedModels:
    with _collector_paused() as size:
        merged = _merged_models(files)
        size.append(len(merged[0]))
    return merged


def _merged_models(files: tuple[_Identity, ...]) -> _MergedModels:
    per_file = tuple((f, [_model(r) for r in validated_rows(f, "models")]) for _, f in _given(files))
    tagged = (
        (given, i, model)
        for (given, _), (_, models) in zip(_given(files), per_file, strict=True)
        for i, model in enumerate(models)
    )
    merged, shadows = _merge("model", tagged, lambda m: m.keys)
    return merged, shadows, per_file


#: The merged models of some catalog files, the shadowed names, and each file's own models.
_MergedModels = tuple[
    tuple[CatalogModel, ...], tuple[Shadow, ...], tuple[tuple[Path, list[CatalogModel]], ...]
]


@functools.lru_cache(maxsize=8)
def _parsed_of(files: tuple[_Identity, ...]) -> tuple[ParsedCatalogModel, ...]:
    """The merged models (`_models_of`, read once for both), each with its file's spec of it."""
    merged, _, per_file = _models_of(files)
    with _collector_paused() as size:
        spec_of: dict[int, ModelSpec | None] = {}
        for path, models in per_file:
            specs = file_specs(path, [m.config for m in models])
            spec_of.update(zip(map(id, models), specs, strict=True))
        parsed = tuple(_with_spec(m, spec_of[id(m)]) for m in merged)
        size.append(len(parsed))
    return parsed


def _with_spec(model: CatalogModel, spec: ModelSpec | None) -> ParsedCatalogModel:
    return made(ParsedCatalogModel, {**vars(model), "spec": spec})


def file_specs(path: Path, configs: list[dict[str, Any]]) -> list[ModelSpec | None]:
    """The parsed config of each model of a models catalog file (None: it does not parse): the
    bundled file's from data/models.specs.json, a user file's from the cache; else parsed (equal
    configs once, sharing one spec) and, for a user file, stored in the cache."""
    from gpusize.sources import shipped_specs  # start-up: only a command that plans the whole catalog

    digest = _DIGESTS.get(path) or catalog_cache.digest_of(_read_bytes(path))
    bundled = path == data_dir() / "models.yaml"
    if bundled:
        stored = shipped_specs.read(shipped_specs.specs_path(path), digest, len(configs))
    else:
        stored = shipped_specs.load_cached(digest, len(configs))
    if stored is not None:
        return stored
    specs = parsed_specs(configs)
    if not bundled:
        shipped_specs.store_cached(digest, specs)
    return specs


def parsed_specs(configs: list[dict[str, Any]]) -> list[ModelSpec | None]:
    """`parse_config` of each config, None where it raises ConfigError (the planner parses it again
    to say why); equal configs are parsed once and share the spec."""
    from gpusize.core.parse import parse_config  # start-up: the parser, only where specs are not stored

    seen: dict[str, ModelSpec | None] = {}
    out: list[ModelSpec | None] = []
    for config in configs:
        key = repr(config)  # of JSON values: equal reprs, equal configs
        if key not in seen:
            try:
                seen[key] = parse_config(config)
            except ConfigError:
                seen[key] = None
        out.append(seen[key])
    return out


def _given(files: tuple[_Identity, ...]) -> list[tuple[str | None, Path]]:
    """Each file with the name it is shown under: None for the bundled (first) one, else as given."""
    return [(None if i == 0 else str(f), f) for i, (f, _, _) in enumerate(files)]


def _env_files(kind: str) -> list[Path]:
    env = os.environ.get(ENV_VARS[kind])
    files = [Path(p) for p in env.split(os.pathsep) if p] if env else []
    for path in files:
        if not path.is_file():
            raise CatalogError(f"{path}: no such catalog file (from {ENV_VARS[kind]})")
    return files


def _compact(name: str) -> str:
    return "".join(ch for ch in name.lower() if ch.isalnum())


def _close_names(name: str, names: list[str]) -> list[str]:
    """Up to 3 names for "did you mean": those that begin with what was typed, punctuation and case
    aside (`llama3.3` -> Llama-3.3-70B), shortest first, then difflib's closest ignoring case."""
    import difflib  # noqa: PLC0415 - start-up: only for an unknown name

    compact = _compact(name)
    prefixed = sorted((n for n in names if compact and _compact(n).startswith(compact)), key=len)
    by_case = {n.lower(): n for n in names}
    fuzzy = difflib.get_close_matches(name.lower(), list(by_case), n=3, cutoff=0.5)
    return list(dict.fromkeys([*prefixed, *(by_case[m] for m in fuzzy)]))[:3]


def _lookup(kind: str, name: str, entries: tuple[Any, ...], keys_of: Any) -> Any:
    wanted = normalize(name)
    found = _index(entries, keys_of).get(_lookup_key(name))
    if found is not None:
        return found
    names = sorted({e.name for e in entries} | {a for e in entries for a in e.aliases})
    close = _close_names(name[:100], names)
    if not close:
        close = [n for n in names if wanted.split("-")[0] and wanted.split("-")[0] in n.lower()][:3]
    raise UnknownNameError(kind, name[:100], close)


#: Name indexes of entry tuples, by the tuple's id and the key function (the tuple is kept, so its
#: id is not reused): a batch of rows looks names up thousands of times in the same catalogs.
_INDEXES: dict[tuple[int, Any], tuple[tuple[Any, ...], dict[str, Any]]] = {}


def _lookup_key(name: str) -> str:
    """The key a name is looked up by in `_index`."""
    return normalize(name).replace("-", "")


#: Each kind's entry builder and key function, as the merged catalogs use them.
_KIND_OF: dict[str, tuple[Callable[[dict[str, Any]], Any], Callable[[Any], Any]]] = {
    "models": (_model, _model_keys),
    "gpus": (_gpu, _gpu_keys),
}


def shipped_index(kind: str, rows: list[dict[str, Any]]) -> dict[str, int]:
    """The name index the shipped file of this kind carries: `_index` of the bundled catalog as
    merged (`merge_by_name`), each entry given as its row number, so a lookup through it finds the
    row the whole catalog finds."""
    make, keys_of = _KIND_OF[kind]
    entries = [make(r) for r in rows]
    number = {id(e): i for i, e in enumerate(entries)}
    merged = merge_by_name(entries, keys_of)
    return {key: number[id(e)] for key, e in sorted(_index(merged, keys_of).items())}  # keys: sets


def shipped_text(kind: str, digest: str, rows: list[dict[str, Any]]) -> str:
    """The shipped validated file of a bundled catalog (`python -m gpusize.sources.shipped_build`)."""
    return shipped.text(kind, digest, rows, row_types_of(kind), shipped_index(kind, rows))


def _known_digest(path: Path) -> str | None:
    """The digest of a bundled file's bytes as an earlier run found them at its size and modification
    time (catalog_cache.known_digest): used only to accept the validated copy shipped beside it."""
    (_, size, mtime_ns) = _identities((path,))[0]
    return catalog_cache.known_digest(path, size, mtime_ns) if size >= 0 else None


def _remember_digest(path: Path, digest: str) -> None:
    """Record a bundled file's digest once its shipped copy was found to match it."""
    (_, size, mtime_ns) = _identities((path,))[0]
    if size >= 0:
        catalog_cache.remember_digest(path, size, mtime_ns, digest)


@functools.lru_cache(maxsize=4)
def _indexed(kind: str, identity: _Identity) -> shipped.Indexed | None:
    path, types = identity[0], row_types_of(kind)
    known = _known_digest(path)
    found = shipped.indexed(path, kind, known, types) if known is not None else None
    if known is not None and found is not None:  # the shipped copy of the bytes an earlier run hashed
        _DIGESTS.setdefault(path, known)
        return found
    try:
        digest = catalog_cache.digest_of(_read_bytes(path))
    except CatalogError:
        return None  # the whole-catalog path says what is wrong
    found = shipped.indexed(path, kind, digest, types)
    if found is not None:
        _remember_digest(path, digest)
    return found


def _bundled(kind: str, names: tuple[str, ...]) -> dict[str, Any] | None:
    """The bundled row the first of `names` finds through the shipped index, or None (not there, or
    no usable index: the whole catalog answers, including its "did you mean")."""
    indexed = _indexed(kind, _identities((data_dir() / f"{kind}.yaml",))[0])
    if indexed is None:
        return None
    for name in names:
        number = indexed.names.get(_lookup_key(name))
        if number is not None:
            return indexed.row(number)
    return None


def _index(entries: tuple[Any, ...], keys_of: Any) -> dict[str, Any]:
    """Each key of every entry without its dashes -> the first entry that has it: a name matches
    an entry when they are equal without dashes ("H100-SXM" = "H100SXM"; equal names are too)."""
    held = _INDEXES.get((id(entries), keys_of))
    if held is not None and held[0] is entries:
        return held[1]
    index: dict[str, Any] = {}
    for entry in entries:
        for key in keys_of(entry):
            index.setdefault(key.replace("-", ""), entry)
    if len(_INDEXES) > 64:
        _INDEXES.clear()
    _INDEXES[(id(entries), keys_of)] = (entries, index)
    return index


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
