"""The validated-catalog cache: the rows `sources.schema` validated from one catalog file, as JSON.

Where: $GPUSIZE_CACHE_DIR, else $XDG_CACHE_HOME/gpusize, else ~/.cache/gpusize (an empty
GPUSIZE_CACHE_DIR turns the cache off). One file per catalog content,
`catalog-<format>-<kind>-<BLAKE2b-256 of the file's bytes>.json`, holding the format, kind and digest
again, the field names once and each row as a list of values. A CRC-32 key (before format 5) let a
forged file of equal length and CRC-32 answer for another user's catalog; a cryptographic digest
cannot be forged that way. A field whose values repeat (a model's `config`, its sources) is stored
once per distinct value, under `shared` (field -> the values), and a row holds its value's index
there (format 6): a catalog of many names for a few configs (fine-tunes, copies) decodes each config
once, not once per name (10,000 names of one config: 10.5 MB of JSON, 546M instructions to decode,
were most of `which` over them). The rows of one value then share one decoded object, as they share
its text: catalog values are read, never written. The files shipped with the package
(`sources.shipped`) keep the values in the rows (one row per line, each line decoded alone).

Trust: a cache file is used only when its format, kind, digest and field names match and every row
has the shape of a validated row (one value per field, each of its field's JSON type, the aliases a
list of strings; a shared field's index within its list of values, each of the field's type);
anything else (invalid JSON, a stale or foreign file) is ignored and rebuilt. The
values are not validated again: the digest ties them to bytes gpusize validated itself, and
re-validating would cost what the cache saves (pydantic's import alone). Writing is atomic (temp
file + rename); a cache folder that cannot be written only costs the speed-up.

Beside them, `bundled-digests-<format>.json` remembers the digest of each bundled YAML file by its
size and modification time (`known_digest`), so that a run accepts the validated copy shipped with
the package (`sources.shipped`) without hashing the YAML; it is never used to look up a cache file.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Iterable
from dataclasses import fields
from itertools import chain
from operator import itemgetter
from pathlib import Path
from typing import Any

try:  # start-up: hashlib loads OpenSSL (2.3 ms measured with -X importtime); _blake2 alone is 0.19 ms
    from _blake2 import blake2b  # the very function hashlib.blake2b is (hashlib imports it from here)
except ImportError:  # pragma: no cover - a Python built without the module
    from hashlib import blake2b

__all__ = [
    "CACHE_ENV",
    "CACHE_FORMAT",
    "cache_dir",
    "digest_of",
    "known_digest",
    "load",
    "read",
    "remember_digest",
    "row_types",
    "store",
]

#: Where validated catalogs are cached (default: $XDG_CACHE_HOME/gpusize or ~/.cache/gpusize);
#: set it to an empty string to turn the cache off.
CACHE_ENV = "GPUSIZE_CACHE_DIR"
#: Bumped whenever the cached row format or the validation rules change (5: BLAKE2b key; format,
#: kind, digest and field names inside the file; rows as lists; the memory floor. 6: `shared` values).
CACHE_FORMAT = 6
#: The JSON types a cached value of each annotation may have (`Literal`s and their aliases are strings).
_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "int": (int,),
    "float": (int, float),
    "bool": (bool,),
    "None": (type(None),),
    "tuple": (list,),
    "dict": (dict,),
}
#: Rows serialised per write of the cache file.
_ROWS_PER_WRITE = 500
#: Field name -> the JSON types its cached value may have.
RowTypes = dict[str, tuple[type, ...]]


def digest_of(raw: bytes) -> str:
    """The cache key of a file's bytes: BLAKE2b-256 (25 MiB in 26 ms, the bundled files in under 1 ms)."""
    return blake2b(raw, digest_size=32).hexdigest()


def cache_dir() -> Path | None:
    configured = os.environ.get(CACHE_ENV)
    if configured is not None:
        return Path(configured) if configured else None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "gpusize"


#: The digests of the bundled catalog files as earlier runs found them: path -> [size, mtime_ns, digest].
_DIGEST_MEMO = f"bundled-digests-{CACHE_FORMAT}.json"
#: Most entries kept in it.
_DIGESTS_KEPT = 64


