"""Bounded HTTP for the Hub: one time budget per model resolution, a timeout on every request, a size
cap on every body, and the Hugging Face cache layout written for the one file gpusize keeps.

Why not huggingface_hub's downloader: its resume loop retries a body that breaks off mid-way (15 lines
of warnings, a minute), it writes whatever a server streams into the cache (a GET without
Content-Length streaming gigabytes), and its safetensors reader requests every shard an index names
(200,000 of them if told). Here every request goes through huggingface_hub's own HTTP session (proxy,
TLS and token settings, the same headers) but the body is read by `get_bytes`: at most `limit` bytes,
the budget checked between chunks. A server that trickles its headers one byte at a time is stopped
by `run_within`, which waits for the whole resolution at most the budget (plus a grace second) and
answers without it.

The budget is GPUSIZE_HUB_TIMEOUT seconds (default 60) for everything the Hub is asked for one model;
each request also waits at most REQUEST_TIMEOUT_S for its next bytes.

The cache entry written for config.json follows the documented layout of the Hugging Face cache
(https://huggingface.co/docs/huggingface_hub/guides/manage-cache): `blobs/<etag>`,
`snapshots/<commit>/config.json` linking to it, `refs/<revision>` holding the commit, each written
atomically, so `HF_HUB_OFFLINE=1` and huggingface_hub itself find it.
"""

from __future__ import annotations

import math
import os
import re
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from gpusize.errors import InputError

__all__ = [
    "DEFAULT_BUDGET_S",
    "HUB_TIMEOUT_ENV",
    "MAX_REQUESTS",
    "REQUEST_TIMEOUT_S",
    "Budget",
    "BudgetSpent",
    "budget_seconds",
    "get_bytes",
    "run_within",
    "store_in_cache",
]

T = TypeVar("T")

#: Environment variable: seconds the whole Hub resolution of one model may take.
HUB_TIMEOUT_ENV = "GPUSIZE_HUB_TIMEOUT"
#: Default budget: a config and a few hundred safetensors headers take a few seconds on a normal link.
DEFAULT_BUDGET_S = 60.0
#: Largest budget accepted (an hour).
MAX_BUDGET_S = 3600.0
#: Longest wait for the next bytes of any one request.
REQUEST_TIMEOUT_S = 10.0
#: Most requests one resolution may send: two per shard of the largest checkpoint allowed, and a few.
MAX_REQUESTS = 4200
#: Most bytes one resolution may download (config, index and every safetensors header together).
MAX_TOTAL_BYTES = 512 * 1024 * 1024
#: A commit sha as the Hub names snapshots; an ETag that can be a file name (sha1 or sha256 on the Hub).
COMMIT_SHA = re.compile(r"[0-9a-f]{40}")
_ETAG = re.compile(r"[0-9A-Za-z_-][0-9A-Za-z_.-]{0,127}")
_REVISION = re.compile(r"[\w.-]+(?:/[\w.-]+)*")
_CHUNK = 64 * 1024


class BudgetSpent(Exception):
    """The time, request or byte budget of a resolution ran out (raised inside the worker)."""


def budget_seconds() -> float:
    """GPUSIZE_HUB_TIMEOUT as seconds (default 60); a bad value is an input error."""
    raw = os.environ.get(HUB_TIMEOUT_ENV, "").strip()
    if not raw:
        return DEFAULT_BUDGET_S
    try:
        value = float(raw[:40])
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or not 0 < value <= MAX_BUDGET_S:
        raise InputError(
            f"{HUB_TIMEOUT_ENV}={raw[:40]!r}: give the seconds the Hub may take, above 0 and at most "
            f"{MAX_BUDGET_S:g}"
        )
    return value


class Budget:
    """Time, requests and bytes left for one model resolution."""

    def __init__(self, seconds: float, request_timeout_s: float = REQUEST_TIMEOUT_S) -> None:
        self.seconds = seconds
        self.request_timeout_s = request_timeout_s
        self.deadline = time.monotonic() + seconds
        self.cancelled = False
        self.requests = 0
        self.bytes = 0

    def remaining(self) -> float:
        return self.deadline - time.monotonic()

    def timeout(self) -> float:
        """The timeout for the next request; BudgetSpent when no time is left."""
        left = self.remaining()
        if self.cancelled or left <= 0:
            raise BudgetSpent(f"no complete answer within {self.seconds:g} s")
        return min(self.request_timeout_s, left)

    def request(self) -> float:
        """Count one request; its timeout."""
        self.requests += 1
        if self.requests > MAX_REQUESTS:
            raise BudgetSpent(f"more than {MAX_REQUESTS:,} requests")
        return self.timeout()

    def received(self, n: int) -> None:
        self.bytes += n
        if self.bytes > MAX_TOTAL_BYTES:
            raise BudgetSpent(f"more than {MAX_TOTAL_BYTES >> 20} MiB of metadata")
        self.timeout()


