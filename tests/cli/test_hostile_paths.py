"""Paths and surroundings read exactly as given: a `~` that a shell would not expand stays a file name,
a HF_HOME that is a file or a HF_ENDPOINT with a control character is one line and exit 2, and a
quantization config that transformers refuses is refused. The Hub's variables are read when
huggingface_hub is imported, so those cases run a real process; the others run in this process
(tests.helpers.run_in_process, HOME and the working folder set for the call).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpusize.sources.catalog import find_model
from tests.conftest import ROOT
from tests.helpers import CliResult, run_in_process
from tests.hub_server import safetensors_bytes


def gpusize(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gpusize", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=60,
    )


def in_process(*args: str, cwd: Path, home: Path | None = None) -> CliResult:
    """The command in this process under base_env's own settings (the Hub's are not needed here)."""
    env = {
        "NO_COLOR": "1",
        "COLUMNS": "120",
        "GPUSIZE_CACHE_DIR": "",
        **({"HOME": str(home)} if home else {}),
    }
    return run_in_process(*args, env=env, cwd=cwd)


def base_env(tmp_path: Path) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGINGFACE"))}
    return {
        **clean,
        "NO_COLOR": "1",
        "COLUMNS": "120",
        "HF_HUB_OFFLINE": "1",
        "HF_HOME": str(tmp_path / "hf"),
        "GPUSIZE_CACHE_DIR": "",
        "PYTHONPATH": str(ROOT),
    }


def assert_one_line(r: subprocess.CompletedProcess[str] | CliResult, *fragments: str) -> None:
    code = r.code if isinstance(r, CliResult) else r.returncode
    assert code == 2, (code, r.stdout, r.stderr)
    assert r.stdout == ""
    assert r.stderr.startswith("gpusize: error: ") and r.stderr.count("\n") == 1, r.stderr
    for fragment in fragments:
        assert fragment in r.stderr, r.stderr


def write_config(folder: Path, config: dict[str, object]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config))
    return folder


QWEN = find_model("Qwen3-8B").config
LLAMA = find_model("Llama-3.1-8B").config


# --------------------------------------------------------------------------- a `~` as typed


@pytest.mark.parametrize("word", ["./~", "./~root"])
def test_tilde_after_dot_slash_is_not_the_home_folder(tmp_path: Path, word: str) -> None:
    home, cwd = write_config(tmp_path / "home", QWEN), tmp_path / "cwd"
    cwd.mkdir()
    assert_one_line(
        in_process("fit", word, "--gpu", "H100", "--json", cwd=cwd, home=home),
        f"{word}: no such file or folder",
    )


@pytest.mark.parametrize("word", ["./~", "./~root"])
def test_tilde_after_dot_slash_reads_that_folder(tmp_path: Path, word: str) -> None:
    home, cwd = write_config(tmp_path / "home", QWEN), tmp_path / "cwd"
    write_config(cwd / word.removeprefix("./"), LLAMA)
    r = in_process("fit", word, "--gpu", "H100", "--json", cwd=cwd, home=home)
    assert r.code == 0, r.stderr
    assert json.loads(r.stdout)["model"]["num_hidden_layers"] == LLAMA["num_hidden_layers"]


def test_leading_tilde_is_still_the_home_folder(tmp_path: Path) -> None:
    home, cwd = write_config(tmp_path / "home", QWEN), tmp_path / "cwd"
    cwd.mkdir()
    r = in_process("fit", "~", "--gpu", "H100", "--json", cwd=cwd, home=home)
    assert r.code == 0, r.stderr
    assert json.loads(r.stdout)["model"]["num_hidden_layers"] == QWEN["num_hidden_layers"]


# --------------------------------------------------------------- quantization transformers refuses


def test_bitsandbytes_with_both_4bit_and_8bit_is_refused(tmp_path: Path) -> None:
    # transformers' BitsAndBytesConfig: "load_in_4bit and load_in_8bit are both True, but only one can be
    # used at the same time"; sizing it as either would be a guess
    quant = {"quant_method": "bitsandbytes", "load_in_4bit": True, "load_in_8bit": True}
    folder = write_config(tmp_path / "model", {**LLAMA, "quantization_config": quant})
    r = in_process("fit", str(folder), "--gpu", "H100", cwd=tmp_path)
    assert_one_line(r, "config.json", "'load_in_4bit' and 'load_in_8bit' are both true")


# --------------------------------------------------------------------------- Hub surroundings


@pytest.mark.parametrize("below", ["", "/sub"])
@pytest.mark.parametrize("offline", ["1", "0"])
def test_hf_home_that_is_a_file_is_one_line(tmp_path: Path, below: str, offline: str) -> None:
    (tmp_path / "hf-file").write_text("not a folder")
    home = f"{tmp_path / 'hf-file'}{below}"
    env = {
        **base_env(tmp_path),
        "HF_HOME": home,
        "HF_HUB_OFFLINE": offline,
        "HF_ENDPOINT": "http://127.0.0.1:9",
    }
    r = gpusize("fit", "acme/tiny-llama", "--gpu", "H100", cwd=tmp_path, env=env)
    assert_one_line(r, f"HF_HOME '{home}'", "is not a folder")
    assert (tmp_path / "hf-file").read_text() == "not a folder"


@pytest.mark.parametrize("char", ["\x01", "\x1b", "\n", " "])
def test_hf_endpoint_with_a_control_character_is_one_escaped_line(tmp_path: Path, char: str) -> None:
    env = {**base_env(tmp_path), "HF_HUB_OFFLINE": "0", "HF_ENDPOINT": f"http://127.0.0.1:9/a{char}b"}
    r = gpusize("fit", "acme/tiny-llama", "--gpu", "H100", cwd=tmp_path, env=env)
    assert_one_line(r, "HF_ENDPOINT 'http://127.0.0.1:9/a", "b' is not a URL")
    assert char == " " or char not in r.stderr.removesuffix("\n")
    if char != " ":
        assert repr(char)[1:-1] in r.stderr


# --------------------------------------------------------------------------- a tensor two shards declare


def test_tensor_in_two_shards_is_counted_once_or_refused(tmp_path: Path) -> None:
    folder = write_config(tmp_path / "model", LLAMA)
    shards = ("model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors")
    for shard, own in zip(shards, ("a", "b"), strict=True):
        (folder / shard).write_bytes(safetensors_bytes({"embed": ("BF16", [1000, 64]), own: ("BF16", [8])}))
    args = ("fit", str(folder), "--gpu", "H100", "--json")
    r = in_process(*args, cwd=tmp_path)
    assert_one_line(r, "tensor 'embed' is declared by both", *shards, "no index says which one")
    index = {"weight_map": {"embed": shards[1], "a": shards[0], "b": shards[1]}}
    (folder / "model.safetensors.index.json").write_text(json.dumps(index))
    r = in_process(*args, cwd=tmp_path)
    assert r.code == 0, r.stderr
    assert json.loads(r.stdout)["model"]["checkpoint_bytes"] == 2 * (64_000 + 16)
