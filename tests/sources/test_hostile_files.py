"""Hostile model files: GGUF headers and local safetensors headers that are truncated, inconsistent,
of the wrong types or absurdly large. Each must give exit 2 with one line naming the file (or the
field), quickly and in little memory, never an internal error, a hang or a wrong answer."""

from __future__ import annotations

import json
import struct
import time
from pathlib import Path

import pytest
from gguf import GGMLQuantizationType as T
from gguf import GGUFValueType as V

from gpusize.errors import ConfigError
from gpusize.sources.gguf import read_gguf
from gpusize.sources.safetensors import read_dtype_elements, weight_files
from tests.gguf_files import llama31_8b_q4_k_m, tiny_tensors, write_tiny
from tests.helpers import CliResult, negative_numbers, run_in_process
from tests.hub_server import safetensors_bytes

ESC = "\x1b]0;pwned\x07\x1b[2J"


def fit(path: Path, *extra: str) -> CliResult:
    started = time.monotonic()
    r = run_in_process("fit", str(path), "--gpu", "L4", "--ctx", "2k", "--json", *extra)
    assert time.monotonic() - started < 10
    return r


def assert_one_line(r: CliResult, *fragments: str) -> None:
    assert r.code == 2, (r.code, r.stdout[:300], r.stderr[:600])
    assert r.stdout == "" and r.stderr.count("\n") == 1 and len(r.stderr) < 800, r.stderr[:800]
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr
    assert "\x1b" not in r.stderr
    for fragment in fragments:
        assert fragment in r.stderr, r.stderr


# --------------------------------------------------------------------------- GGUF


def test_tiny_gguf_is_read_exactly(tmp_path: Path) -> None:
    r = fit(write_tiny(tmp_path / "tiny.gguf"))
    assert r.code == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["model"]["checkpoint_bytes"] == 90_368 and negative_numbers(data) == []


@pytest.mark.parametrize("keep", [4, 16, 24, 200, 2_000, 5_000, 30_000])
def test_truncated_gguf_is_one_line(tmp_path: Path, keep: int) -> None:
    path = write_tiny(tmp_path / "m.gguf")
    path.write_bytes(path.read_bytes()[:keep])
    assert_one_line(fit(path), str(path))


def _patch(path: Path, offset: int, fmt: str, value: int) -> Path:
    raw = bytearray(path.read_bytes())
    struct.pack_into(fmt, raw, offset, value)
    path.write_bytes(bytes(raw))
    return path


@pytest.mark.parametrize(
    "offset, fmt, value, fragment",
    [
        (0, "<I", 0x46554747 + 1, "not a GGUF file"),
        (4, "<I", 99, "version 99"),
        (8, "<Q", 1 << 62, "tensors"),
        (16, "<Q", 1 << 62, "metadata"),
        (24, "<Q", 1 << 62, "bytes long"),  # the first key's length
    ],
    ids=["magic", "version", "tensor-count-2^62", "kv-count-2^62", "key-length-2^62"],
)
def test_absurd_gguf_header_counts_are_refused_before_reading(
    tmp_path: Path, offset: int, fmt: str, value: int, fragment: str
) -> None:
    path = _patch(write_tiny(tmp_path / "m.gguf"), offset, fmt, value)
    assert_one_line(fit(path), fragment)


@pytest.mark.parametrize(
    "meta, drop, fragment",
    [
        ({"llama.embedding_length": ([64, 64], V.ARRAY)}, (), "llama.embedding_length"),
        ({"llama.embedding_length": (256.7, V.FLOAT32)}, (), "llama.embedding_length"),
        ({"llama.embedding_length": (0, V.UINT32)}, (), "llama.embedding_length"),
        ({"llama.block_count": ("two", V.STRING)}, (), "llama.block_count"),
        ({"llama.block_count": (1_000_000_000, V.UINT32)}, (), "llama.block_count"),
        ({"llama.attention.head_count": ([4, 4], V.ARRAY)}, (), "llama.attention.head_count"),
        ({"llama.attention.head_count_kv": (-2, V.INT32)}, (), "llama.attention.head_count_kv"),
        ({"llama.context_length": (float("nan"), V.FLOAT32)}, (), "llama.context_length"),
        ({"llama.expert_count": (8, V.UINT32)}, (), "llama.expert_used_count"),
        (
            {"llama.expert_count": (8, V.UINT32), "llama.expert_used_count": (9, V.UINT32)},
            (),
            "expert",
        ),
        ({"general.architecture": (f"llama{ESC}", V.STRING)}, (), "not supported"),
        ({}, ("llama.block_count",), "llama.block_count"),
        ({"tokenizer.ggml.tokens": ("abc", V.STRING)}, (), "tokenizer.ggml.tokens"),
    ],
    ids=[
        "array-width",
        "float-width",
        "zero-width",
        "string-blocks",
        "billion-blocks",
        "array-heads",
        "negative-kv-heads",
        "nan-context",
        "experts-without-used",
        "used-above-experts",
        "escape-architecture",
        "no-block-count",
        "string-tokens",
    ],
)
def test_bad_gguf_metadata_names_the_key(
    tmp_path: Path, meta: dict[str, tuple[object, V]], drop: tuple[str, ...], fragment: str
) -> None:
    path = write_tiny(tmp_path / "m.gguf", meta, drop)
    assert_one_line(fit(path), fragment)


