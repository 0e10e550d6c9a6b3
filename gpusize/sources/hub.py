"""The only huggingface_hub caller: a model's config.json and stored dtypes from the Hugging Face Hub.

`load_hub_model` downloads config.json through the Hugging Face cache (HF_HOME / HF_HUB_CACHE), so a
later run works with HF_HUB_OFFLINE=1, and honours HF_ENDPOINT, HF_TOKEN and a stored login. The
safetensors headers (never the weights) give the element count of each stored dtype, which is how an
FP8 checkpoint is told apart from the bf16 `torch_dtype` in its config. The config is parsed with
`json.loads` only; no remote code ever runs. Every failure becomes a one-line HubError that says what
to do (`hub_error`, the one mapping table). huggingface_hub is imported inside the functions so that
`import gpusize.hub` stays cheap.

Time is bounded: the first request is one HEAD of config.json with `timeout_s` and no retry. When it
cannot connect, times out, is rate limited or meets a 5xx, the cached config is used if there is one
(as huggingface_hub does) and a HubError is raised otherwise; huggingface_hub's own fallback would
retry with backoff for up to five more 60 s attempts. Once that HEAD has answered, the download and
the header reads are huggingface_hub's, each request under a timeout.

Offline (or with the Hub unavailable) the dtypes come from the cached snapshot when every weight file
of the checkpoint is in it (a model downloaded for serving); otherwise they are None and a note says so.
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpusize.errors import ConfigError, HubError
from gpusize.sources.config_json import MAX_CONFIG_BYTES, read_config_json
from gpusize.sources.safetensors import read_dtype_elements, weight_files

__all__ = ["HubModel", "hub_error", "load_hub_model"]

CONFIG_NAME = "config.json"
#: The Hub cache keeps each commit's files under `snapshots/<40-hex sha>/`.
COMMIT_SHA = re.compile(r"[0-9a-f]{40}")
CONFIG_ARITHMETIC = "weights from config arithmetic"


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
    repo_id: str, revision: str | None = None, token: str | None = None, timeout_s: float = 10.0
) -> HubModel:
    """Fetch `repo_id`'s config.json at `revision` (default: main) and its safetensors dtype counts."""
    # heavy (about 0.3 s to import): loaded only when the Hub is used
    from huggingface_hub import constants

    unavailable: str | None
    try:
        if constants.HF_HUB_OFFLINE:
            path, unavailable = _cached_config(repo_id, revision), "offline"
        else:
            path, unavailable = _fetched_config(repo_id, revision, token, timeout_s)
    except Exception as exc:
        error = hub_error(exc, repo_id, revision, timeout_s)
        if error is None:
            raise
        raise error from None
    commit = _snapshot_commit(path)
    config = _parse_config(Path(path), f"{repo_id}@{commit[:12]}")
    if unavailable is None:
        dtype_elements, notes = _remote_dtype_elements(repo_id, commit, token, timeout_s)
    else:
        dtype_elements, notes = _cached_dtype_elements(Path(path).parent, unavailable)
        notes = (f"config.json from the local Hub cache ({unavailable})", *notes)
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
    repo_id: str, revision: str | None, token: str | None, timeout_s: float
) -> tuple[str, str | None]:
    """config.json from the Hub after one bounded HEAD, or from the cache (with the reason) when the
    Hub is unavailable."""
    # heavy (about 0.3 s to import): loaded only when the Hub is used
    from huggingface_hub import constants, get_hf_file_metadata, hf_hub_download, hf_hub_url
    from huggingface_hub.errors import LocalEntryNotFoundError

    url = hf_hub_url(repo_id, CONFIG_NAME, revision=revision)
    try:
        meta = get_hf_file_metadata(url, token=token, timeout=timeout_s)
    except Exception as exc:
        outage = _outage(exc, timeout_s)
        if outage is None:
            raise
        try:
            return _cached_config(repo_id, revision), outage
        except LocalEntryNotFoundError:
            raise _outage_error(outage, repo_id, constants.ENDPOINT) from None
    if meta.commit_hash is None or meta.etag is None:
        raise _not_a_hub_error(constants.ENDPOINT)
    if meta.size is not None and meta.size > MAX_CONFIG_BYTES:
        raise ConfigError(f"{repo_id}: config.json is {meta.size} bytes, too large to be a config")
    return hf_hub_download(repo_id, CONFIG_NAME, revision=revision, token=token, etag_timeout=timeout_s), None


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
    repo_id: str, commit: str, token: str | None, timeout_s: float
) -> tuple[dict[str, int] | None, tuple[str, ...]]:
    """Element count per dtype from the safetensors headers (HTTP range requests, never the data)."""
    # heavy (about 0.3 s to import): loaded only when the Hub is used
    from huggingface_hub import HfApi
    from huggingface_hub.errors import HfHubHTTPError, NotASafetensorsRepoError, SafetensorsParsingError

    try:
        meta = HfApi().get_safetensors_metadata(repo_id, revision=commit, token=token, timeout=timeout_s)
    except NotASafetensorsRepoError:
        return None, (f"no safetensors weights in the repo: {CONFIG_ARITHMETIC}",)
    except (SafetensorsParsingError, HfHubHTTPError, ValueError, KeyError, TypeError) as exc:
        # An unreadable index or header (JSONDecodeError is a ValueError), or an HTTP error on one file.
        reason = _outage(exc, timeout_s) or _first_line(exc)
        return None, (f"safetensors metadata unavailable ({reason}): {CONFIG_ARITHMETIC}",)
    except Exception as exc:
        outage = _outage(exc, timeout_s)
        if outage is None:
            raise
        return None, (f"safetensors metadata unavailable ({outage}): {CONFIG_ARITHMETIC}",)
    counts = {str(dtype): int(n) for dtype, n in meta.parameter_count.items()}
    if not counts:
        return None, (f"the safetensors index lists no tensors: {CONFIG_ARITHMETIC}",)
    return dict(sorted(counts.items())), ()


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
    """A short reason when `exc` means the Hub is unavailable now (network, timeout, 429, 5xx)."""
    # heavy (about 0.3 s to import): loaded only when the Hub is used
    from huggingface_hub.errors import HfHubHTTPError

    if isinstance(exc, HfHubHTTPError):
        status = exc.response.status_code
        if status == 429:
            return "rate limited (HTTP 429)"
        return f"HTTP {status}" if status >= 500 else None
    if isinstance(exc, _transport_errors()):
        if isinstance(exc, TimeoutError) or "Timeout" in type(exc).__name__:
            return f"no answer within {timeout_s:g} s"
        return "cannot connect"
    return None


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


def _outage_error(outage: str, repo_id: str, hub: str) -> HubError:
    if outage.startswith("rate limited"):
        return HubError(
            f"{repo_id}: the Hub rate limited this client (HTTP 429): wait a minute and retry, "
            "or set HF_TOKEN for a higher limit"
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
        ("requests", "RequestException"),
    ):
        try:
            found.append(getattr(importlib.import_module(module), name))
        except (ImportError, AttributeError):
            continue
    return tuple(found)
