"""The trtllm-serve line (serving/launch.py trtllm_command): every flag it prints exists, with a legal
value, in every TensorRT-LLM release gpusize models (tests/data/engine_flags.yaml), and the settings
trtllm-serve has no flag for go into the --extra_llm_api_options YAML of the note."""

from __future__ import annotations

import itertools
from dataclasses import replace

import yaml

from gpusize.core.parse import with_rope_scaling
from gpusize.core.releases import TRTLLM, parse_version
from gpusize.serving.launch import SERVER_COMMANDS, TRTLLM_OPTIONS_FILE, trtllm_command
from gpusize.sources.catalog import find_gpu
from tests.helpers import catalog_spec, workload
from tests.serving.test_launch_flags import _every_setting, problems, table


def test_the_table_covers_every_trtllm_release() -> None:
    first, newest = (parse_version(v) for v in table()["trtllm"]["covers"])
    assert (first, newest) == (TRTLLM.versions[0], TRTLLM.newest)


def test_every_trtllm_flag_exists_in_its_release() -> None:
    spec = catalog_spec("Qwen3-30B-A3B")
    every = _every_setting("trtllm")
    assert {"max_batch_size", "max_num_tokens", "pp_size", "ep_size"} <= set(every)
    printed = 0
    for version, dtype, kv, full, gpu in itertools.product(
        TRTLLM.known, ("auto", "bf16", "fp16", "fp32"), ("auto", "fp8"), (False, True), ("H100", "A100-80GB")
    ):
        settings = {**every, "ep_size": 2, "pp_size": 2, "tokens_per_block": 64} if full else {}
        work = workload(spec, 8192, dtype=dtype, kv_dtype=kv, engine_name="trtllm", **settings)
        work = replace(work, release=TRTLLM.resolve(version))
        launch = trtllm_command(
            "Qwen/Qwen3-30B-A3B", "v1.0" if full else None, 2, work, 0.9, spec, find_gpu(gpu)
        )
        assert launch.command is not None
        assert not problems("trtllm", launch.command, parse_version(version)), launch.command
        printed += 1
    assert printed == 4 * 4 * 2 * 2 * 2


def test_settings_without_a_flag_go_into_the_options_yaml() -> None:
    spec = catalog_spec("Qwen3-8B")
    work = workload(spec, 8192, dtype="fp16", kv_dtype="fp8", engine_name="trtllm", tokens_per_block=64)
    launch = trtllm_command("Qwen/Qwen3-8B", "main", 1, work, 0.85, spec, find_gpu("H100"))
    assert launch.command is not None and launch.note is not None
    assert launch.command.endswith(f"--extra_llm_api_options {TRTLLM_OPTIONS_FILE}")
    assert "--kv_cache_free_gpu_memory_fraction 0.85" in launch.command
    options = yaml.safe_load(launch.note.split(": ", 1)[1])
    assert options == {
        "dtype": "float16",
        "revision": "main",
        "kv_cache_config": {"dtype": "fp8", "tokens_per_block": 64},
    }
    adp = workload(spec, 8192, engine_name="trtllm", enable_attention_dp=True)
    note = trtllm_command("Qwen/Qwen3-8B", None, 2, adp, 0.9, spec).note
    assert note is not None and yaml.safe_load(note.split(": ", 1)[1]) == {"enable_attention_dp": True}
    plain = trtllm_command("Qwen/Qwen3-8B", None, 1, workload(spec, 8192, engine_name="trtllm"), 0.9, spec)
    assert plain.note is None and plain.command is not None and "extra_llm_api_options" not in plain.command


def test_what_trtllm_cannot_load_is_a_note_not_a_command() -> None:
    spec = catalog_spec("Qwen3-8B")
    fp8 = trtllm_command("m", None, 1, workload(spec, 4096, dtype="fp8", engine_name="trtllm"), 0.9, spec)
    assert fp8.command is None and fp8.note is not None and "ModelOpt" in fp8.note
    yarn = with_rope_scaling(spec, "yarn", 4.0, 32768)
    rope = trtllm_command("m", None, 1, workload(yarn, 65536, engine_name="trtllm"), 0.9, yarn)
    assert rope.command is None and rope.note is not None
    assert SERVER_COMMANDS["trtllm"] is trtllm_command


def test_the_check_finds_a_flag_trtllm_lacks() -> None:
    assert problems("trtllm", "trtllm-serve m --tensor-parallel-size 2", parse_version("1.2.1"))
    assert problems(
        "trtllm", "trtllm-serve m --kv_cache_free_gpu_memory_fraction 1.5", parse_version("1.0.0")
    )
