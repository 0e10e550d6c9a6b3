"""gpusize.safetensors_local: dtype counts from real safetensors files the tests write (zeroed data)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from gpusize.errors import ConfigError
from gpusize.sources.safetensors import (
    read_dtype_elements,
    read_header,
    weight_bytes_from_dtype_elements,
    weight_files,
)
from tests.hub_server import safetensors_bytes

DENSE = {
    "model.embed_tokens.weight": ("BF16", [1000, 64]),
    "model.layers.0.self_attn.q_proj.weight": ("F8_E4M3", [64, 64]),
    "model.layers.0.self_attn.q_proj.weight_scale": ("F32", [64, 1]),
    "model.norm.weight": ("F16", [64]),
    "rotary.inv_freq": ("F32", [32]),
    "step": ("I64", []),  # scalar: one element
    "mask": ("BOOL", [8, 8]),
    "experts.gate_up_proj_blocks": ("U8", [4, 16, 8]),  # MXFP4 blocks: elements are bytes
}


def write(path: Path, tensors: dict[str, tuple[str, list[int]]], **metadata: str) -> Path:
    path.write_bytes(safetensors_bytes(tensors, metadata or None))
    return path


def test_single_file_counts_every_dtype_exactly(tmp_path: Path) -> None:
    write(tmp_path / "model.safetensors", DENSE, format="pt")
    assert read_dtype_elements(tmp_path) == {
        "BF16": 64_000,
        "BOOL": 64,
        "F16": 64,
        "F32": 64 + 32,
        "F8_E4M3": 4096,
        "I64": 1,
        "U8": 512,
    }


def test_bytes_follow_the_safetensors_dtype_sizes(tmp_path: Path) -> None:
    file = write(tmp_path / "model.safetensors", DENSE)
    counts = read_dtype_elements(file)
    expected = 2 * 64_000 + 1 * 64 + 2 * 64 + 4 * 96 + 1 * 4096 + 8 * 1 + 1 * 512
    assert weight_bytes_from_dtype_elements(counts) == expected
    header_bytes = 8 + int.from_bytes(file.read_bytes()[:8], "little")
    assert expected == file.stat().st_size - header_bytes  # the data section, byte for byte


@pytest.mark.parametrize(
    ("counts", "expected"),
    [
        ({"F64": 3, "I64": 1, "U64": 1, "C64": 1}, 48),
        ({"F32": 5, "I32": 1, "U32": 1}, 28),
        ({"BF16": 3, "F16": 1, "I16": 1, "U16": 1}, 12),
        ({"F8_E4M3": 7, "F8_E5M2": 1, "F8_E8M0": 1, "I8": 1, "U8": 1, "BOOL": 1}, 12),
        ({"F4": 6}, 3),  # two per byte
        ({"F6_E2M3": 4, "F6_E3M2": 4}, 6),  # 6 bits each
        ({}, 0),
    ],
)
def test_weight_bytes_per_dtype(counts: dict[str, int], expected: int) -> None:
    assert weight_bytes_from_dtype_elements(counts) == expected


def test_unknown_dtype_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="unknown safetensors dtype 'Q4_K'"):
        weight_bytes_from_dtype_elements({"Q4_K": 10})


def test_metadata_is_skipped_and_kept_in_the_header(tmp_path: Path) -> None:
    file = write(tmp_path / "model.safetensors", {"w": ("BF16", [2, 3])}, format="pt", quant="fp8")
    assert read_header(file)["__metadata__"] == {"format": "pt", "quant": "fp8"}
    assert read_dtype_elements(file) == {"BF16": 6}


def test_sharded_checkpoint_counts_only_the_indexed_shards(tmp_path: Path) -> None:
    write(tmp_path / "model-00001-of-00002.safetensors", {"a": ("F8_E4M3", [128, 64]), "s": ("F32", [])})
    write(tmp_path / "model-00002-of-00002.safetensors", {"b": ("BF16", [10, 10])})
    write(tmp_path / "consolidated.safetensors", {"a": ("F8_E4M3", [128, 64]), "b": ("BF16", [10, 10])})
    shards = {"a": "model-00001-of-00002.safetensors", "s": "model-00001-of-00002.safetensors"}
    index = {"metadata": {}, "weight_map": {**shards, "b": "model-00002-of-00002.safetensors"}}
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(index))
    assert [f.name for f in weight_files(tmp_path)] == [
        "model-00001-of-00002.safetensors",
        "model-00002-of-00002.safetensors",
    ]
    assert read_dtype_elements(tmp_path) == {"BF16": 100, "F32": 1, "F8_E4M3": 8192}


SHARD_1, SHARD_2 = "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"


def _two_shards_declaring_one_tensor(folder: Path) -> None:
    write(folder / SHARD_1, {"embed": ("BF16", [1000, 64]), "a": ("BF16", [8])})
    write(folder / SHARD_2, {"embed": ("BF16", [1000, 64]), "b": ("F32", [4])})


def test_tensor_in_two_shards_counts_once_from_the_shard_the_index_names(tmp_path: Path) -> None:
    _two_shards_declaring_one_tensor(tmp_path)
    index = {"weight_map": {"embed": SHARD_2, "a": SHARD_1, "b": SHARD_2}}
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(index))
    assert read_dtype_elements(tmp_path) == {"BF16": 64_000 + 8, "F32": 4}


@pytest.mark.parametrize(
    "index", [None, {"weight_map": {"embed": "other.safetensors", "a": SHARD_1, "b": SHARD_2}}]
)
def test_tensor_in_two_shards_without_an_index_saying_which_is_refused(
    tmp_path: Path, index: dict[str, object] | None
) -> None:
    _two_shards_declaring_one_tensor(tmp_path)
    if index is not None:
        (tmp_path / "model.safetensors.index.json").write_text(json.dumps(index))
        write(tmp_path / "other.safetensors", {})
    with pytest.raises(ConfigError, match=f"tensor 'embed' is declared by both '{SHARD_1}' and '{SHARD_2}'"):
        read_dtype_elements(tmp_path)


def test_folder_without_index_counts_every_safetensors_file(tmp_path: Path) -> None:
    write(tmp_path / "consolidated.safetensors", {"a": ("BF16", [4])})
    write(tmp_path / "extra.safetensors", {"b": ("BF16", [6])})
    (tmp_path / "config.json").write_text("{}")
    assert read_dtype_elements(tmp_path) == {"BF16": 10}


def test_missing_shard_without_index_is_a_config_error(tmp_path: Path) -> None:
    for i in (1, 3):
        write(tmp_path / f"model-{i:05d}-of-00003.safetensors", {"w": ("BF16", [4])})
    with pytest.raises(ConfigError, match="shard 2 of 3 of model is missing"):
        read_dtype_elements(tmp_path)


def test_folder_without_safetensors_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no \\*.safetensors files"):
        read_dtype_elements(tmp_path)


def test_reading_never_changes_the_file_nor_reads_the_data(tmp_path: Path) -> None:
    file = write(tmp_path / "model.safetensors", {"w": ("F32", [256, 256])})
    before, stat = file.read_bytes(), file.stat()
    read_dtype_elements(tmp_path)
    assert file.read_bytes() == before
    assert (file.stat().st_mtime_ns, file.stat().st_size) == (stat.st_mtime_ns, stat.st_size)
    # A file whose data section is truncated still reads: only the header is needed.
    header_end = 8 + int.from_bytes(before[:8], "little")
    (tmp_path / "model.safetensors").write_bytes(before[:header_end])
    assert read_dtype_elements(tmp_path) == {"F32": 65536}


def test_read_only_file_is_read(tmp_path: Path) -> None:
    file = write(tmp_path / "model.safetensors", {"w": ("BF16", [3])})
    file.chmod(0o444)
    try:
        assert read_dtype_elements(file) == {"BF16": 3}
    finally:
        file.chmod(0o644)


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (b"\x01\x02", "shorter than its 8-byte header length"),
        ((10**12).to_bytes(8, "little") + b"{}", "length 1000000000000 is out of range"),
        ((64).to_bytes(8, "little") + b"{}", "length 64 is out of range"),
        ((8).to_bytes(8, "little") + b"not json", "not JSON"),
        ((4).to_bytes(8, "little") + b"\xff\xfe{}", "not JSON"),
        ((2).to_bytes(8, "little") + b"[]", "expected a JSON object"),
    ],
    ids=["truncated", "huge-length", "length-past-end", "not-json", "not-utf8", "not-an-object"],
)
def test_corrupt_header_is_a_config_error_naming_the_file(
    tmp_path: Path, content: bytes, problem: str
) -> None:
    file = tmp_path / "model-00003-of-00009.safetensors"
    file.write_bytes(content)
    with pytest.raises(ConfigError) as info:
        read_dtype_elements(file)
    assert str(file) in str(info.value) and problem in str(info.value)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("tensor", "problem"),
    [
        ({"dtype": "Q4_K", "shape": [2], "data_offsets": [0, 1]}, "unknown dtype 'Q4_K'"),
        ({"dtype": ["BF16"], "shape": [2], "data_offsets": [0, 4]}, "unknown dtype ['BF16']"),
        ({"dtype": "BF16", "shape": [-1], "data_offsets": [0, 4]}, "shape must be a list"),
        ({"dtype": "BF16", "shape": "2x2", "data_offsets": [0, 8]}, "shape must be a list"),
        ("BF16", "unknown dtype None"),
    ],
)
def test_bad_tensor_entry_is_a_config_error(tmp_path: Path, tensor: object, problem: str) -> None:
    raw = json.dumps({"w": tensor}).encode()
    file = tmp_path / "model.safetensors"
    file.write_bytes(len(raw).to_bytes(8, "little") + raw)
    with pytest.raises(ConfigError, match="tensor 'w'") as info:
        read_dtype_elements(tmp_path)
    assert str(file) in str(info.value) and problem in str(info.value)


def test_broken_index_is_a_config_error(tmp_path: Path) -> None:
    (tmp_path / "model.safetensors.index.json").write_text('{"metadata": {}}')
    with pytest.raises(ConfigError, match="not a safetensors index"):
        read_dtype_elements(tmp_path)


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root reads any file")
def test_unreadable_file_is_a_config_error(tmp_path: Path) -> None:
    file = write(tmp_path / "model.safetensors", {"w": ("BF16", [3])})
    file.chmod(0o000)
    try:
        with pytest.raises(ConfigError, match="cannot read"):
            read_dtype_elements(file)
    finally:
        file.chmod(0o644)