@pytest.mark.parametrize(
    "tensors, fragment",
    [
        ([*tiny_tensors(), ("blk.1000000000.attn_q.weight", [64, 64], T.F16)], "blk.1000000000"),
        ([*tiny_tensors(), ("blk.2.attn_q.weight", [64, 64], T.F16)], "blk.2"),
    ],
    ids=["block-1e9", "block-past-count"],
)
def test_tensor_of_a_block_beyond_block_count_is_refused(
    tmp_path: Path, tensors: list[tuple[str, list[int], T]], fragment: str
) -> None:
    path = write_tiny(tmp_path / "m.gguf", tensors=tensors)
    assert_one_line(fit(path), fragment)


def test_tensor_data_past_the_end_of_the_file_is_refused(tmp_path: Path) -> None:
    path = write_tiny(tmp_path / "m.gguf")
    size = path.stat().st_size
    path.write_bytes(path.read_bytes()[: size - 4096])
    assert_one_line(fit(path), "end of the file")


def test_reader_refuses_without_the_cli(tmp_path: Path) -> None:
    path = _patch(write_tiny(tmp_path / "m.gguf"), 8, "<Q", 1 << 62)
    with pytest.raises(ConfigError, match="tensors"):
        read_gguf(path)


def test_gguf_weights_are_the_file_and_give_no_warning(tmp_path: Path) -> None:
    """A Q4_K_M file stores 4.58 GiB where the bf16 config arithmetic gives 15 GiB: that is what a
    quantized file is, not a disagreement to warn about on every run."""
    path = tmp_path / "llama-3.1-8b-q4_k_m.gguf"
    stored = llama31_8b_q4_k_m(path)
    r = run_in_process("fit", str(path), "--gpu", "L4", "--json")
    assert r.code == 0, r.stderr
    assert r.stderr == ""
    data = json.loads(r.stdout)
    assert data["model"]["checkpoint_bytes"] == stored
    assert not any("vs the config arithmetic" in n for n in data["assumptions"]["notes"])
    # on the GPU: every tensor but the token embedding, which llama.cpp keeps in host memory
    assert 0.9 * stored < data["plan"]["per_gpu"]["weights_bytes"] < stored


# --------------------------------------------------------------------------- local safetensors


def _write_header(path: Path, header: dict[str, object]) -> Path:
    raw = json.dumps(header).encode()
    path.write_bytes(len(raw).to_bytes(8, "little") + raw)
    return path


@pytest.mark.parametrize(
    "shape, fragment",
    [
        ([-1, 4], "shape"),
        ([1 << 62, 1 << 62], "shape"),
        ([4.5], "shape"),
        ([True], "shape"),
        (list(range(1, 40)), "shape"),
    ],
    ids=["negative", "huge", "float", "bool", "39-dims"],
)
def test_local_safetensors_shapes_are_validated(tmp_path: Path, shape: list[object], fragment: str) -> None:
    _write_header(
        tmp_path / "model.safetensors", {"w": {"dtype": "BF16", "shape": shape, "data_offsets": [0, 2]}}
    )
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "llama"}))
    with pytest.raises(ConfigError, match=fragment):
        read_dtype_elements(tmp_path)


def test_local_index_with_200000_shards_is_refused_at_once(tmp_path: Path) -> None:
    weight_map = {f"w{i}": f"model-{i:06d}-of-200000.safetensors" for i in range(200_000)}
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))
    started = time.monotonic()
    with pytest.raises(ConfigError, match="200,000"):
        weight_files(tmp_path)
    assert time.monotonic() - started < 5


def test_shard_name_claiming_a_billion_shards_is_refused_at_once(tmp_path: Path) -> None:
    (tmp_path / "model-00001-of-999999999999.safetensors").write_bytes(
        safetensors_bytes({"w": ("BF16", [2])})
    )
    started = time.monotonic()
    with pytest.raises(ConfigError, match="shards"):
        weight_files(tmp_path)
    assert time.monotonic() - started < 5


def test_local_folder_with_negative_shape_exits_2(tmp_path: Path) -> None:
    from gpusize.sources.catalog import find_model

    (tmp_path / "config.json").write_text(json.dumps(find_model("Qwen3-0.6B").config))
    _write_header(
        tmp_path / "model.safetensors", {"w": {"dtype": "BF16", "shape": [-(10**15)], "data_offsets": [0, 2]}}
    )
    assert_one_line(run_in_process("fit", str(tmp_path), "--gpu", "L4", "--json"), "shape")
