"""The one table from huggingface_hub failures to a HubError whose message says what to do, and the
short reasons ("cannot connect", "HTTP 503", "the answer broke off") that the Hub modules share."""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from urllib.parse import urlsplit

from gpusize.errors import HubError
from gpusize.sources.hub_fetch import HUB_TIMEOUT_ENV, Budget

__all__ = [
    "budget_error",
    "endpoint_error",
    "folder_error",
    "hub_error",
    "http_status",
    "not_a_hub_error",
    "not_found",
    "outage_error",
    "outage_reason",
]


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
        return cause or outage_error("no answer", repo_id, hub)
    if isinstance(exc, FileMetadataError):
        return not_a_hub_error(hub)
    if isinstance(exc, EntryNotFoundError):
        return HubError(
            f"{repo_id}{at} has no config.json: not a Transformers model; pass a local config.json instead"
        )
    outage = outage_reason(exc, timeout_s)
    if outage is not None:
        return outage_error(outage, repo_id, hub)
    if isinstance(exc, HfHubHTTPError):
        return HubError(
            f"{repo_id}: the Hub refused the request (HTTP {exc.response.status_code}): "
            "check the id and your HF_TOKEN's permissions"
        )
    return None


def folder_error() -> HubError | None:
    """HF_HOME or the Hub cache (HF_HUB_CACHE) where a file stands in the way of a folder: one line
    naming the variable, before huggingface_hub meets it as a NotADirectoryError."""
    # heavy (about 0.3 s to import): loaded only when the Hub is used
    from huggingface_hub import constants

    hub_cache = "HF_HUB_CACHE" if os.environ.get("HF_HUB_CACHE") else "the Hub cache folder"
    for name, folder in (("HF_HOME", constants.HF_HOME), (hub_cache, constants.HF_HUB_CACHE)):
        blocker = _file_in_the_way(Path(folder))
        if blocker is not None:
            shown = f"{folder[:300]!r}" + (
                "" if blocker == Path(folder) else f" ({str(blocker)[:300]!r} is a file)"
            )
            return HubError(f"{name} {shown} is not a folder: point it at a folder, or unset it")
    return None


def _file_in_the_way(folder: Path) -> Path | None:
    """The first existing path of `folder` and its parents, when it is not a folder; else None."""
    for path in (folder, *folder.parents):
        try:
            if path.exists():
                return None if path.is_dir() else path
        except (OSError, ValueError):  # unreadable, or a NUL byte: huggingface_hub says why itself
            return None
    return None


def endpoint_error() -> HubError | None:
    """HF_ENDPOINT that is not an http(s) URL with a host, or holds a control character or a space:
    one line with the value escaped, before the HTTP client refuses it as an InvalidURL."""
    # heavy (about 0.3 s to import): loaded only when the Hub is used
    from huggingface_hub import constants

    endpoint = constants.ENDPOINT
    try:
        parts = urlsplit(endpoint)
        usable = parts.scheme in ("http", "https") and bool(parts.hostname)
    except ValueError:  # a bad port or an unclosed [ of an IPv6 host
        usable = False
    if usable and all(ch.isprintable() and not ch.isspace() for ch in endpoint):
        return None
    return HubError(
        f"HF_ENDPOINT {endpoint[:300]!r} is not a URL: set it to the Hub's address "
        "(https://huggingface.co or a mirror's), or unset it"
    )


def outage_reason(exc: BaseException, timeout_s: float) -> str | None:
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


def http_status(exc: BaseException) -> str | None:
    """'HTTP 403' for any other HTTP error (a safetensors file the Hub refuses: the dtypes are lost)."""
    # heavy (about 0.3 s to import): loaded only when the Hub is used
    from huggingface_hub.errors import HfHubHTTPError

    return f"HTTP {exc.response.status_code}" if isinstance(exc, HfHubHTTPError) else None


def not_found(exc: BaseException) -> bool:
    # heavy (about 0.3 s to import): loaded only when the Hub is used
    from huggingface_hub.errors import EntryNotFoundError, HfHubHTTPError

    return isinstance(exc, EntryNotFoundError) or (
        isinstance(exc, HfHubHTTPError) and exc.response.status_code == 404
    )


def budget_error(repo_id: str, budget: Budget) -> HubError:
    # heavy (about 0.3 s to import): loaded only when the Hub is used
    from huggingface_hub import constants

    return HubError(
        f"{repo_id}: no complete answer from the Hub at {constants.ENDPOINT} within {budget.seconds:g} s: "
        f"check the network or HF_ENDPOINT, raise {HUB_TIMEOUT_ENV}, or set HF_HUB_OFFLINE=1 to use "
        "the local cache"
    )


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


def outage_error(outage: str, repo_id: str, hub: str) -> HubError:
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


def not_a_hub_error(hub: str) -> HubError:
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
