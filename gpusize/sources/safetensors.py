"""Dtype element counts from the headers of local `*.safetensors` files; the tensor data is never read.

A safetensors file is an 8-byte little-endian unsigned header length N, then N bytes of UTF-8 JSON
`{tensor_name: {"dtype", "shape", "data_offsets"}, "__metadata__": {...}}`, then the raw tensor bytes
(https://huggingface.co/docs/safetensors/index#format). Files are opened read-only; only the first
8 + N bytes are read.

Each tensor is counted once. A tensor that two shards both declare is counted from the shard the
index (`model.safetensors.index.json` `weight_map`) maps it to, the one Transformers loads it from;
declared twice with no index, or in two shards neither of which the index names for it, it is
refused (a ConfigError naming the tensor and both files) rather than counted twice or guessed.
"""

from __future__ import annotations

import json
import math
import re
import struct
from pathlib import Path
from typing import Any

from gpusize.core.fields import echo
from gpusize.errors import ConfigError

__all__ = [
    "DTYPE_BITS",
    "INDEX_FILE",
    "MAX_ELEMENTS",
    "MAX_HEADER_BYTES",
    "MAX_INDEX_BYTES",
    "MAX_SHARDS",
    "SINGLE_FILE",
    "TensorTally",
    "checkpoint_files",
    "header_length",
    "parse_header",
    "read_dtype_elements",
    "read_header",
    "shard_names",
    "weight_map",
    "tensor_dtype_elements",
    "weight_bytes_from_dtype_elements",
    "weight_files",
]

#: Bits per element of every safetensors dtype (huggingface/safetensors, src/tensor.rs `Dtype::bitsize`).
#: Packed formats stored as bytes (MXFP4 blocks as U8) are counted in bytes already.
DTYPE_BITS: dict[str, int] = {
    "BOOL": 8,
    "F4": 4,
    "F6_E2M3": 6,
    "F6_E3M2": 6,
    "U8": 8,
    "I8": 8,
    "F8_E5M2": 8,
    "F8_E4M3": 8,
    "F8_E8M0": 8,
    "I16": 16,
    "U16": 16,
    "F16": 16,
    "BF16": 16,
    "I32": 32,
    "U32": 32,
    "F32": 32,
    "C64": 64,
    "I64": 64,
    "U64": 64,
    "F64": 64,
}

#: safetensors refuses headers above 100 MB (src/tensor.rs `MAX_HEADER_SIZE`); so do we.
MAX_HEADER_BYTES = 100_000_000
#: Most shard files a checkpoint may have: the largest public checkpoints have a few hundred
#: (DeepSeek-V3: 163, Qwen3-Coder-480B: 241); an index naming 200,000 would mean 200,000 reads.
MAX_SHARDS = 2048
#: Largest index file read (DeepSeek-V3's model.safetensors.index.json, ~92k tensors, is about 9 MB).
MAX_INDEX_BYTES = 64 * 1024 * 1024
#: Most dimensions and elements one tensor may have: far beyond any weight (an embedding of
#: 262,144 x 16,384 has 2^32 elements), so only nonsense is refused.
MAX_DIMS = 8
MAX_ELEMENTS = 1 << 40

SINGLE_FILE = "model.safetensors"
INDEX_FILE = "model.safetensors.index.json"
#: Transformers' shard names: `model-00001-of-00004.safetensors`.
SHARD_NAME = re.compile(r"(?P<stem>.+)-(?P<index>\d{1,12})-of-(?P<total>\d{1,12})\.safetensors")


def weight_bytes_from_dtype_elements(dtype_elements: dict[str, int]) -> int:
    """Checkpoint bytes: sum over dtypes of elements x bits / 8 (rounded up for sub-byte dtypes)."""
    total_bits = 0
    for dtype, elements in dtype_elements.items():
        if dtype not in DTYPE_BITS:
            raise ConfigError(f"unknown safetensors dtype '{dtype}'")
        total_bits += elements * DTYPE_BITS[dtype]
    return (total_bits + 7) // 8


