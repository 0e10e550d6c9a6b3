"""The only huggingface_hub caller: a model's config.json and stored dtypes from the Hugging Face Hub.

`load_hub_model` fetches config.json into the Hugging Face cache (HF_HOME / HF_HUB_CACHE), so a later
run works with HF_HUB_OFFLINE=1, and honours HF_ENDPOINT, HF_TOKEN and a stored login. The
safetensors headers (never the weights) give the element count of each stored dtype, which is how an
FP8 checkpoint is told apart from the bf16 `torch_dtype` in its config. The config is parsed with
`json.loads` only; no remote code ever runs. Every failure becomes a one-line HubError that says what
to do (`hub_error`, the one mapping table). huggingface_hub is imported inside the functions so that
`import gpusize.hub` stays cheap.

Time, requests and bytes are bounded (`sources.hub_fetch`): the whole resolution has a budget
(GPUSIZE_HUB_TIMEOUT, default 60 s), each request a timeout and no retry, each body a size cap
(config.json 16 MiB, an index 64 MiB, a header 100 MB, 512 MiB in all), an index at most 2,048
shards. huggingface_hub's logging is silenced while it works for gpusize: one line on stderr, not
its retry chatter. When the Hub cannot be reached, times out, is rate limited or meets a 5xx, the
cached config is used if there is one and a HubError is raised otherwise. A remote safetensors header
is checked entry by entry like a local one: a negative shape is an error, not -1e31 bytes.

Offline (or with the Hub unavailable) the dtypes come from the cached snapshot when every weight file
of the checkpoint is in it (a model downloaded for serving); otherwise they are None and a note says so.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpusize.core.fields import echo
from gpusize.errors import ConfigError, HubError
from gpusize.sources.config_json import MAX_CONFIG_BYTES, read_config_json
from gpusize.sources.hub_fetch import (
    COMMIT_SHA,
    HUB_TIMEOUT_ENV,
    REQUEST_TIMEOUT_S,
    Budget,
    BudgetSpent,
    budget_seconds,
    get_bytes,
    run_within,
    store_in_cache,
)
from gpusize.sources.safetensors import (
    INDEX_FILE,
    MAX_INDEX_BYTES,
    SINGLE_FILE,
    header_length,
    parse_header,
    read_dtype_elements,
    shard_names,
    tensor_dtype_elements,
    weight_files,
)

__all__ = ["FIRST_RANGE_BYTES", "HubModel", "hub_error", "load_hub_model"]

CONFIG_NAME = "config.json"
CONFIG_ARITHMETIC = "weights from config arithmetic"
#: Bytes asked for first from each safetensors file: the header of most files fits (huggingface_hub
#: asks for the same 100 kB, hf_api.py `get_safetensors_metadata`).
FIRST_RANGE_BYTES = 100_000


@dataclass(frozen=True)
class HubModel:
    """A Hub model at one commit: its config, and its stored dtypes when the Hub could tell."""

    repo_id: str
    revision: str  # the resolved commit sha
    config: dict[str, Any]
    #: safetensors dtype -> element count over all tensors; None when unavailable (see notes).
    dtype_elements: dict[str, int] | None
    notes: tuple[str, ...] = ()


def load_hub_model(
    repo_id: str,
    revision: str | None = None,
    token: str | None = None,
    timeout_s: float = REQUEST_TIMEOUT_S,
    budget_s: float | None = None,
) -> HubModel:
    """Fetch `repo_id`'s config.json at `revision` (default: main) and its safetensors dtype counts,
    within `budget_s` seconds in all (default GPUSIZE_HUB_TIMEOUT, else 60), each request waiting at
    most `timeout_s` for its next bytes."""
    # heavy (about 0.3 s to import): loaded only when the Hub is used
    from huggingface_hub import constants

    if constants.HF_HUB_OFFLINE:
        return _offline(repo_id, revision)
    budget = Budget(budget_s or budget_seconds(), timeout_s)
    progress: list[HubModel] = []  # the model without dtypes, once its config is in

    def late() -> HubModel:
        if progress:  # the config came; the safetensors headers did not
            first = progress[0]
            reason = f"no answer within {budget.seconds:g} s"
            note = f"safetensors metadata unavailable ({reason}): {CONFIG_ARITHMETIC}"
            return HubModel(first.repo_id, first.revision, first.config, None, (*first.notes, note))
        raise _budget_error(repo_id, budget)

    with _quiet_hub_logging():
        return run_within(budget, lambda: _online(repo_id, revision, token, budget, progress), late)


def _offline(repo_id: str, revision: str | None) -> HubModel:
    try:
        path = _cached_config(repo_id, revision)
    except Exception as exc:
        error = hub_error(exc, repo_id, revision)
        if error is None:
            raise
        raise error from None
    commit = _snapshot_commit(path)
    config = _parse_config(Path(path), f"{repo_id}@{commit[:12]}")
    dtype_elements, notes = _cached_dtype_elements(Path(path).parent, "offline")
    return HubModel(
        repo_id, commit, config, dtype_elements, ("config.json from the local Hub cache (offline)", *notes)
    )


def _online(
    repo_id: str, revision: str | None, token: str | None, budget: Budget, progress: list[HubModel]
) -> HubModel:
    try:
        path, unavailable = _fetched_config(repo_id, revision, token, budget)
    except BudgetSpent:
        raise _budget_error(repo_id, budget) from None
    except Exception as exc:
        error = hub_error(exc, repo_id, revision, budget.request_timeout_s)
        if error is None:
            raise
        raise error from None
    commit = _snapshot_commit(path)
    config = _parse_config(Path(path), f"{repo_id}@{commit[:12]}")
    if unavailable is not None:
        dtype_elements, notes = _cached_dtype_elements(Path(path).parent, unavailable)
        return HubModel(
            repo_id,
            commit,
            config,
            dtype_elements,
            (f"config.json from the local Hub cache ({unavailable})", *notes),
        )
    progress.append(HubModel(repo_id, commit, config, None))
    dtype_elements, notes = _remote_dtype_elements(repo_id, commit, token, budget)
    return HubModel(repo_id, commit, config, dtype_elements, notes)


def hub_error(
    exc: BaseException, repo_id: str, revision: str | None = None, timeout_s: float = 10.0
) -> HubError | None:
    """The one table from huggingface_hub failures to a HubError whose message says what to do;
    None when `exc` is not a Hub failure (a bug, to be re-raised as is)."""
    # heavy (about 0.3 s to import): loaded only when the Hub is used
    from huggingface_hub import constants
    from huggingface_hub.errors import (
        EntryNotFoundError,
        FileMetadataError,
        GatedRepoError,
        HfHubHTTPError,
        HFValidationError,
        LocalEntryNotFoundError,
        OfflineModeIsEnabled,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    hub, at = constants.ENDPOINT, f" at revision '{revision}'" if revision else ""
    if isinstance(exc, HubError):
        return exc
    if isinstance(exc, HFValidationError):
        return HubError(f"'{repo_id}' is not a valid Hub model id: expected owner/name")
    if isinstance(exc, GatedRepoError):
        return HubError(
            f"{repo_id} is gated: accept its license on the Hub and set HF_TOKEN",
            hint=f"request access at {hub}/{repo_id}, then export HF_TOKEN=hf_... or run `hf auth login`",
        )
    if isinstance(exc, RepositoryNotFoundError):
        return HubError(
            f"{repo_id}: no such model on the Hub: check the id, or set HF_TOKEN if the repo is private",
            hint=f"search {hub}/models?search={repo_id.rpartition('/')[2]}",
        )
    if isinstance(exc, RevisionNotFoundError):
        return HubError(
            f"{repo_id} has no revision '{revision or 'main'}': pass an existing branch, tag or commit",
            hint=f"list them at {hub}/{repo_id}/tree/main",
        )
    if isinstance(exc, (LocalEntryNotFoundError, OfflineModeIsEnabled)):
        if constants.HF_HUB_OFFLINE:
            return HubError(
                f"{repo_id}{at} is not in the local Hub cache and HF_HUB_OFFLINE is set: "
                "unset HF_HUB_OFFLINE, or run once online to cache it",
                hint=f"cache folder: {constants.HF_HUB_CACHE}",
            )
        cause = hub_error(exc.__cause__, repo_id, revision, timeout_s) if exc.__cause__ else None
        return cause or _outage_error("no answer", repo_id, hub)
    if isinstance(exc, FileMetadataError):
        return _not_a_hub_error(hub)
    if isinstance(exc, EntryNotFoundError):
        return HubError(
            f"{repo_id}{at} has no config.json: not a Transformers model; pass a local config.json instead"
        )
    outage = _outage(exc, timeout_s)
    if outage is not None:
        return _outage_error(outage, repo_id, hub)
    if isinstance(exc, HfHubHTTPError):
        return HubError(
            f"{repo_id}: the Hub refused the request (HTTP {exc.response.status_code}): "
            "check the id and your HF_TOKEN's permissions"
        )
    return None


# --------------------------------------------------------------------------- config.json


def _fetched_config(
    repo_id: str, revision: str | None, token: str | None, budget: Budget
) -> tuple[str, str | None]:
    """config.json from the Hub (one HEAD, one GET of at most MAX_CONFIG_BYTES, written into the
    cache), or from the cache (with the reason) when the Hub is unavailable."""
    # heavy (about 0.3 s to import): loaded only when the Hub is used
    from huggingface_hub import constants, get_hf_file_metadata, hf_hub_url
    from huggingface_hub.errors import LocalEntryNotFoundError

    try:
        meta = get_hf_file_metadata(
            hf_hub_url(repo_id, CONFIG_NAME, revision=revision), token=token, timeout=budget.request()
        )
        if meta.commit_hash is None or meta.etag is None:
            raise _not_a_hub_error(constants.ENDPOINT)
        if not COMMIT_SHA.fullmatch(meta.commit_hash):
            raise HubError(
                f"{constants.ENDPOINT} answered with commit {echo(meta.commit_hash)}, not a 40-digit sha: "
                "not a Hugging Face Hub; check HF_ENDPOINT and your proxy"
            )
        if meta.size is not None and meta.size > MAX_CONFIG_BYTES:
            raise ConfigError(f"{repo_id}: config.json is {meta.size:,} bytes, too large to be a config")
        cached = _cached_blob(repo_id, meta.commit_hash, meta.etag)
        if cached is not None:
            return cached, None
        url = hf_hub_url(repo_id, CONFIG_NAME, revision=meta.commit_hash)
        try:
            data = get_bytes(url, token, budget, MAX_CONFIG_BYTES)
        except ValueError as exc:
            raise ConfigError(f"{repo_id}: config.json: {exc}; too large to be a config") from None
        cache = Path(constants.HF_HUB_CACHE)
        try:
            return str(
                store_in_cache(cache, repo_id, revision, meta.commit_hash, meta.etag, CONFIG_NAME, data)
            ), None
        except ValueError:
            raise HubError(
                f"{constants.ENDPOINT} answered with an ETag {echo(meta.etag)} that cannot name a file: "
                "not a Hugging Face Hub; check HF_ENDPOINT and your proxy"
            ) from None
        except OSError as exc:
            raise HubError(
                f"cannot write to the Hub cache {cache} ({exc.strerror or exc}): check HF_HOME"
            ) from None
    except Exception as exc:
        outage = _outage(exc, budget.request_timeout_s)
        if outage is None:
            raise
        try:
            return _cached_config(repo_id, revision), outage
        except LocalEntryNotFoundError:
            raise _outage_error(outage, repo_id, constants.ENDPOINT) from None


def _cached_blob(repo_id: str, commit: str, etag: str) -> str | None:
    """The cached config.json of this commit when its blob is the one the Hub names (no GET needed)."""
    # heavy (about 0.3 s to import): loaded only when the Hub is used
    from huggingface_hub import try_to_load_from_cache

    found = try_to_load_from_cache(repo_id, CONFIG_NAME, revision=commit)
    if isinstance(found, str) and Path(found).resolve().name == etag:
        return found
    return None


def _cached_config(repo_id: str, revision: str | None) -> str:
    """The cached config.json's path; raises LocalEntryNotFoundError without touching the network."""
    # heavy (about 0.3 s to import): loaded only when the Hub is used
    from huggingface_hub import hf_hub_download

    return hf_hub_download(repo_id, CONFIG_NAME, revision=revision, local_files_only=True)


