"""The GGUF tensor table is read without an object per tensor, after the metadata is checked: a file
listing 100,000 tensors and no vocabulary is refused at the cost of a small one, and the figures
read are those of `gguf.GGUFReader`, tensor for tensor."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import gguf
import pytest
from gguf import GGMLQuantizationType as T

from gpusize.errors import ConfigError
from gpusize.sources.gguf import read_gguf
from tests.conftest import ROOT
from tests.gguf_files import llama31_8b_q4_k_m, tiny_tensors, write_many_tensors, write_tiny

#: Peak resident memory a refused GGUF may cost the process: a cold `fit` takes about 35-50 MiB;
#: building a gguf.GGUFReader over 100,000 tensors took 532 MiB.
MAX_PEAK_MIB = 256

PEAK = """
import runpy, sys
sys.argv = ["gpusize", "fit", sys.argv[1], "--gpu", "H100"]
try:
    runpy.run_module("gpusize", run_name="__main__")
finally:
    hwm = next(line for line in open("/proc/self/status") if line.startswith("VmHWM"))
    print("peak-kib", hwm.split()[1], file=sys.stderr)
"""


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="VmHWM is read from Linux /proc")
def test_100000_tensors_without_vocabulary_are_refused_cheaply(tmp_path: Path) -> None:
    path = write_many_tensors(tmp_path / "many.gguf", 100_000, vocabulary=False)
    r = subprocess.run(
        [sys.executable, "-c", PEAK, str(path)], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    *lines, peak = r.stderr.strip().splitlines()
    assert r.returncode == 2 and r.stdout == "", r.stderr
    assert lines == [
        f"gpusize: error: {path}: GGUF metadata: no vocabulary (tokenizer.ggml.tokens or token_embd.weight)"
    ]
    assert int(peak.split()[1]) < MAX_PEAK_MIB * 1024, peak


def _no_reader(*_args: object, **_kwargs: object) -> None:
    raise AssertionError("gguf.GGUFReader builds an object and a numpy view per tensor")


def test_the_table_is_summed_without_gguf_reader(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write_many_tensors(tmp_path / "many.gguf", 20_000)
    monkeypatch.setattr(gguf, "GGUFReader", _no_reader)
    model = read_gguf(path)
    assert model.other_bytes == 20_000 * 32 * 4 and model.layer_bytes == ()
    assert model.config["vocab_size"] == 256


def test_metadata_is_checked_before_the_table_is_read(tmp_path: Path) -> None:
    path = write_tiny(tmp_path / "m.gguf", drop=("llama.block_count",), tensors=tiny_tensors(blocks=500))
    raw = path.read_bytes()
    path.write_bytes(raw[: raw.index(b"blk.450.")])  # the table is cut short after 450 blocks
    with pytest.raises(ConfigError, match="missing 'llama.block_count'"):
        read_gguf(path)


def test_tensor_listed_twice_is_refused(tmp_path: Path) -> None:
    path = write_tiny(tmp_path / "m.gguf", tensors=[*tiny_tensors(), ("token_embd.weighX", [64, 256], T.F16)])
    path.write_bytes(
        path.read_bytes().replace(b"token_embd.weighX", b"token_embd.weight")
    )  # gguf's writer refuses
    with pytest.raises(ConfigError, match="'token_embd.weight' is listed twice"):
        read_gguf(path)


@pytest.mark.parametrize("build", ["tiny", "llama-3.1-8b-q4_k_m"])
def test_figures_match_gguf_reader_tensor_for_tensor(tmp_path: Path, build: str) -> None:
    path = tmp_path / f"{build}.gguf"
    if build == "tiny":
        write_tiny(path)
    else:
        llama31_8b_q4_k_m(path)
    model = read_gguf(path)
    reader = gguf.GGUFReader(str(path), "r")
    by_type: dict[str, int] = {}
    for tensor in reader.tensors:
        by_type[tensor.tensor_type.name] = by_type.get(tensor.tensor_type.name, 0) + int(tensor.n_bytes)
    assert model.bytes_by_type == by_type
    assert model.tensor_bytes == sum(int(t.n_bytes) for t in reader.tensors)
    blocks = [
        sum(int(t.n_bytes) for t in reader.tensors if t.name.startswith(f"blk.{i}.")) for i in range(32)
    ]
    assert list(model.layer_bytes) == [b for b in blocks if b] or not model.layer_bytes
    embd = next(t for t in reader.tensors if t.name == "token_embd.weight")
    assert model.config["vocab_size"] == int(embd.shape[-1])
    assert model.file_type == gguf.LlamaFileType(
        reader.fields["general.file_type"].contents()
    ).name.removeprefix("MOSTLY_")
