"""A bounded reader of a GGUF header: its metadata and its tensor table, never the tensor data.

`gguf.GGUFReader` believes the counts and lengths a file states (a tensor count of 2^62, a string
length beyond the end of the file or a truncated header makes it allocate gigabytes, loop for minutes
or fail with whatever numpy raises), and it builds a numpy view and an object for every tensor and
every metadata item: 100,000 tiny tensors in a 12 MB file cost it 8 CPU s and 532 MiB before anything
could be refused. This reader reads the header as the format defines it
(https://github.com/ggml-org/ggml/blob/master/docs/gguf.md: magic `GGUF`, version, tensor count,
metadata count, the key/value pairs, then one info per tensor: name, dimensions, type, offset) and
checks every count and length against the bytes the file really has:

- `open_gguf` reads the metadata into a dict of plain values (the tokenizer's arrays, and any array
  over MAX_DECODED_ITEMS items or string over MAX_DECODED_BYTES, are skipped and stand as `Unread`,
  which knows its length), so a caller checks the metadata before the tensor table is read;
- `GgufHeader.tensors()` then yields (name, dimensions, ggml type, bytes) one tensor at a time, keeping
  nothing per tensor but its name (to refuse a name given twice), and checks at the end that every
  tensor's data lies inside the file.

A failure is a one-line ConfigError naming the file.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO

from gpusize.dataclass import dataclass
from gpusize.errors import ConfigError

__all__ = ["GGUF_VERSIONS", "MAX_TENSORS", "GgufHeader", "TensorInfo", "Unread", "open_gguf"]

GGUF_MAGIC = b"GGUF"
#: Versions this walk knows (version 1 used 32-bit counts and is long obsolete).
GGUF_VERSIONS = (2, 3)
#: Most tensors a GGUF may list: DeepSeek-V3 / Kimi-K2 files hold about 1,100-1,900; 64x that.
MAX_TENSORS = 1 << 17
#: Most metadata keys (real files: a few dozen).
MAX_METADATA = 1 << 16
#: ggml's GGML_MAX_DIMS (ggml.h): a tensor has at most four dimensions.
GGML_MAX_DIMS = 4
#: Most elements one tensor may hold: 2^40 (a trillion), far above any real weight matrix.
MAX_ELEMENTS = 1 << 40
#: Default alignment of the tensor data (gguf.md, `general.alignment`).
DEFAULT_ALIGNMENT = 32
#: Longest metadata array decoded into values (per-layer head counts have a few hundred items); a
#: longer one is skipped and stands as `Unread`.
MAX_DECODED_ITEMS = 4096
#: Longest metadata string decoded (a license text or a chat template is a few kB).
MAX_DECODED_BYTES = 1 << 20
#: Metadata keys never decoded: the vocabulary's strings, scores, merges (only their count is used).
SKIPPED_PREFIX = "tokenizer.ggml."
#: struct format of each scalar metadata type (gguf.md `gguf_metadata_value_type`): 8 = string, 9 = array.
_SCALAR_FORMAT = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
_SCALAR_BYTES = {kind: struct.calcsize(fmt) for kind, fmt in _SCALAR_FORMAT.items()}
_STRING, _ARRAY = 8, 9

#: (name, dimensions, ggml type, bytes of its data) of one tensor.
TensorInfo = tuple[str, tuple[int, ...], int, int]
#: (elements per block, bytes per block) of a ggml type, or None for a type unknown to ggml.
QuantSizes = Callable[[int], "tuple[int, int] | None"]


@dataclass(frozen=True)
class Unread:
    """A metadata value left unread: an array of `count` items of GGUF type `item`, or a long string."""

    what: str
    count: int

    def __repr__(self) -> str:
        return f"<{self.what} of {self.count:,}>"


class _Walk:
    """A reader that knows how many bytes are left and refuses any length beyond them."""

    def __init__(self, handle: BinaryIO, size: int, where: str) -> None:
        self.handle, self.size, self.where, self.pos = handle, size, where, 0
        self.order = "<"  # little-endian; big-endian files (rare) are told apart by their version

    def fail(self, problem: str) -> ConfigError:
        return ConfigError(f"{self.where}: not a readable GGUF file ({problem})")

    def take(self, n: int, what: str) -> bytes:
        if n > self.size - self.pos:
            raise self.fail(f"{what} runs beyond the end of the file at byte {self.pos:,}: truncated?")
        raw = self.handle.read(n)
        if len(raw) != n:
            raise self.fail(f"{what} is cut short: truncated?")
        self.pos += n
        return raw

    def skip(self, n: int, what: str) -> None:
        if n > self.size - self.pos:
            raise self.fail(f"{what} runs beyond the end of the file at byte {self.pos:,}: truncated?")
        self.handle.seek(n, 1)
        self.pos += n

    def u32(self, what: str) -> int:
        value: int = struct.unpack(f"{self.order}I", self.take(4, what))[0]
        return value

    def u64(self, what: str) -> int:
        value: int = struct.unpack(f"{self.order}Q", self.take(8, what))[0]
        return value

    def string(self, what: str, keep: bool = False, longest: int | None = None) -> str:
        length = self.u64(f"the length of {what}")
        if longest is not None and length > longest:
            raise self.fail(f"{what} is {length:,} bytes long")
        if not keep:
            self.skip(length, what)
            return ""
        return self.take(length, what).decode("utf-8", errors="replace")


class GgufHeader:
    """The metadata of a GGUF file, read; its tensor table, read on demand by `tensors()`."""

    def __init__(self, walk: _Walk, quant_sizes: QuantSizes, n_tensors: int, alignment: int) -> None:
        self._walk, self._quant_sizes, self._n_tensors, self._alignment = (
            walk,
            quant_sizes,
            n_tensors,
            alignment,
        )
        self.metadata: dict[str, Any] = {}

    def tensors(self) -> Iterator[TensorInfo]:
        """Each tensor's (name, dimensions, type, bytes) in file order; ConfigError for a tensor that is
        malformed or named twice, or (once all are read) whose data runs past the end of the file."""
        walk, names = self._walk, set()
        last_end, last_name = 0, ""
        for _ in range(self._n_tensors):
            name, dims, kind, offset = _tensor_info(walk, self._quant_sizes)
            if name in names:
                raise walk.fail(f"tensor {name!r:.80} is listed twice")
            names.add(name)
            size = _tensor_bytes(walk, name, dims, kind, self._quant_sizes)
            if offset + size > last_end:
                last_end, last_name = offset + size, name
            yield name, dims, kind, size
        end = walk.pos + (-walk.pos % self._alignment) + last_end
        if end > walk.size:
            raise walk.fail(
                f"tensor {last_name!r:.80} ends at byte {end:,}, "
                f"beyond the end of the file ({walk.size:,} bytes)"
            )


@contextmanager
def open_gguf(path: Path, quant_sizes: QuantSizes) -> Iterator[GgufHeader]:
    """The header of `path` with its metadata read and checked; its tensors are read from the open
    file by `tensors()` inside the `with` block. ConfigError for anything the file does not hold."""
    where = str(path)
    try:
        size = path.stat().st_size
        with path.open("rb") as handle:
            yield _metadata(_Walk(handle, size, where), quant_sizes)
    except OSError as exc:
        raise ConfigError(f"{where}: cannot read ({exc.strerror or exc})") from None


def _metadata(walk: _Walk, quant_sizes: QuantSizes) -> GgufHeader:
    if walk.take(4, "the magic number") != GGUF_MAGIC:
        raise walk.fail("it does not start with GGUF: not a GGUF file")
    raw_version = walk.take(4, "the version")
    version = struct.unpack("<I", raw_version)[0]
    if version not in GGUF_VERSIONS and struct.unpack(">I", raw_version)[0] in GGUF_VERSIONS:
        walk.order, version = ">", struct.unpack(">I", raw_version)[0]
    if version not in GGUF_VERSIONS:
        raise walk.fail(f"version {version}; gpusize reads GGUF versions 2 and 3")
    n_tensors, n_kv = walk.u64("the tensor count"), walk.u64("the metadata count")
    # Each tensor info takes at least 24 bytes and each key/value pair at least 13: more than the file holds
    # is a lie, whatever the limit.
    if n_tensors > MAX_TENSORS or n_tensors * 24 > walk.size:
        raise walk.fail(f"it claims {n_tensors:,} tensors")
    if n_kv > MAX_METADATA or n_kv * 13 > walk.size:
        raise walk.fail(f"it claims {n_kv:,} metadata keys")
    metadata: dict[str, Any] = {}
    for _ in range(n_kv):
        key = walk.string("a metadata key", keep=True, longest=1 << 16)
        if key in metadata:
            raise walk.fail(f"metadata key {key!r:.80} is given twice")
        kind = walk.u32(f"the type of {key!r:.80}")
        skip = key.startswith(SKIPPED_PREFIX) and kind == _ARRAY
        metadata[key] = _value(walk, kind, key, depth=0, skip=skip)
    alignment = metadata.get("general.alignment", DEFAULT_ALIGNMENT)
    if type(alignment) is not int or alignment <= 0 or alignment & (alignment - 1):
        raise walk.fail(f"general.alignment {alignment!r:.40} is not a power of two")
    header = GgufHeader(walk, quant_sizes, n_tensors, alignment)
    header.metadata = {k: v for k, v in metadata.items() if v is not _UNDECODABLE}
    return header


#: A string that is not UTF-8: left out of the metadata, as gguf's reader leaves it out.
_UNDECODABLE = Unread("string that is not UTF-8", 0)


def _value(walk: _Walk, kind: int, key: str, depth: int, skip: bool = False) -> Any:
    """One metadata value: a number, a bool, a str, a list of them, or `Unread`."""
    shown = f"{key!r:.80}"
    if kind in _SCALAR_FORMAT:
        return struct.unpack(
            f"{walk.order}{_SCALAR_FORMAT[kind]}", walk.take(_SCALAR_BYTES[kind], f"the value of {shown}")
        )[0]
    if kind == _STRING:
        length = walk.u64(f"the length of the value of {shown}")
        if length > MAX_DECODED_BYTES:
            walk.skip(length, f"the value of {shown}")
            return Unread("string of bytes", length)
        try:
            return walk.take(length, f"the value of {shown}").decode("utf-8")
        except UnicodeDecodeError:
            return _UNDECODABLE
    if kind == _ARRAY and depth < 2:
        item, count = walk.u32(f"the item type of {shown}"), walk.u64(f"the length of {shown}")
        least = _SCALAR_BYTES.get(item, 8)
        if count * least > walk.size - walk.pos:
            raise walk.fail(f"{shown} claims {count:,} items, more than the file holds")
        if item in _SCALAR_FORMAT and (skip or count > MAX_DECODED_ITEMS):
            walk.skip(count * least, f"the items of {shown}")
        elif item in _SCALAR_FORMAT:
            return list(
                struct.unpack(
                    f"{walk.order}{count}{_SCALAR_FORMAT[item]}",
                    walk.take(count * least, f"the items of {shown}"),
                )
            )
        elif skip or count > MAX_DECODED_ITEMS:
            for _ in range(count):
                _value(walk, item, key, depth + 1, skip=True)
        else:
            return [_value(walk, item, key, depth + 1) for _ in range(count)]
        return Unread(f"array of GGUF type {item}", count)
    raise walk.fail(f"{shown} has unknown value type {kind}")


def _tensor_info(walk: _Walk, quant_sizes: QuantSizes) -> tuple[str, tuple[int, ...], int, int]:
    """(name, dimensions, type, offset into the data section) of the next tensor of the table."""
    name = walk.string("a tensor name", keep=True, longest=1 << 12)
    n_dims = walk.u32(f"the dimension count of {name!r:.80}")
    if n_dims > GGML_MAX_DIMS:
        raise walk.fail(f"tensor {name!r:.80} has {n_dims:,} dimensions; ggml allows {GGML_MAX_DIMS}")
    raw = walk.take(8 * n_dims + 12, f"the shape, type and offset of {name!r:.80}")
    *dims, kind, offset = struct.unpack(f"{walk.order}{n_dims}QIQ", raw)
    elements = 1
    for d in dims:
        elements *= d
    if elements > MAX_ELEMENTS:
        raise walk.fail(f"tensor {name!r:.80} claims {elements:,} elements")
    if quant_sizes(kind) is None:
        raise walk.fail(f"tensor {name!r:.80} has unknown ggml type {kind}")
    return name, tuple(dims), kind, offset


def _tensor_bytes(
    walk: _Walk,
    name: str,
    dims: tuple[int, ...],
    kind: int,
    quant_sizes: QuantSizes,
) -> int:
    block, type_size = quant_sizes(kind) or (1, 1)
    elements = 1
    for d in dims:
        elements *= d
    if block and elements % block:
        raise walk.fail(f"tensor {name!r:.80}: {elements:,} elements are not whole blocks of {block}")
    return elements // max(block, 1) * type_size
