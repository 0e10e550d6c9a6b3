"""Stored dtypes of a Hub checkpoint from its safetensors headers, read with HTTP range requests (never
the tensor data) through `hub_fetch.get_bytes`: `model.safetensors`, else the shards its index names
(checked, at most 2,048). Each header entry is checked like a local one
(`safetensors.tensor_dtype_elements`): a malformed header is a ConfigError naming the file and the
tensor; the network failing, or the budget running out, only costs the dtypes (a note says so)."""

from __future__ import annotations

from typing import Any

from gpusize.errors import ConfigError
from gpusize.sources.hub_errors import http_status, not_found, outage_reason
from gpusize.sources.hub_fetch import Budget, BudgetSpent, get_bytes
from gpusize.sources.safetensors import (
    INDEX_FILE,
    MAX_INDEX_BYTES,
    SINGLE_FILE,
    TensorTally,
    header_length,
    parse_header,
    shard_names,
    weight_map,
)

__all__ = ["CONFIG_ARITHMETIC", "FIRST_RANGE_BYTES", "remote_dtype_elements"]

CONFIG_ARITHMETIC = "weights from config arithmetic"
#: Bytes asked for first from each safetensors file: the header of most files fits (huggingface_hub
#: asks for the same 100 kB, hf_api.py `get_safetensors_metadata`).
FIRST_RANGE_BYTES = 100_000


def remote_dtype_elements(
    repo_id: str, commit: str, token: str | None, budget: Budget
) -> tuple[dict[str, int] | None, tuple[str, ...]]:
    """Element count per dtype from the safetensors headers (HTTP range requests, never the data),
    each entry checked like a local header; the network failing only costs the dtypes (a note)."""
    where = f"{repo_id}@{commit[:12]}"
    try:
        found = _remote_weight_files(repo_id, commit, token, budget, where)
        if found is None:
            return None, (f"no safetensors weights in the repo: {CONFIG_ARITHMETIC}",)
        files, mapping = found
        tally = TensorTally(where, mapping)
        for name in files:
            for tensor_name, tensor in _remote_header(repo_id, commit, name, token, budget, where).items():
                if tensor_name != "__metadata__":
                    tally.add(name, f"{where}: {name}", tensor_name, tensor)
        counts = tally.counts()
    except BudgetSpent as exc:
        return None, (f"safetensors metadata unavailable ({exc}): {CONFIG_ARITHMETIC}",)
    except ConfigError:
        raise  # a header that is not what it must be: refused like a local one
    except Exception as exc:
        reason = outage_reason(exc, budget.request_timeout_s) or http_status(exc)
        if reason is None:
            raise
        return None, (f"safetensors metadata unavailable ({reason}): {CONFIG_ARITHMETIC}",)
    if not counts:
        return None, (f"the safetensors index lists no tensors: {CONFIG_ARITHMETIC}",)
    return dict(sorted(counts.items())), ()


def _remote_weight_files(
    repo_id: str, commit: str, token: str | None, budget: Budget, where: str
) -> tuple[list[str], dict[str, str] | None] | None:
    """`model.safetensors`, else the shards its index names (checked, at most MAX_SHARDS) with the
    index's tensor -> shard map, else None."""
    # heavy (about 0.3 s to import): loaded only when the Hub is used
    from huggingface_hub import get_hf_file_metadata, hf_hub_url

    try:
        get_hf_file_metadata(
            hf_hub_url(repo_id, SINGLE_FILE, revision=commit), token=token, timeout=budget.request()
        )
        return [SINGLE_FILE], None
    except Exception as exc:
        if not not_found(exc):
            raise
    try:
        raw = get_bytes(hf_hub_url(repo_id, INDEX_FILE, revision=commit), token, budget, MAX_INDEX_BYTES)
    except ValueError as exc:
        raise ConfigError(f"{where}: {INDEX_FILE}: {exc}") from None
    except Exception as exc:
        if not_found(exc):
            return None
        raise
    mapping = weight_map(parse_header(raw, f"{where}: {INDEX_FILE}"), f"{where}: {INDEX_FILE}")
    return shard_names(mapping, f"{where}: {INDEX_FILE}"), mapping


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