def _snapshot_commit(path: str) -> str:
    """The commit sha of a cached file: its folder under `snapshots/` is named by it."""
    commit = Path(path).parent.name
    if not COMMIT_SHA.fullmatch(commit):
        raise HubError(f"{path}: not inside a Hub cache snapshot folder: check HF_HUB_CACHE")
    return commit


def _parse_config(file: Path, where: str) -> dict[str, Any]:
    return read_config_json(file, f"{where}: config.json")


# --------------------------------------------------------------------------- safetensors headers


def _remote_dtype_elements(
    repo_id: str, commit: str, token: str | None, budget: Budget
) -> tuple[dict[str, int] | None, tuple[str, ...]]:
    """Element count per dtype from the safetensors headers (HTTP range requests, never the data),
    each entry checked like a local header; the network failing only costs the dtypes (a note)."""
    where = f"{repo_id}@{commit[:12]}"
    try:
        files = _remote_weight_files(repo_id, commit, token, budget, where)
        if files is None:
            return None, (f"no safetensors weights in the repo: {CONFIG_ARITHMETIC}",)
        counts: dict[str, int] = {}
        for name in files:
            for tensor_name, tensor in _remote_header(repo_id, commit, name, token, budget, where).items():
                if tensor_name != "__metadata__":
                    dtype, elements = tensor_dtype_elements(f"{where}: {name}", tensor_name, tensor)
                    counts[dtype] = counts.get(dtype, 0) + elements
    except BudgetSpent as exc:
        return None, (f"safetensors metadata unavailable ({exc}): {CONFIG_ARITHMETIC}",)
    except ConfigError:
        raise  # a header that is not what it must be: refused like a local one
    except Exception as exc:
        reason = _outage(exc, budget.request_timeout_s) or _http_status(exc)
        if reason is None:
            raise
        return None, (f"safetensors metadata unavailable ({reason}): {CONFIG_ARITHMETIC}",)
    if not counts:
        return None, (f"the safetensors index lists no tensors: {CONFIG_ARITHMETIC}",)
    return dict(sorted(counts.items())), ()


