"""A bounded walk over a GGUF header before anything else reads it.

`gguf.GGUFReader` believes the counts and lengths a file states: a tensor count of 2^62, a string
length beyond the end of the file or a truncated header makes it allocate gigabytes, loop for minutes
or fail with whatever numpy raises. This walk reads the header as the format defines it
(https://github.com/ggml-org/ggml/blob/master/docs/gguf.md: magic `GGUF`, version, tensor count,
metadata count, the key/value pairs, then one info per tensor: name, dimensions, type, offset) and
checks every count and length against the bytes the file really has, without decoding strings or
building arrays. Only a header that passes is handed to GGUFReader; a failure is a one-line
ConfigError naming the file.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from gpusize.errors import ConfigError

__all__ = ["GGUF_VERSIONS", "MAX_TENSORS", "TensorInfo", "check_header"]

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
#: Bytes of each scalar metadata type (gguf.md `gguf_metadata_value_type`): 8 = string, 9 = array.
_SCALAR_BYTES = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
_STRING, _ARRAY = 8, 9

#: (name, dimensions, ggml type, offset into the data section) of one tensor.
TensorInfo = tuple[str, tuple[int, ...], int, int]


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


def check_header(path: Path, quant_sizes: Callable[[int], tuple[int, int] | None]) -> list[TensorInfo]:
    """Walk the header of `path`; raise ConfigError unless every count, length and tensor fits in the
    file. `quant_sizes(type)` gives (elements per block, bytes per block) of a ggml type, or None."""
    where = str(path)
    try:
        size = path.stat().st_size
        with path.open("rb") as handle:
            walk = _Walk(handle, size, where)
            return _walk(walk, quant_sizes)
    except OSError as exc:
        raise ConfigError(f"{where}: cannot read ({exc.strerror or exc})") from None


def _walk(walk: _Walk, quant_sizes: Callable[[int], tuple[int, int] | None]) -> list[TensorInfo]:
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
    alignment = DEFAULT_ALIGNMENT
    for _ in range(n_kv):
        key = walk.string("a metadata key", keep=True, longest=1 << 16)
        kind = walk.u32(f"the type of {key!r}")
        if key == "general.alignment" and kind == 4:
            alignment = walk.u32("general.alignment")
            if alignment == 0 or alignment & (alignment - 1):
                raise walk.fail(f"general.alignment {alignment} is not a power of two")
            continue
        _skip_value(walk, kind, key, depth=0)
    infos = [_tensor_info(walk, quant_sizes) for _ in range(n_tensors)]
    data_start = walk.pos + (-walk.pos % alignment)
    for name, dims, kind, offset in infos:
        end = data_start + offset + _tensor_bytes(walk, name, dims, kind, quant_sizes)
        if end > walk.size:
            raise walk.fail(
                f"tensor {name!r:.80} ends at byte {end:,}, beyond the end of the file ({walk.size:,} bytes)"
            )
    return infos


def _skip_value(walk: _Walk, kind: int, key: str, depth: int) -> None:
    if kind in _SCALAR_BYTES:
        walk.skip(_SCALAR_BYTES[kind], f"the value of {key!r:.80}")
    elif kind == _STRING:
        walk.string(f"the value of {key!r:.80}")
    elif kind == _ARRAY and depth < 2:
        item, count = walk.u32(f"the item type of {key!r:.80}"), walk.u64(f"the length of {key!r:.80}")
        least = _SCALAR_BYTES.get(item, 8)
        if count * least > walk.size - walk.pos:
            raise walk.fail(f"{key!r:.80} claims {count:,} items, more than the file holds")
        if item in _SCALAR_BYTES:
            walk.skip(count * least, f"the items of {key!r:.80}")
        else:
            for _ in range(count):
                _skip_value(walk, item, key, depth + 1)
    else:
        raise walk.fail(f"{key!r:.80} has unknown value type {kind}")


def _tensor_info(walk: _Walk, quant_sizes: Callable[[int], tuple[int, int] | None]) -> TensorInfo:
    name = walk.string("a tensor name", keep=True, longest=1 << 12)
    n_dims = walk.u32(f"the dimension count of {name!r:.80}")
    if n_dims > GGML_MAX_DIMS:
        raise walk.fail(f"tensor {name!r:.80} has {n_dims:,} dimensions; ggml allows {GGML_MAX_DIMS}")
    dims = tuple(walk.u64(f"a dimension of {name!r:.80}") for _ in range(n_dims))
    kind = walk.u32(f"the type of {name!r:.80}")
    offset = walk.u64(f"the offset of {name!r:.80}")
    elements = 1
    for d in dims:
        elements *= d
    if elements > MAX_ELEMENTS:
        raise walk.fail(f"tensor {name!r:.80} claims {elements:,} elements")
    if quant_sizes(kind) is None:
        raise walk.fail(f"tensor {name!r:.80} has unknown ggml type {kind}")
    return name, dims, kind, offset


def _tensor_bytes(
    walk: _Walk,
    name: str,
    dims: tuple[int, ...],
    kind: int,
    quant_sizes: Callable[[int], tuple[int, int] | None],
) -> int:
    block, type_size = quant_sizes(kind) or (1, 1)
    elements = 1
    for d in dims:
        elements *= d
    if block and elements % block:
        raise walk.fail(f"tensor {name!r:.80}: {elements:,} elements are not whole blocks of {block}")
    return elements // max(block, 1) * type_size