def weight_files(folder: Path) -> list[Path]:
    """The files that make up the checkpoint, chosen as Transformers loads them: `model.safetensors`,
    else the shards named by `model.safetensors.index.json`, else every `*.safetensors` in the folder
    (so a Mistral repo's extra `consolidated.safetensors` is not counted twice)."""
    return checkpoint_files(folder)[0]


def checkpoint_files(folder: Path) -> tuple[list[Path], dict[str, str] | None]:
    """`weight_files(folder)` and the index's tensor -> shard map when an index chose them."""
    if (folder / SINGLE_FILE).is_file():
        return [folder / SINGLE_FILE], None
    index = folder / INDEX_FILE
    if index.is_file():
        mapping = weight_map(_read_index(index), str(index))
        return [folder / name for name in shard_names(mapping, str(index))], mapping
    files = sorted(folder.glob("*.safetensors"))
    if len(files) > MAX_SHARDS:
        raise ConfigError(f"{folder}: {len(files):,} safetensors files, more than {MAX_SHARDS:,} shards")
    _check_shards_complete(folder, files)
    return files, None


def _read_index(index: Path) -> Any:
    try:
        with index.open("rb") as handle:
            raw = handle.read(MAX_INDEX_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"{index}: cannot read ({exc.strerror or exc})") from None
    if len(raw) > MAX_INDEX_BYTES:
        raise ConfigError(f"{index}: larger than {MAX_INDEX_BYTES >> 20} MiB, too large to be an index")
    try:
        return json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise ConfigError(f"{index}: not a safetensors index ({type(exc).__name__})") from None


def weight_map(index: Any, where: str) -> dict[str, str]:
    """The tensor -> shard file name map of a `model.safetensors.index.json`, checked to be one."""
    mapping = index.get("weight_map") if isinstance(index, dict) else None
    if not isinstance(mapping, dict) or not all(isinstance(v, str) for v in mapping.values()):
        raise ConfigError(f"{where}: not a safetensors index (no weight_map of tensor -> file name)")
    return mapping


def shard_names(mapping: dict[str, str], where: str) -> list[str]:
    """The shard file names a checked `weight_map` maps its tensors to, checked: plain file names (no
    folders), at most MAX_SHARDS of them."""
    names = sorted(set(mapping.values()))
    if len(names) > MAX_SHARDS:
        raise ConfigError(f"{where}: names {len(names):,} shard files, more than {MAX_SHARDS:,}")
    for name in names:
        if not name or "/" in name or "\\" in name or name in (".", "..") or len(name) > 255:
            raise ConfigError(f"{where}: shard name {echo(name)} is not a plain file name")
    return names


def _check_shards_complete(folder: Path, files: list[Path]) -> None:
    """Shards named `<stem>-00002-of-00004.safetensors` must all be there, or the count is short."""
    names = {file.name for file in files}
    for name in sorted(names):
        match = SHARD_NAME.fullmatch(name)
        if match is None:
            continue
        stem, width, total = match["stem"], len(match["total"]), int(match["total"])
        if total > MAX_SHARDS:
            raise ConfigError(f"{folder}: {name} claims {total:,} shards, more than {MAX_SHARDS:,}")
        for i in range(1, total + 1):
            if f"{stem}-{i:0{width}d}-of-{match['total']}.safetensors" not in names:
                raise ConfigError(f"{folder}: shard {i} of {total} of {stem} is missing")


def read_dtype_elements(path: Path) -> dict[str, int]:
    """Element count per safetensors dtype over every tensor of a checkpoint folder (or of one file),
    each tensor counted once (see TensorTally)."""
    files, mapping = ([path], None) if path.is_file() else checkpoint_files(path)
    if not files:
        raise ConfigError(f"{path}: no *.safetensors files in this folder")
    tally = TensorTally(str(path), mapping)
    for file in files:
        for name, tensor in read_header(file).items():
            if name != "__metadata__":
                tally.add(file.name, str(file), name, tensor)
    return tally.counts()