def _remote_weight_files(
    repo_id: str, commit: str, token: str | None, budget: Budget, where: str
) -> list[str] | None:
    """`model.safetensors`, else the shards its index names (checked, at most MAX_SHARDS), else None."""
    # heavy (about 0.3 s to import): loaded only when the Hub is used
    from huggingface_hub import get_hf_file_metadata, hf_hub_url

    try:
        get_hf_file_metadata(
            hf_hub_url(repo_id, SINGLE_FILE, revision=commit), token=token, timeout=budget.request()
        )
        return [SINGLE_FILE]
    except Exception as exc:
        if not _not_found(exc):
            raise
    try:
        raw = get_bytes(hf_hub_url(repo_id, INDEX_FILE, revision=commit), token, budget, MAX_INDEX_BYTES)
    except ValueError as exc:
        raise ConfigError(f"{where}: {INDEX_FILE}: {exc}") from None
    except Exception as exc:
        if _not_found(exc):
            return None
        raise
    return shard_names(parse_header(raw, f"{where}: {INDEX_FILE}"), f"{where}: {INDEX_FILE}")


def _remote_header(
    repo_id: str, commit: str, name: str, token: str | None, budget: Budget, where: str
) -> dict[str, Any]:
    """One file's header: a first range of FIRST_RANGE_BYTES, and the rest of the header if longer."""
    # heavy (about 0.3 s to import): loaded only when the Hub is used
    from huggingface_hub import hf_hub_url

    url = hf_hub_url(repo_id, name, revision=commit)
    head = get_bytes(url, token, budget, FIRST_RANGE_BYTES, 0, FIRST_RANGE_BYTES - 1)
    length = header_length(head, f"{where}: {name}")
    raw = head[8 : 8 + length]
    if len(raw) < length:
        raw += get_bytes(url, token, budget, length - len(raw), 8 + len(raw), 8 + length - 1)
    if len(raw) < length:
        raise ConfigError(
            f"{where}: {name}: corrupt safetensors header (shorter than its stated {length:,} bytes)"
        )
    return parse_header(raw, f"{where}: {name}")


