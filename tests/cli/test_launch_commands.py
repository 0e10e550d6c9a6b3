"""The launch commands `serve` prints can run what was sized (issue 18), checked on the process:
llama.cpp gets a command only for a GGUF file; `--quantization bitsandbytes` gets the flags that
quantize while loading; a local model is named as the user typed it, always as the folder; the
llama.cpp command states the flash attention it was sized with, and an impossible combination is
refused (exit 2, one line). The commands run in this process (tests.helpers.run_in_process)."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from tests.conftest import REFERENCE
from tests.gguf_files import llama31_8b_q4_k_m
from tests.helpers import CliResult, run_in_process


def _gpusize(*args: str, cwd: Path | None = None) -> CliResult:
    """The command in this process, run from `cwd` (a relative model path is read from there)."""
    return run_in_process(*args, env={"NO_COLOR": "1", "COLUMNS": "200"}, cwd=cwd)


def _launch(*args: str, cwd: Path | None = None) -> dict[str, dict[str, str | None]]:
    out = _gpusize("serve", *args, "--json", cwd=cwd)
    assert out.code == 0, out.stderr
    launch: dict[str, dict[str, str | None]] = json.loads(out.stdout)["launch"]
    return launch


def _model_folder(where: Path) -> Path:
    config = json.loads((REFERENCE / "configs" / "Qwen__Qwen3-8B.json").read_text())["config"]
    where.mkdir(parents=True)
    (where / "config.json").write_text(json.dumps(config))
    return where


def test_llamacpp_prints_no_command_for_a_hub_safetensors_model() -> None:
    """`-m` takes a GGUF file: `llama-server -m Qwen/Qwen3-8B` cannot run; say what to serve instead."""
    args = ("Qwen3-8B", "--engine", "llamacpp", "--users", "1", "--gpu", "H100")
    entry = _launch(*args)["llamacpp"]
    assert entry["command"] is None
    assert "GGUF" in str(entry["note"]) and "convert_hf_to_gguf.py" in str(entry["note"])
    text = _gpusize("serve", *args)
    assert text.code == 0 and "llama-server -m" not in text.stdout


def test_llamacpp_prints_no_command_for_a_local_safetensors_folder(tmp_path: Path) -> None:
    folder = _model_folder(tmp_path / "m1")
    entry = _launch(str(folder), "--engine", "llamacpp", "--users", "1", "--gpu", "H100")["llamacpp"]
    assert entry["command"] is None and "GGUF" in str(entry["note"])


def test_llamacpp_int4_from_a_16_bit_model_gets_a_note() -> None:
    args = ("Qwen3-8B", "--engine", "llamacpp", "--dtype", "int4", "--users", "1", "--gpu", "H100")
    entry = _launch(*args)["llamacpp"]
    assert entry["command"] is None and "int4" in str(entry["note"])


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_bitsandbytes_gets_a_command(engine: str) -> None:
    """gpusize sizes `--quantization bitsandbytes` as 4-bit weights; the command quantizes that way
    (vLLM up to 0.27.1: 0.28.0 removed bitsandbytes, tests/core/test_vllm_removed_in_release.py)."""
    release = ("--engine-version", "0.27.1") if engine == "vllm" else ()
    entry = _launch(
        "Qwen3-8B", "--quantization", "bitsandbytes", "--engine", engine, "--users", "1", "--gpu", "H100",
        *release,
    )[engine]  # fmt: skip
    assert entry["command"] is not None, entry["note"]
    words = shlex.split(entry["command"])
    assert words[words.index("--quantization") + 1] == "bitsandbytes"


def test_default_engine_bitsandbytes_as_in_the_issue() -> None:
    args = ("--quantization", "bitsandbytes", "--users", "1", "--gpu", "H100", "--engine-version", "0.27.1")
    entry = _launch("Qwen3-8B", *args)["vllm"]
    assert entry["command"] is not None and "--quantization bitsandbytes" in entry["command"]


def test_a_folder_named_dash_x_stays_a_path(tmp_path: Path) -> None:
    """`./-x` must not become `-x`, which vLLM reads as an option."""
    _model_folder(tmp_path / "-x")
    for engine, flag in (("vllm", "serve"), ("sglang", "--model-path")):
        entry = _launch("./-x", "--engine", engine, "--users", "1", "--gpu", "H100", cwd=tmp_path)[engine]
        words = shlex.split(str(entry["command"]))
        assert words[words.index(flag) + 1] == "./-x"


def test_a_config_json_path_names_its_folder(tmp_path: Path) -> None:
    """vLLM and SGLang take the model folder, not its config.json."""
    _model_folder(tmp_path / "m1")
    entry = _launch("m1/config.json", "--users", "1", "--gpu", "H100", cwd=tmp_path)["vllm"]
    words = shlex.split(str(entry["command"]))
    assert words[words.index("serve") + 1] == "m1"


def test_gguf_command_states_flash_attention_as_sized(tmp_path: Path) -> None:
    llama31_8b_q4_k_m(tmp_path / "-q.gguf")
    base = ("./-q.gguf", "--users", "1", "--gpu", "H100", "--gpus", "1")
    on = shlex.split(str(_launch(*base, "--kv-dtype", "fp8", cwd=tmp_path)["llamacpp"]["command"]))
    assert on[on.index("-m") + 1] == "./-q.gguf"
    assert on[on.index("-fa") + 1] == "on"
    assert on[on.index("--cache-type-v") + 1] == "q8_0"
    off = shlex.split(str(_launch(*base, "--no-flash-attn", cwd=tmp_path)["llamacpp"]["command"]))
    assert off[off.index("-fa") + 1] == "off" and "--cache-type-v" not in off


@pytest.mark.parametrize("command", ["serve", "fit"])
def test_quantized_v_cache_without_flash_attention_is_refused(tmp_path: Path, command: str) -> None:
    llama31_8b_q4_k_m(tmp_path / "q.gguf")
    extra = ("--users", "1") if command == "serve" else ()
    out = _gpusize(
        command, "q.gguf", *extra, "--gpu", "H100", "--kv-dtype", "fp8", "--no-flash-attn", cwd=tmp_path
    )
    assert out.code == 2
    assert out.stdout == ""
    assert out.stderr.count("\n") == 1 and "flash attention" in out.stderr