class TensorTally:
    """Element count per dtype over the headers of a checkpoint's files, each tensor counted once: a
    tensor two files declare counts from the file the index's `weight_map` names for it, and is
    refused (ConfigError naming it and both files) with no index or an index naming neither file."""

    def __init__(self, where: str, mapping: dict[str, str] | None) -> None:
        self.where, self.mapping = where, mapping or {}
        self.seen: dict[str, tuple[str, str, int]] = {}  # tensor -> (file, dtype, elements)

    def add(self, file: str, where: str, name: str, tensor: Any) -> None:
        """One header entry of `file` (`where` names it in messages), checked by tensor_dtype_elements."""
        dtype, elements = tensor_dtype_elements(where, name, tensor)
        first = self.seen.get(name)
        mapped = self.mapping.get(name)
        if first is None or mapped == file:
            self.seen[name] = (file, dtype, elements)
        elif mapped != first[0]:
            why = f"the index maps it to {echo(mapped)}" if mapped else "no index says which one is loaded"
            raise ConfigError(
                f"{self.where}: tensor {echo(name)} is declared by both {echo(first[0])} and {echo(file)} "
                f"({why}): counting it twice would double its bytes"
            )

    def counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for _file, dtype, elements in self.seen.values():
            counts[dtype] = counts.get(dtype, 0) + elements
        return dict(sorted(counts.items()))


def read_header(file: Path) -> dict[str, Any]:
    """The JSON header of one safetensors file (its `__metadata__` included), read and checked."""
    try:
        with file.open("rb") as handle:
            prefix = handle.read(8)
            length = header_length(prefix, str(file))
            if length > file.stat().st_size - 8:
                raise ConfigError(f"{file}: corrupt safetensors header (length {length} is out of range)")
            raw = handle.read(length)
    except OSError as exc:
        raise ConfigError(f"{file}: cannot read ({exc.strerror})") from None
    return parse_header(raw, str(file))


def header_length(prefix: bytes, where: str) -> int:
    """The header length stated by a file's first 8 bytes (little-endian u64), at most MAX_HEADER_BYTES."""
    if len(prefix) < 8:
        raise ConfigError(f"{where}: not a safetensors file (shorter than its 8-byte header length)")
    (length,) = struct.unpack("<Q", prefix[:8])
    if length > MAX_HEADER_BYTES:
        raise ConfigError(f"{where}: corrupt safetensors header (length {length} is out of range)")
    return int(length)


def parse_header(raw: bytes, where: str) -> dict[str, Any]:
    """A header's JSON text as a dict (not yet checked entry by entry: see tensor_dtype_elements)."""
    try:
        header = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        problem = str(exc).splitlines()[0][:120] if str(exc) else type(exc).__name__
        raise ConfigError(f"{where}: corrupt safetensors header (not JSON: {problem})") from None
    if not isinstance(header, dict):
        raise ConfigError(f"{where}: corrupt safetensors header (expected a JSON object)")
    return header


def tensor_dtype_elements(where: str, name: str, tensor: Any) -> tuple[str, int]:
    """(dtype, element count) of one header entry, checked like a config field: a known dtype, at most
    MAX_DIMS whole non-negative dimensions, at most MAX_ELEMENTS elements. Local and remote headers
    both go through here."""
    dtype = tensor.get("dtype") if isinstance(tensor, dict) else None
    shape = tensor.get("shape") if isinstance(tensor, dict) else None
    shown = echo(name)
    if not isinstance(dtype, str) or dtype not in DTYPE_BITS:
        raise ConfigError(f"{where}: tensor {shown}: unknown dtype {echo(dtype)}")
    if (
        not isinstance(shape, list)
        or len(shape) > MAX_DIMS
        or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape)
    ):
        raise ConfigError(
            f"{where}: tensor {shown}: shape must be a list of at most {MAX_DIMS} non-negative integers, "
            f"got {echo(shape)}"
        )
    elements = math.prod(shape)
    if elements > MAX_ELEMENTS:
        raise ConfigError(f"{where}: tensor {shown}: shape {echo(shape)} holds more elements than any weight")
    return dtype, elements