def _cached_dtype_elements(snapshot: Path, reason: str) -> tuple[dict[str, int] | None, tuple[str, ...]]:
    """Element count per dtype from the cached weight files, when the snapshot holds all of them."""
    unavailable = (f"safetensors metadata unavailable ({reason}): {CONFIG_ARITHMETIC}",)
    try:
        files = weight_files(snapshot)
        if not files or not all(file.is_file() for file in files):
            return None, unavailable
        return read_dtype_elements(snapshot), ("dtypes from the cached safetensors headers",)
    except ConfigError as exc:
        return None, (f"cached safetensors not usable ({exc}): {CONFIG_ARITHMETIC}",)


# --------------------------------------------------------------------------- outages


def _outage(exc: BaseException, timeout_s: float) -> str | None:
    """A short reason when `exc` means the Hub is unavailable now (network, timeout, a broken or
    endless answer, 429, 5xx); None for anything else."""
    # heavy (about 0.3 s to import): loaded only when the Hub is used
    from huggingface_hub.errors import HfHubHTTPError

    if isinstance(exc, HfHubHTTPError):
        status = exc.response.status_code
        if status == 429:
            return "rate limited (HTTP 429)"
        return f"HTTP {status}" if status >= 500 else None
    name = type(exc).__name__
    if name == "TooManyRedirects":
        return "redirected in a loop"
    if isinstance(exc, _transport_errors()):
        if isinstance(exc, TimeoutError) or "Timeout" in name:
            return f"no answer within {timeout_s:g} s"
        if name in ("RemoteProtocolError", "ReadError", "ProtocolError", "LocalProtocolError"):
            return f"the answer broke off ({_first_line(exc)[:100]})"
        return "cannot connect"
    return None


