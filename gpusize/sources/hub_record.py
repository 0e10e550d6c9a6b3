"""What the safetensors headers of one Hub commit said, kept so that the same commit gives the same
answer offline: online, the headers give the element count of each stored dtype; with
HF_HUB_OFFLINE=1 (or the Hub down) only config.json is in the Hugging Face cache, and the weights
would fall back to config arithmetic, a different number for the same commit.

The counts are written to gpusize's own cache folder (`catalog_cache.cache_dir`: GPUSIZE_CACHE_DIR, else
$XDG_CACHE_HOME/gpusize; never into the Hugging Face cache, whose layout huggingface_hub owns), one
small JSON file per (endpoint, repo, commit): `hub-dtypes-<format>-<sha256>.json`. A commit's files
never change, so the record never goes stale. It is written atomically; read at most
MAX_RECORD_BYTES and checked field by field; a record that is missing, too large, unreadable or not
what it must be is ignored (the answer falls back to config arithmetic, as before). A failure to
write only loses the record.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from gpusize.sources.catalog_cache import cache_dir
from gpusize.sources.safetensors import DTYPE_BITS, MAX_ELEMENTS, MAX_SHARDS

__all__ = ["MAX_RECORD_BYTES", "RECORD_FORMAT", "read_record", "write_record"]

#: Bumped whenever the record's fields change; older records are then ignored.
RECORD_FORMAT = 1
#: Largest record read: a few dozen dtypes with their counts take well under 4 KiB.
MAX_RECORD_BYTES = 64 * 1024
#: Most elements a dtype may count over a checkpoint: MAX_ELEMENTS per tensor, a million tensors a shard.
_MOST_ELEMENTS = MAX_ELEMENTS * MAX_SHARDS * 1_000_000


def _record_path(endpoint: str, repo_id: str, commit: str) -> Path | None:
    folder = cache_dir()
    if folder is None:
        return None
    key = hashlib.sha256(f"{endpoint}\n{repo_id}\n{commit}".encode("utf-8", "surrogatepass")).hexdigest()
    return folder / f"hub-dtypes-{RECORD_FORMAT}-{key}.json"


def write_record(endpoint: str, repo_id: str, commit: str, dtype_elements: dict[str, int]) -> None:
    """Keep the dtype counts read online for this commit; any failure only loses the record."""
    path = _record_path(endpoint, repo_id, commit)
    if path is None:
        return
    record = {"repo_id": repo_id, "commit": commit, "dtype_elements": dtype_elements}
    tmp: str | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        import tempfile  # noqa: PLC0415 - start-up: only when a file is written

        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".hub-dtypes-", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(record, handle, separators=(",", ":"), sort_keys=True)
        os.replace(tmp, path)
    except (OSError, ValueError):
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)


def read_record(endpoint: str, repo_id: str, commit: str) -> dict[str, int] | None:
    """The dtype counts read online for this commit, or None when there is no usable record."""
    path = _record_path(endpoint, repo_id, commit)
    if path is None:
        return None
    try:
        with path.open("rb") as handle:
            raw = handle.read(MAX_RECORD_BYTES + 1)
        record = json.loads(raw.decode("utf-8")) if len(raw) <= MAX_RECORD_BYTES else None
    except (OSError, ValueError, RecursionError):
        return None
    return _checked(record, repo_id, commit)


def _checked(record: Any, repo_id: str, commit: str) -> dict[str, int] | None:
    if not isinstance(record, dict) or record.get("repo_id") != repo_id or record.get("commit") != commit:
        return None
    counts = record.get("dtype_elements")
    if not isinstance(counts, dict) or not counts:
        return None
    for dtype, elements in counts.items():
        if dtype not in DTYPE_BITS or type(elements) is not int or not 0 <= elements <= _MOST_ELEMENTS:
            return None
    return dict(sorted(counts.items()))
