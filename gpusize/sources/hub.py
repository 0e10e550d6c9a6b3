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
of the checkpoint is in it (a model downloaded for serving), else from what the headers said when this
commit was sized online (`hub_record`, in gpusize's own cache folder), so one commit gives one answer;
otherwise they are None and a note says so.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from gpusize.core.fields import echo
from gpusize.dataclass import dataclass
from gpusize.errors import ConfigError, HubError
from gpusize.sources.config_json import (
    MAX_CONFIG_BYTES,
    QUANT_SIDECAR,
    decode_config,
    needs_sidecar,
    read_config_json,
    with_sidecar,
)
from gpusize.sources.hub_errors import (
    budget_error,
    endpoint_error,
    folder_error,
    hub_error,
    not_a_hub_error,
    not_found,
    outage_error,
    outage_reason,
)
from gpusize.sources.hub_fetch import (
    COMMIT_SHA,
    REQUEST_TIMEOUT_S,
    Budget,
    BudgetSpent,
    budget_seconds,
    get_bytes,
    run_within,
    store_in_cache,
)
from gpusize.sources.hub_record import read_record, write_record
from gpusize.sources.hub_safetensors import CONFIG_ARITHMETIC, remote_dtype_elements
from gpusize.sources.safetensors import read_dtype_elements, weight_files

__all__ = ["HubModel", "hub_error", "load_hub_model"]

CONFIG_NAME = "config.json"


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

    surroundings = folder_error() or (None if constants.HF_HUB_OFFLINE else endpoint_error())
    if surroundings is not None:
        raise surroundings
    if constants.HF_HUB_OFFLINE:
        return _offline(repo_id, revision)
    budget = Budget(budget_s or budget_seconds(), timeout_s)
    progress: list[HubModel] = []  # the model without dtypes, once its config is in

    def late() -> HubModel:
        if progress:  # the config came; the safetensors headers did not
            first = progress[0]
            reason = f"no answer within {budget.seconds:g} s"
            recorded = read_record(_endpoint(), first.repo_id, first.revision)
            if recorded is not None:
                return HubModel(first.repo_id, first.revision, first.config, recorded, (_recorded(reason),))
            note = f"safetensors metadata unavailable ({reason}): {CONFIG_ARITHMETIC}"
            return HubModel(first.repo_id, first.revision, first.config, None, (*first.notes, note))
        raise budget_error(repo_id, budget)

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
    config = _cached_sidecar(
        _parse_config(Path(path), f"{repo_id}@{commit[:12]}"), Path(path).parent, repo_id
    )
    dtype_elements, notes = _cached_dtype_elements(repo_id, Path(path).parent, "offline")
    return HubModel(
        repo_id, commit, config, dtype_elements, ("config.json from the local Hub cache (offline)", *notes)
    )


def _online(
    repo_id: str, revision: str | None, token: str | None, budget: Budget, progress: list[HubModel]
) -> HubModel:
    try:
        path, unavailable = _fetched_config(repo_id, revision, token, budget)
    except BudgetSpent:
        raise budget_error(repo_id, budget) from None
    except Exception as exc:
        error = hub_error(exc, repo_id, revision, budget.request_timeout_s)
        if error is None:
            raise
        raise error from None
    commit = _snapshot_commit(path)
    config = _parse_config(Path(path), f"{repo_id}@{commit[:12]}")
    if unavailable is not None:
        config = _cached_sidecar(config, Path(path).parent, repo_id)
        dtype_elements, notes = _cached_dtype_elements(repo_id, Path(path).parent, unavailable)
        return HubModel(
            repo_id,
            commit,
            config,
            dtype_elements,
            (f"config.json from the local Hub cache ({unavailable})", *notes),
        )
    if needs_sidecar(config):
        try:
            config = _fetched_sidecar(config, repo_id, commit, token, budget)
        except BudgetSpent:
            raise budget_error(repo_id, budget) from None
        except Exception as exc:
            error = hub_error(exc, repo_id, revision, budget.request_timeout_s)
            if error is None:
                raise
            raise error from None
    progress.append(HubModel(repo_id, commit, config, None))
    dtype_elements, notes = remote_dtype_elements(repo_id, commit, token, budget)
    if dtype_elements is not None:
        write_record(_endpoint(), repo_id, commit, dtype_elements)
    return HubModel(repo_id, commit, config, dtype_elements, notes)


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
            raise not_a_hub_error(constants.ENDPOINT)
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
        outage = outage_reason(exc, budget.request_timeout_s)
        if outage is None:
            raise
        try:
            return _cached_config(repo_id, revision), outage
        except LocalEntryNotFoundError:
            raise outage_error(outage, repo_id, constants.ENDPOINT) from None


def _fetched_sidecar(
    config: dict[str, Any], repo_id: str, commit: str, token: str | None, budget: Budget
) -> dict[str, Any]:
    """config.json with the repo's hf_quant_config.json (one HEAD; one GET of at most MAX_CONFIG_BYTES
    when the repo has it, written into the cache beside config.json) as its quantization_config."""
    # heavy (about 0.3 s to import): loaded only when the Hub is used
    from huggingface_hub import constants, get_hf_file_metadata, hf_hub_url

    url = hf_hub_url(repo_id, QUANT_SIDECAR, revision=commit)
    try:
        meta = get_hf_file_metadata(url, token=token, timeout=budget.request())
    except Exception as exc:
        if not_found(exc):
            return config
        raise
    where = f"{repo_id}@{commit[:12]}: {QUANT_SIDECAR}"
    if meta.size is not None and meta.size > MAX_CONFIG_BYTES:
        raise ConfigError(f"{where} is {meta.size:,} bytes, too large to be a quantization config")
    try:
        data = get_bytes(url, token, budget, MAX_CONFIG_BYTES)
    except ValueError as exc:
        raise ConfigError(f"{where}: {exc}; too large to be a quantization config") from None
    if meta.etag is not None:
        with contextlib.suppress(ValueError, OSError):  # the cache copy only serves offline runs
            store_in_cache(
                Path(constants.HF_HUB_CACHE), repo_id, None, commit, meta.etag, QUANT_SIDECAR, data
            )
    return with_sidecar(config, decode_config(data, where))


def _cached_sidecar(config: dict[str, Any], snapshot: Path, repo_id: str) -> dict[str, Any]:
    """config.json with the cached hf_quant_config.json of the same commit, when the cache holds one."""
    file = snapshot / QUANT_SIDECAR
    if not needs_sidecar(config) or not file.is_file():
        return config
    return with_sidecar(config, read_config_json(file, f"{repo_id}@{snapshot.name[:12]}: {QUANT_SIDECAR}"))


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


def _cached_dtype_elements(
    repo_id: str, snapshot: Path, reason: str
) -> tuple[dict[str, int] | None, tuple[str, ...]]:
    """Element count per dtype from the cached weight files, when the snapshot holds all of them;
    else what the headers said when this commit was sized online (`hub_record`), so that one commit
    gives one answer online and offline."""
    try:
        files = weight_files(snapshot)
        if files and all(file.is_file() for file in files):
            return read_dtype_elements(snapshot), ("dtypes from the cached safetensors headers",)
    except ConfigError as exc:
        return None, (f"cached safetensors not usable ({exc}): {CONFIG_ARITHMETIC}",)
    recorded = read_record(_endpoint(), repo_id, snapshot.name)
    if recorded is not None:
        return recorded, (_recorded(reason),)
    return None, (f"safetensors metadata unavailable ({reason}): {CONFIG_ARITHMETIC}",)


def _recorded(reason: str) -> str:
    return f"dtypes from the safetensors headers read online for this commit ({reason} now)"


def _endpoint() -> str:
    # heavy (about 0.3 s to import): loaded only when the Hub is used
    from huggingface_hub import constants

    return str(constants.ENDPOINT)


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
