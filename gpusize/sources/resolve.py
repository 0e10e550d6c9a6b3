"""Resolve what a user typed as MODEL into a config dict, in a documented order:

1. an existing path: a `.gguf` file, a `config.json`, or a folder holding one (plus its local
   safetensors headers when present);
2. the catalogs (short name, alias or Hub id, case-insensitive), unless --revision asks for a
   specific Hub revision;
3. a Hub id (`org/name`) through `sources.hub` (cache first when HF_HUB_OFFLINE=1).

Nothing here ever writes to the user's files, and remote code is never executed: configs that ask
for `trust_remote_code` are read as JSON only. Progress goes through the `progress` context manager
the caller passes (the CLI shows a spinner on a terminal); loading itself never prints.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpusize.core.model import ResolvedModel
from gpusize.core.weights import StoredLayers
from gpusize.errors import ConfigError, UnknownNameError
from gpusize.sources import safetensors
from gpusize.sources.catalog import Catalogs
from gpusize.sources.config_json import load_config, shown_path

if TYPE_CHECKING:
    from gpusize.sources.ollama_tags import OllamaTag

__all__ = ["MAX_REFERENCE_CHARS", "Progress", "ResolvedModel", "engine_path", "resolve_model"]

#: Longest MODEL argument accepted (a Hub id is at most 96 characters; a path at most PATH_MAX).
MAX_REFERENCE_CHARS = 4096
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]{0,95}/[\w.-]{1,96}$")

Progress = Callable[[str], AbstractContextManager[Any]]


def _silent(_message: str) -> AbstractContextManager[Any]:
    return contextlib.nullcontext()


def resolve_model(
    reference: str,
    revision: str | None = None,
    catalogs: Catalogs | None = None,
    progress: Progress = _silent,
) -> ResolvedModel:
    if not reference.strip():
        raise ConfigError("MODEL is empty: give a catalog name, a Hub id (org/name) or a path")
    if len(reference) > MAX_REFERENCE_CHARS:
        raise ConfigError(f"MODEL is {len(reference):,} characters long: not a name, a Hub id or a path")
    catalogs = catalogs or Catalogs.with_env()
    path = _typed_path(reference)
    try:
        exists = path.exists()
    except (OSError, ValueError):  # a name too long for the file system, or with a NUL byte
        exists = False
    if exists:
        whole = path.is_dir() or path.suffix == ".gguf"
        return replace(_local(path), path=engine_path(reference, whole))
    if reference.endswith((".json", ".gguf")) or reference.startswith((".", "/", "~")):
        # as typed (`./~`, not the `~` that Path makes of it), or as expanded when it starts with ~
        raise ConfigError(
            f"{shown_path(path if reference.startswith('~') else reference)}: no such file or folder"
        )
    if revision is None and ":" in reference:
        from gpusize.sources import ollama_tags  # start-up: YAML and the tag table, only for name:tag

        if ollama_tags.is_tag(reference):
            return _tagged(ollama_tags.find_tag(reference), catalogs)
    suggestions: list[str] = []
    if revision is None:
        try:
            entry = catalogs.find_model(reference)
            return ResolvedModel(entry.hf_id, "catalog", entry.config, catalog_name=entry.name)
        except UnknownNameError as exc:
            if not _HUB_ID.match(reference):
                raise
            suggestions = exc.suggestions
    if not _HUB_ID.match(reference):
        raise ConfigError(
            f"'{shown_path(Path(reference))}' is not a catalog name and not a Hub id (org/name)"
        )
    return _hub(reference, revision, suggestions, progress)


def _tagged(tag: OllamaTag, catalogs: Catalogs) -> ResolvedModel:
    """The catalog model an Ollama tag names, with the GGUF type the tag ships."""
    entry = catalogs.find_model(tag.model)
    return ResolvedModel(
        entry.hf_id,
        "catalog",
        entry.config,
        catalog_name=entry.name,
        file_type=tag.dtype,
        ollama_tag=tag.tag,
        notes=tag.notes,
    )


def _typed_path(reference: str) -> Path:
    """The path a shell would read for the word as typed: only a leading `~` or `~user` (followed by
    `/` or the end) is expanded, so `./~` and `./~root` stay relative paths named `~` and `~root`
    (`Path("./~")` drops the `./`, and `Path.expanduser` would then read `$HOME`)."""
    return Path(os.path.expanduser(reference) if reference.startswith("~") else reference)


def engine_path(reference: str, whole: bool) -> str:
    """The local path a launch command passes, as the user typed it: the folder for a config.json
    (vLLM and SGLang take a model folder), the file for a GGUF; `~` expanded (the printed command
    quotes it, so the shell would not); `./` put before a path starting with `-`, which an engine's
    argument parser would read as an option. `whole`: the path names what the engine loads (a
    folder or a GGUF file), else it is a config.json inside the folder to load."""
    text = os.path.expanduser(reference) if reference.startswith("~") else reference
    if not whole:
        text = os.path.dirname(text) or "."
    return "./" + text if text.startswith("-") else text


def _local(path: Path) -> ResolvedModel:
    if path.suffix == ".gguf":
        # start-up: the GGUF reader and its optional package load only for .gguf files
        from gpusize.sources import gguf

        model = gguf.read_gguf(path)
        return ResolvedModel(
            str(path),
            "gguf",
            model.config,
            checkpoint_bytes=model.tensor_bytes,
            checkpoint_dtypes=model.bytes_by_type,
            stored_layers=StoredLayers(model.layer_bytes, model.token_embd_bytes, model.output_bytes),
            file_type=model.file_type,
            notes=(f"GGUF {model.file_type}: weights are the file's tensor bytes",),
        )
    config = load_config(path)
    folder = path if path.is_dir() else path.parent
    name = folder.resolve().name or None  # `fit mymodel/config.json` (or `fit .`) is "mymodel"
    if not safetensors.weight_files(folder):
        return ResolvedModel(
            str(path),
            "local",
            config,
            notes=("no local safetensors: weights from config arithmetic",),
            catalog_name=name,
        )
    dtypes = safetensors.read_dtype_elements(folder)
    return ResolvedModel(
        str(path),
        "local",
        config,
        checkpoint_bytes=safetensors.weight_bytes_from_dtype_elements(dtypes),
        checkpoint_dtypes=dtypes,
        notes=("weights from the local safetensors headers",),
        catalog_name=name,
    )


def _hub(repo_id: str, revision: str | None, suggestions: list[str], progress: Progress) -> ResolvedModel:
    # start-up: the Hub client (and huggingface_hub behind it) loads only for Hub ids
    from gpusize.sources import hub

    with progress(f"Fetching {repo_id} config.json from the Hub"):
        try:
            model = hub.load_hub_model(repo_id, revision)
        except Exception as exc:
            if suggestions and "no such model" in str(exc):
                exc.args = (f"{exc.args[0]}; catalog names close to it: {', '.join(suggestions)}",)
            raise
    checkpoint = (
        safetensors.weight_bytes_from_dtype_elements(model.dtype_elements) if model.dtype_elements else None
    )
    return ResolvedModel(
        repo_id, "hub", model.config, model.revision, checkpoint, model.dtype_elements, model.notes
    )