def run_within(budget: Budget, work: Callable[[], T], late: Callable[[], T]) -> T:
    """`work()` in a daemon thread; `late()` instead when it has not finished within the budget (a
    server trickling its headers keeps a read alive longer than any per-read timeout)."""
    box: dict[str, object] = {}

    def target() -> None:
        try:
            box["result"] = work()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread as is
            box["error"] = exc

    thread = threading.Thread(target=target, name="gpusize-hub", daemon=True)
    thread.start()
    thread.join(max(budget.remaining(), 0) + 1.0)
    if thread.is_alive():
        budget.cancelled = True  # the worker stops at its next chunk or request
        return late()
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box["result"]  # type: ignore[return-value]


def get_bytes(
    url: str, token: str | None, budget: Budget, limit: int, first: int | None = None, last: int | None = None
) -> bytes:
    """GET `url` (bytes first..last when given) through huggingface_hub's session: at most `limit`
    bytes. A server that ignores the range is read only as far as asked; a body beyond `limit`
    otherwise raises ValueError. HTTP errors raise huggingface_hub's typed errors."""
    # heavy (about 0.3 s to import): loaded only when the Hub is used
    from huggingface_hub import get_session, hf_raise_for_status
    from huggingface_hub.utils import build_hf_headers  # type: ignore[attr-defined]  # documented here

    headers = build_hf_headers(token=token)
    ranged = first is not None and last is not None
    if ranged:
        headers["Range"] = f"bytes={first}-{last}"
    session = get_session()
    chunks: list[bytes] = []
    size = 0
    with session.stream(
        "GET", url, headers=headers, timeout=budget.request(), follow_redirects=True
    ) as response:
        hf_raise_for_status(response)
        declared = response.headers.get("Content-Length", "")
        if not ranged and declared.isdigit() and int(declared) > limit:
            raise ValueError(f"the answer is {int(declared):,} bytes, more than the {limit:,} allowed")
        for chunk in response.iter_bytes(_CHUNK):
            size += len(chunk)
            budget.received(len(chunk))
            if size > limit:
                if ranged:  # the range was ignored: keep what was asked for, drop the rest unread
                    chunks.append(chunk[: len(chunk) - (size - limit)])
                    break
                raise ValueError(f"the answer is larger than the {limit:,} bytes allowed")
            chunks.append(chunk)
    return b"".join(chunks)


# --------------------------------------------------------------------------- the cache layout


def store_in_cache(
    cache: Path, repo_id: str, revision: str | None, commit: str, etag: str, filename: str, data: bytes
) -> Path:
    """Write `data` as `filename` of `repo_id` at `commit` into the Hugging Face cache folder `cache`
    (blob, snapshot link, ref), each step atomic; returns the snapshot path. Names that could leave
    the cache folder (a path-like commit, ETag or revision) are refused before anything is written."""
    if not COMMIT_SHA.fullmatch(commit) or not _ETAG.fullmatch(etag) or "/" in filename:
        raise ValueError("a commit, ETag or file name that cannot name a cache entry")
    root = cache / f"models--{repo_id.replace('/', '--')}"
    blob = root / "blobs" / etag
    if not (blob.is_file() and blob.stat().st_size == len(data)):
        _atomic_write(blob, data)
    snapshot = root / "snapshots" / commit / filename
    _link(snapshot, blob, data)
    ref = revision or "main"
    if ref != commit and _REVISION.fullmatch(ref) and ".." not in ref.split("/"):
        _atomic_write(root / "refs" / ref, commit.encode())
    return snapshot


def _atomic_write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".gpusize-", suffix=".incomplete")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _link(snapshot: Path, blob: Path, data: bytes) -> None:
    """A relative symlink snapshot -> blob, as huggingface_hub makes them (a copy where symlinks are
    not available)."""
    snapshot.parent.mkdir(parents=True, exist_ok=True)
    tmp = snapshot.parent / f".gpusize-{os.getpid()}-{threading.get_ident()}.link"
    try:
        tmp.unlink(missing_ok=True)
        os.symlink(os.path.relpath(blob, snapshot.parent), tmp)
        os.replace(tmp, snapshot)
    except OSError:
        tmp.unlink(missing_ok=True)
        _atomic_write(snapshot, data)
