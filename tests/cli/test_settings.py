"""Each engine setting is declared once (core/settings/) and everything else is derived from it:
the command-line options of every command, the range checks, the refusal's flag name, the settings
an engine accepts and the flags a launch command prints."""

from __future__ import annotations

import dataclasses

import pytest
import typer

from gpusize.cli import register
from gpusize.cli.app import app
from gpusize.core.settings import (
    ENGINE_NAMES,
    SETTING_FLAGS,
    EngineSettings,
    declared,
    launch_flag,
    settings_from,
    settings_of,
)
from gpusize.errors import InputError

#: The engines each inference command sizes (cli/<command>.py `engine_options`).
COMMAND_ENGINES = {
    "fit": set(ENGINE_NAMES),
    "serve": {"vllm", "sglang", "llamacpp", "ollama", "trtllm"},
    "quote": {"vllm", "sglang", "trtllm"},
    "curve": {"vllm", "sglang", "trtllm"},
    "which": {"vllm", "sglang", "trtllm", "llamacpp"},
}


def _options(command: str) -> set[str]:
    register([])
    group = typer.main.get_group(app)
    cmd = group.commands[command]
    return {opt for p in cmd.params for opt in (*p.opts, *p.secondary_opts)}


def test_every_field_is_declared() -> None:
    names = [f.name for f in dataclasses.fields(EngineSettings)]
    assert [n for n, _ in declared()] == names
    for name, setting in declared():
        assert setting.flag.startswith("--") and setting.help, name
        assert set(setting.engines) <= set(ENGINE_NAMES), name
        assert SETTING_FLAGS[name][0] == setting.flag


@pytest.mark.parametrize("command", sorted(COMMAND_ENGINES))
def test_each_command_takes_exactly_the_settings_of_its_engines(command: str) -> None:
    options = _options(command)
    for _, setting in declared():
        wanted = bool(set(setting.engines) & COMMAND_ENGINES[command])
        assert (setting.flag in options) is wanted, (command, setting.flag)
        for alias in setting.aliases:
            assert (alias in options) is wanted, (command, alias)


def test_booleans_take_a_no_form() -> None:
    options = _options("fit")
    for name, setting in declared():
        if EngineSettings.__dataclass_fields__[name].default is False:
            assert f"--no-{setting.flag[2:]}" in options


def test_settings_of_each_engine_follow_the_declarations() -> None:
    assert settings_of("vllm") >= {"gpu_memory_utilization", "max_num_seqs", "version"}
    assert "mem_fraction_static" in settings_of("sglang") and "mem_fraction_static" not in settings_of("vllm")
    assert settings_of("llamacpp") == {"n_gpu_layers", "flash_attn", "split_mode", "backend"}
    assert "name" not in settings_of("vllm")


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"gpu_memory_utilization": 1.5}, "invalid --gpu-memory-utilization 1.5: must be in (0, 1]"),
        ({"gpu_memory_utilization": 0.0}, "must be in (0, 1]"),
        ({"gpu_memory_utilization": float("nan")}, "invalid --gpu-memory-utilization nan"),
        ({"mem_fraction_static": 0.9995}, "must be in (0, 0.999]"),
        ({"max_num_seqs": 0}, "invalid --max-num-seqs 0: must be greater than zero"),
        ({"max_num_batched_tokens": 1 << 25}, "at most 16,777,216"),
        ({"n_gpu_layers": -1}, "invalid --n-gpu-layers -1: must be at least 0"),
        ({"split_mode": "column"}, "unknown --split-mode 'column'; use one of layer, row"),
        (
            {"name": "tensorrt"},
            "unknown --engine 'tensorrt'; use one of vllm, sglang, llamacpp, transformers",
        ),
        ({"attn_implementation": "xformers"}, "use one of sdpa, flash_attention_2, eager"),
    ],
)
def test_range_checks_come_from_the_declaration(values: dict[str, object], message: str) -> None:
    with pytest.raises(InputError) as caught:
        settings_from(values)
    assert message in str(caught.value)


def test_values_inside_the_bounds_pass_and_words_are_normalised() -> None:
    s = settings_from({"gpu_memory_utilization": 1.0, "n_gpu_layers": 0, "split_mode": " ROW "}, "llamacpp")
    assert (s.gpu_memory_utilization, s.n_gpu_layers, s.split_mode, s.name) == (1.0, 0, "row", "llamacpp")
    assert settings_from({}).name == "vllm"


def test_launch_flags_are_the_engines_own() -> None:
    # printed as given; the budget fraction is printed with its effective value instead
    assert launch_flag("max_num_seqs") == "--max-num-seqs"
    assert launch_flag("chunked_prefill_size") == "--chunked-prefill-size"
    assert launch_flag("gpu_memory_utilization") is None
    assert launch_flag("flashinfer_sampler") is None  # an environment switch
