"""Printed launch commands reproduce what was sized, or say what they cannot express.

`serve Llama-3.3-70B --dtype int4 --gpus 1 --gpu H100` fits because the weights were sized at 4 bits;
a bare `vllm serve meta-llama/Llama-3.3-70B-Instruct` would load bf16 (~131 GiB) on one 80 GB card. So
int4 and int8 give no command but a note; fp8 carries `--quantization fp8` (vLLM and SGLang); an fp8
KV cache, a --revision and the tensor parallel size are in the command."""

from __future__ import annotations

import json
import os
import shlex
from dataclasses import replace

import pytest

from gpusize.core.engines import llamacpp
from gpusize.core.engines.llamacpp import flash_attention
from gpusize.errors import InputError
from gpusize.serving.launch import llamacpp_command, sglang_command, vllm_command
from gpusize.sources.catalog import find_gpu
from gpusize.sources.resolve import engine_path
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
    tp_flag = "--tensor-parallel-size" if engine == "vllm" else "--tp-size"
    assert words[words.index(tp_flag) + 1] == "2"
    assert str(entry["command"]) in text.replace(" \\\n    ", " ")  # the table prints the same command


@pytest.mark.parametrize("revision", ["v1.0", "0123456789abcdef0123456789abcdef01234567", "$(touch PWNED)"])
def test_revision_that_was_sized_is_in_both_commands(revision: str) -> None:
    spec = catalog_spec("Qwen3-8B")
    vllm = vllm_command("acme/model", revision, 1, workload(spec, 8192), 0.9, spec)
    sglang = sglang_command("acme/model", revision, 1, workload(spec, 8192, engine_name="sglang"), 0.85, spec)
    for command in (vllm.command, sglang.command):
        assert command is not None
        words = shlex.split(command)
        assert words[words.index("--revision") + 1] == revision  # one argument, quoted


def test_bitsandbytes_prints_the_flags_that_quantize_while_loading() -> None:
    """`--quantization bitsandbytes` is sized as int4 and both engines quantize that way while loading
    (vLLM sets the bitsandbytes load format itself; SGLang picks its loader from --load-format)."""
    spec = catalog_spec("Qwen3-8B")
    bnb = {"dtype": "int4"}
    vllm_work = replace(workload(spec, 8192, **bnb), load_quantization="bitsandbytes")  # type: ignore[arg-type]
    sglang_work = replace(
        workload(spec, 8192, engine_name="sglang", **bnb),  # type: ignore[arg-type]
        load_quantization="bitsandbytes",
    )
    vllm = shlex.split(str(vllm_command("Qwen/Qwen3-8B", None, 1, vllm_work, 0.9, spec).command))
    sglang = shlex.split(str(sglang_command("Qwen/Qwen3-8B", None, 1, sglang_work, 0.85, spec).command))
    assert vllm[vllm.index("--quantization") + 1] == "bitsandbytes"
    assert sglang[sglang.index("--quantization") + 1] == "bitsandbytes"
    assert sglang[sglang.index("--load-format") + 1] == "bitsandbytes"
    # int4 that is not bitsandbytes still needs a pre-quantized checkpoint
    plain = vllm_command("Qwen/Qwen3-8B", None, 1, workload(spec, 8192, dtype="int4"), 0.9, spec)
    assert plain.command is None and "pre-quantized" in str(plain.note)


def test_sglang_before_fp8_e4m3_prints_the_fp8_cache_it_has() -> None:
    """SGLang 0.4.0 takes --kv-cache-dtype auto or fp8_e5m2 only (fp8_e4m3 came with #2786)."""
    spec = catalog_spec("Llama-3.1-8B")  # a family 0.4.0 runs (Qwen3 came in 0.4.5.post2)
    old = workload(spec, 8192, kv_dtype="fp8", engine_name="sglang", version="0.4.0")
    new = workload(spec, 8192, kv_dtype="fp8", engine_name="sglang", version="0.5.3")
    for work, flag in ((old, "fp8_e5m2"), (new, "fp8_e4m3")):
        words = shlex.split(str(sglang_command("m", None, 1, work, 0.85, spec).command))
        assert words[words.index("--kv-cache-dtype") + 1] == flag


