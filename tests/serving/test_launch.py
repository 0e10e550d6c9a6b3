"""Printed launch commands reproduce what was sized, or say what they cannot express.

`serve Llama-3.3-70B --dtype int4 --gpus 1 --gpu H100` fits because the weights were sized at 4 bits;
a bare `vllm serve meta-llama/Llama-3.3-70B-Instruct` would load bf16 (~131 GiB) on one 80 GB card. So
int4 and int8 give no command but a note; fp8 carries `--quantization fp8` (vLLM and SGLang); an fp8
KV cache, a --revision and the tensor parallel size are in the command."""

from __future__ import annotations

import json
import shlex

import pytest

from gpusize.serving.launch import sglang_command, vllm_command
from tests.helpers import catalog_spec, run_in_process, workload

LLAMA_70B = "Llama-3.3-70B-Instruct"


def launch(engine: str, dtype: str, gpus: int, *extra: str) -> tuple[int, dict[str, object], str]:
    args = ["serve", LLAMA_70B, "--dtype", dtype, "--gpus", str(gpus), "--gpu", "H100", "--users", "1"]
    r = run_in_process(*args, "--engine", engine, *extra, "--json")
    text = run_in_process(*args, "--engine", engine, *extra, env={"COLUMNS": "200"})
    data = json.loads(r.stdout)
    entry: dict[str, object] = data["launch"][engine]
    return r.code, entry, text.stdout


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
@pytest.mark.parametrize("dtype, gpus", [("int4", 1), ("int8", 2)])
def test_int_weights_from_a_16_bit_checkpoint_give_a_note_not_a_command(
    engine: str, dtype: str, gpus: int
) -> None:
    code, entry, text = launch(engine, dtype, gpus)
    assert code == 0
    assert entry["command"] is None
    assert f"does not quantize a 16-bit checkpoint to {dtype}" in str(entry["note"])
    assert "pre-quantized" in str(entry["note"])
    assert "vllm serve" not in text and "sglang.launch_server" not in text
    assert f"sized with {dtype} weights" in text


@pytest.mark.parametrize("engine, kv_flag", [("vllm", "fp8"), ("sglang", "fp8_e4m3")])
def test_fp8_weights_and_kv_cache_are_in_the_command(engine: str, kv_flag: str) -> None:
    code, entry, text = launch(engine, "fp8", 2, "--kv-dtype", "fp8")
    assert code == 0
    words = shlex.split(str(entry["command"]))
    assert words[words.index("--quantization") + 1] == "fp8"
    assert words[words.index("--kv-cache-dtype") + 1] == kv_flag
    tp_flag = "--tensor-parallel-size" if engine == "vllm" else "--tp"
    assert words[words.index(tp_flag) + 1] == "2"
    assert str(entry["command"]) in text  # the table prints the same command


@pytest.mark.parametrize("revision", ["v1.0", "0123456789abcdef0123456789abcdef01234567", "$(touch PWNED)"])
def test_revision_that_was_sized_is_in_both_commands(revision: str) -> None:
    spec = catalog_spec("Qwen3-8B")
    vllm = vllm_command("acme/model", revision, 1, workload(spec, 8192), 0.9, spec)
    sglang = sglang_command("acme/model", revision, 1, workload(spec, 8192, engine_name="sglang"), 0.85, spec)
    for command in (vllm.command, sglang.command):
        assert command is not None
        words = shlex.split(command)
        assert words[words.index("--revision") + 1] == revision  # one argument, quoted