@functools.cache
def _digest_memo() -> dict[str, Any]:
    folder = cache_dir()
    if folder is None:
        return {}
    try:
        memo = json.loads((folder / _DIGEST_MEMO).read_bytes())
    except (OSError, ValueError, RecursionError):
        return {}
    return memo if isinstance(memo, dict) else {}


def known_digest(path: Path, size: int, mtime_ns: int) -> str | None:
    """The digest an earlier run computed for the bytes of `path` when it had this size and
    modification time (`remember_digest`), or None: the bundled YAML is hashed only to check that
    the validated copy shipped beside it was made from it, and hashing it was ~16M instructions
    of every command (bench/RESULTS.md, issue 24). Trust: the caller uses it only to accept the
    shipped file (whose own digest it must equal), never to look up the cache, so a forged entry
    can at worst make an edited YAML in the installed package read as its shipped copy."""
    entry = _digest_memo().get(str(path))
    if isinstance(entry, list) and len(entry) == 3 and entry[:2] == [size, mtime_ns]:
        digest = entry[2]
        return digest if isinstance(digest, str) else None
    return None


def remember_digest(path: Path, size: int, mtime_ns: int, digest: str) -> None:
    """Record the digest of `path` at this size and modification time for later runs (atomic: a
    file of this process, then renamed; any failure only loses the speed-up)."""
    folder = cache_dir()
    if folder is None or known_digest(path, size, mtime_ns) == digest:
        return
    memo = _digest_memo()
    if len(memo) >= _DIGESTS_KEPT:  # installs come and go (one entry per bundled file of each)
        memo.clear()
    memo[str(path)] = [size, mtime_ns, digest]
    tmp = folder / f".{_DIGEST_MEMO}.{os.getpid()}.tmp"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        tmp.write_bytes(json.dumps(memo, separators=(",", ":")).encode())
        os.replace(tmp, folder / _DIGEST_MEMO)
    except (OSError, ValueError):
        return


@functools.cache
def row_types(owner: type, skip: frozenset[str] = frozenset()) -> RowTypes:
    """Field -> JSON types, read from the (string) annotations of the dataclass a row becomes."""
    out: RowTypes = {}
    for f in fields(owner):
        if f.name in skip:
            continue
        annotation = f.type if isinstance(f.type, str) else f.type.__name__
        heads = (part.strip().split("[")[0] for part in annotation.split("|"))
        out[f.name] = tuple(t for head in heads for t in _JSON_TYPES.get(head, (str,)))
    return out


def _file(folder: Path, kind: str, digest: str) -> Path:
    return folder / f"catalog-{CACHE_FORMAT}-{kind}-{digest}.json"


def load(kind: str, digest: str, types: RowTypes) -> list[dict[str, Any]] | None:
    """The cached rows, or None when there are none or the file is unusable (then it is rebuilt)."""
    folder = cache_dir()
    if folder is None:
        return None
    return read(_file(folder, kind, digest), kind, digest, types)


def read(
    path: Path, kind: str, digest: str, types: RowTypes, check_rows: bool = True
) -> list[dict[str, Any]] | None:
    """The rows of one file in the cache format (a cache file, or the validated catalogs shipped with
    the package: `sources.shipped`), or None when it is missing or does not match; `check_rows=False`
    skips the per-row shape check (the shipped file, tested to be what validation yields)."""
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError, RecursionError):
        return None
    names = list(types)
    if not isinstance(data, dict) or [data.get(k) for k in ("format", "kind", "digest", "fields")] != [
        CACHE_FORMAT,
        kind,
        digest,
        names,
    ]:
        return None
    rows, shared = data.get("rows"), data.get("shared", {})
    if not isinstance(rows, list) or not isinstance(shared, dict):
        return None
    if check_rows and not (
        _shared_ok(shared, types)
        and _shape_ok(rows, _stored_types(types, shared))
        and _indexes_ok(rows, list(types), shared)
    ):
        return None
    if not rows:
        return []
    # a column at a time, at C speed: each shared field's indexes looked up in its values
    columns: list[Iterable[Any]] = list(zip(*rows, strict=True))
    for i, name in enumerate(names):
        if name in shared:
            columns[i] = map(shared[name].__getitem__, columns[i])
    return [dict(zip(names, r, strict=True)) for r in zip(*columns, strict=True)]


def shared_fields(types: RowTypes) -> list[str]:
    """The fields whose values may be stored once per distinct value: all but the lists (aliases,
    whose strings are checked one by one)."""
    return [name for name, allowed in types.items() if list not in allowed]