def test_llamacpp_prints_a_command_only_for_a_gguf_file() -> None:
    spec = catalog_spec("Qwen3-8B")
    work = workload(spec, 8192, engine_name="llamacpp")
    for source in ("catalog", "hub", "local"):
        launch = llamacpp_command("Qwen/Qwen3-8B", source, work, 37)
        assert launch.command is None
        assert "GGUF" in str(launch.note) and "convert_hf_to_gguf.py" in str(launch.note)
    int4 = llamacpp_command(
        "Qwen/Qwen3-8B", "catalog", workload(spec, 8192, dtype="int4", engine_name="llamacpp"), 37
    )
    assert int4.command is None and "int4" in str(int4.note)
    forced = llamacpp_command(
        "m.gguf", "gguf", workload(spec, 8192, dtype="int4", engine_name="llamacpp"), 37
    )
    assert forced.command is None and "file's own tensors" in str(forced.note)
    assert llamacpp_command("./m.gguf", "gguf", work, 37).command is not None


@pytest.mark.parametrize("flash_attn, expected", [(None, "on"), (True, "on"), (False, "off")])
def test_llamacpp_flash_attention_is_printed_as_sized(flash_attn: bool | None, expected: str) -> None:
    """The modelled release defaults -fa to auto (on for CUDA): sizing and command agree either way."""
    spec = catalog_spec("Qwen3-8B")
    work = workload(spec, 8192, engine_name="llamacpp", flash_attn=flash_attn)
    assert flash_attention(work) is (expected == "on")
    assert llamacpp.effective_settings(spec, find_gpu("H100"), 1, work)["flash_attn"] == expected
    words = shlex.split(str(llamacpp_command("m.gguf", "gguf", work, 37).command))
    assert words[words.index("-fa") + 1] == expected


def test_llamacpp_sizes_flash_attention_on_by_default() -> None:
    """Without -fa the compute buffer holds no KQ scores: smaller than with flash attention off."""
    spec = catalog_spec("Qwen3-8B")
    default = llamacpp.evaluate(spec, find_gpu("H100"), 1, workload(spec, 32768, engine_name="llamacpp"))
    off = llamacpp.evaluate(
        spec, find_gpu("H100"), 1, workload(spec, 32768, engine_name="llamacpp", flash_attn=False)
    )
    assert default.per_gpu.activations_bytes < off.per_gpu.activations_bytes


def test_llamacpp_quantized_v_cache_without_flash_attention_is_refused() -> None:
    spec = catalog_spec("Qwen3-8B")
    with pytest.raises(InputError, match="refuses a quantized V cache without flash attention"):
        workload(spec, 8192, kv_dtype="fp8", engine_name="llamacpp", flash_attn=False)
    work = workload(spec, 8192, kv_dtype="fp8", engine_name="llamacpp")
    words = shlex.split(str(llamacpp_command("m.gguf", "gguf", work, 37).command))
    assert words[words.index("-fa") + 1] == "on"
    assert words[words.index("--cache-type-v") + 1] == "q8_0"


@pytest.mark.parametrize(
    "typed, whole, expected",
    [
        ("./-x", True, "./-x"),
        ("-x", True, "./-x"),
        ("m1/config.json", False, "m1"),
        ("config.json", False, "."),
        ("./-x/config.json", False, "./-x"),
        ("-x/config.json", False, "./-x"),
        ("models/q.gguf", True, "models/q.gguf"),
        ("/abs/m", True, "/abs/m"),
    ],
)
def test_engine_path_is_the_folder_as_typed(typed: str, whole: bool, expected: str) -> None:
    assert engine_path(typed, whole) == expected


def test_engine_path_expands_home() -> None:
    """The printed command quotes the path, so the shell would not expand `~`: gpusize does."""
    assert engine_path("~/m", True) == os.path.expanduser("~/m")