def _http_status(exc: BaseException) -> str | None:
    """'HTTP 403' for any other HTTP error (a safetensors file the Hub refuses: the dtypes are lost)."""
    # heavy (about 0.3 s to import): loaded only when the Hub is used
    from huggingface_hub.errors import HfHubHTTPError

    return f"HTTP {exc.response.status_code}" if isinstance(exc, HfHubHTTPError) else None


def _not_found(exc: BaseException) -> bool:
    # heavy (about 0.3 s to import): loaded only when the Hub is used
    from huggingface_hub.errors import EntryNotFoundError, HfHubHTTPError

    return isinstance(exc, EntryNotFoundError) or (
        isinstance(exc, HfHubHTTPError) and exc.response.status_code == 404
    )


def _budget_error(repo_id: str, budget: Budget) -> HubError:
    # heavy (about 0.3 s to import): loaded only when the Hub is used
    from huggingface_hub import constants

    return HubError(
        f"{repo_id}: no complete answer from the Hub at {constants.ENDPOINT} within {budget.seconds:g} s: "
        f"check the network or HF_ENDPOINT, raise {HUB_TIMEOUT_ENV}, or set HF_HUB_OFFLINE=1 to use "
        "the local cache"
    )


@contextlib.contextmanager
def _quiet_hub_logging() -> Iterator[None]:
    """huggingface_hub's warnings off while it works for gpusize: its failures become one HubError line."""
    logger = logging.getLogger("huggingface_hub")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(level)


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


def _outage_error(outage: str, repo_id: str, hub: str) -> HubError:
    if outage.startswith("rate limited"):
        return HubError(
            f"{repo_id}: the Hub rate limited this client (HTTP 429): wait a minute and retry, "
            "or set HF_TOKEN for a higher limit"
        )
    if outage.startswith(("the answer broke off", "redirected")):
        return HubError(
            f"{repo_id}: the Hub at {hub} answered, but {outage}: retry, check HF_ENDPOINT and your "
            "proxy, or set HF_HUB_OFFLINE=1 to use the local cache"
        )
    if outage.startswith("HTTP"):
        return HubError(
            f"{repo_id}: the Hub at {hub} is unavailable ({outage}): retry later, "
            "or set HF_HUB_OFFLINE=1 to use the local cache"
        )
    return HubError(
        f"{repo_id}: cannot reach the Hub at {hub} ({outage}): check the network, proxy or HF_ENDPOINT, "
        "or set HF_HUB_OFFLINE=1 to use the local cache",
        hint="a model fetched once online is cached and works offline",
    )


def _not_a_hub_error(hub: str) -> HubError:
    return HubError(
        f"{hub} does not answer like a Hugging Face Hub (no commit or ETag header): "
        "check HF_ENDPOINT and your proxy"
    )


def _transport_errors() -> tuple[type[BaseException], ...]:
    """Connection and timeout errors of whichever HTTP client this huggingface_hub uses."""
    found: list[type[BaseException]] = [ConnectionError, TimeoutError]
    for module, name in (
        ("httpx2", "TransportError"),
        ("httpx", "TransportError"),
        ("httpx2", "TooManyRedirects"),
        ("httpx", "TooManyRedirects"),
        ("requests", "RequestException"),
    ):
        try:
            found.append(getattr(importlib.import_module(module), name))
        except (ImportError, AttributeError):
            continue
    return tuple(found)