def _shared_ok(shared: dict[str, Any], types: RowTypes) -> bool:
    """`shared` lists values for shared fields alone, each a list of values of the field's type."""
    return set(shared) <= set(shared_fields(types)) and all(
        isinstance(values, list) and not _types(values) - set(types[name]) for name, values in shared.items()
    )


def _indexes_ok(rows: list[list[Any]], names: list[str], shared: dict[str, list[Any]]) -> bool:
    """Every shared field's index names one of its values."""
    for name, values in shared.items():
        column = list(map(itemgetter(names.index(name)), rows))
        if column and not (min(column) >= 0 and max(column) < len(values)):
            return False
    return True


def _stored_types(types: RowTypes, shared: dict[str, list[Any]]) -> RowTypes:
    """The JSON types of a stored row: a shared field's value is an index (an int, never a bool)."""
    return {name: (int,) if name in shared else allowed for name, allowed in types.items()}


def _shape_ok(rows: list[Any], types: RowTypes) -> bool:
    """Every row a list of one value per field, each of its field's JSON type (a bool only where bool
    is allowed, not as an int), the aliases a list of strings. Checked a column at a time, as the set
    of the values' exact types (JSON decodes to no subclass but bool's of int, which the exact type
    refuses where an int is asked): 10,000 rows a value at a time were a third of `which` over them."""
    if _types(rows) - {list} or set(map(len, rows)) - {len(types)}:
        return False
    # no rows: no columns (zip of nothing), nothing to refuse
    for (name, allowed), column in zip(types.items(), zip(*rows, strict=True), strict=False):
        if _types(column) - set(allowed):
            return False
        if name == "aliases" and _types(chain.from_iterable(column)) - {str}:
            return False
    return True


def _types(values: Iterable[object]) -> set[type]:
    return set(map(type, values))


def store(kind: str, digest: str, rows: list[dict[str, Any]], types: RowTypes) -> None:
    """Write the cache atomically (temp file + rename); any failure only loses the speed-up."""
    folder = cache_dir()
    if folder is None:
        return
    names = list(types)
    head = {"format": CACHE_FORMAT, "kind": kind, "digest": digest, "fields": names}
    try:
        stored, shared = _shared(rows, shared_fields(types))
        folder.mkdir(parents=True, exist_ok=True)
        import tempfile  # noqa: PLC0415 - start-up: only when a file is written

        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".catalog-", suffix=".tmp")
        with os.fdopen(fd, "wb") as handle:
            handle.write(json.dumps(head, separators=(",", ":"))[:-1].encode() + b',"rows":[')
            # in slices of rows: one dumps of a 25 MiB catalog held 50 MB more, json.dump's many
            # small writes took twice as long
            for start in range(0, len(stored), _ROWS_PER_WRITE):
                part = [[row[n] for n in names] for row in stored[start : start + _ROWS_PER_WRITE]]
                text = json.dumps(part, separators=(",", ":"), allow_nan=False)[1:-1]
                handle.write(("," if start else "").encode() + text.encode())
            tables = (f'"{name}":[{",".join(texts)}]' for name, texts in shared.items())
            handle.write(b'],"shared":{' + ",".join(tables).encode() + b"}}")
        os.replace(tmp, _file(folder, kind, digest))
    except (OSError, ValueError):
        return


def _shared(
    rows: list[dict[str, Any]], fields: list[str]
) -> tuple[list[dict[str, Any]], dict[str, list[str]]]:
    """The rows with the values of each field that repeats (at most half as many distinct values as
    rows, of `fields`) replaced by their index among the field's distinct values, and those values as
    JSON texts (equal texts, one value: a value is shared only with those it would be stored as)."""
    stored = [dict(row) for row in rows]
    shared: dict[str, list[str]] = {}
    for name in fields:
        texts = [json.dumps(row[name], separators=(",", ":"), allow_nan=False) for row in rows]
        index = {text: i for i, text in enumerate(dict.fromkeys(texts))}
        if 2 * len(index) > len(rows):
            continue  # mostly distinct (names, ids): an index would only add to each row
        for row, text in zip(stored, texts, strict=True):
            row[name] = index[text]
        shared[name] = list(index)
    return stored, shared
