"""Hostile and odd input met as a user or a script meets it (issue: "no injected commands, no negative
memory, no traceback, no hang, no flipped verdict").

Every case runs the real command line in this process (tests.helpers.run_in_process) and checks the
contract: exit 0 (fits), 1 (does not fit) or 2 (bad input, one line on stderr naming the field); never 3,
never a traceback, never a negative byte count in the JSON, never a control character from a file
reaching the terminal. Cases that need real file descriptors (closed pipes, /dev/full) are in
test_hostile_environment.py.
"""

from __future__ import annotations

import copy
import json
import os
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gpusize.sources.catalog import find_model
from tests.helpers import CliResult, negative_numbers, run_in_process

ESC = "\x1b]0;pwned\x07\x1b[2J"


def catalog_config(name: str) -> dict[str, Any]:
    return copy.deepcopy(find_model(name).config)


def text_part(config: dict[str, Any]) -> dict[str, Any]:
    nested: dict[str, Any] = config.get("text_config") or config
    return nested


def write_config(folder: Path, config: dict[str, Any] | str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "config.json"
    path.write_text(config if isinstance(config, str) else json.dumps(config))
    return path


def assert_one_line_error(r: CliResult, *fragments: str) -> None:
    assert r.code == 2, (r.code, r.stdout[:300], r.stderr[:600])
    assert r.stdout == ""
    assert r.stderr.startswith("gpusize: error: ") and r.stderr.count("\n") == 1, r.stderr[:600]
    assert len(r.stderr) < 1200, len(r.stderr)
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr
    for fragment in fragments:
        assert fragment in r.stderr, r.stderr


def assert_sane_answer(r: CliResult) -> dict[str, Any]:
    assert r.code in (0, 1), (r.code, r.stderr[:600])
    data: dict[str, Any] = json.loads(r.stdout)
    assert negative_numbers(data) == []
    return data


# --------------------------------------------------------------------------- config.json fields


def _set(*path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def edit(config: dict[str, Any]) -> None:
        node = config
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value

    return edit


def _text(key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def edit(config: dict[str, Any]) -> None:
        text_part(config)[key] = value

    return edit


def _drop(*keys: str) -> Callable[[dict[str, Any]], None]:
    def edit(config: dict[str, Any]) -> None:
        for key in keys:
            text_part(config).pop(key, None)

    return edit


def _moe_without_widths(config: dict[str, Any]) -> None:
    config.pop("moe_intermediate_size")
    config["intermediate_size"] = None


def _blocks(value: Callable[[list[Any]], Any]) -> Callable[[dict[str, Any]], None]:
    def edit(config: dict[str, Any]) -> None:
        config["block_configs"] = value(config["block_configs"])

    return edit


def _first_block(part: str, key: str, value: Any) -> Callable[[list[Any]], Any]:
    def edit(blocks: list[Any]) -> Any:
        first = next(b for b in blocks if not b[part].get("no_op") and not b[part].get("replace_with_linear"))
        first[part][key] = value
        return blocks

    return edit


NEMOTRON_SUPER = "Llama-3_3-Nemotron-Super-49B-v1"
W4A16 = "Meta-Llama-3.1-8B-Instruct-quantized.w4a16"
NAN, INF = float("nan"), float("inf")

#: (catalog model, one edit, what the one-line error names). Each was an internal error (exit 3) or a
#: silent wrong answer before the validation layer.
BAD_CONFIGS: list[tuple[str, str, Callable[[dict[str, Any]], None], str]] = [
    ("nan-intermediate", "Qwen3-8B", _text("intermediate_size", NAN), "'intermediate_size'"),
    ("list-intermediate", "Qwen3-8B", _text("intermediate_size", [1, 2]), "'intermediate_size'"),
    ("negative-intermediate", "Qwen3-8B", _text("intermediate_size", -14336), "'intermediate_size'"),
    ("nan-positions", "Qwen3-8B", _text("max_position_embeddings", NAN), "'max_position_embeddings'"),
    ("int-architectures", "Qwen3-8B", _set("architectures", value=5), "'architectures'"),
    ("dict-architectures", "Qwen3-8B", _set("architectures", value={"a": 1}), "'architectures'"),
    ("string-rope-scaling", "Qwen3-8B", _text("rope_scaling", "yarn"), "'rope_scaling'"),
    ("list-rope-scaling", "Qwen3-8B", _text("rope_scaling", ["yarn", 4]), "'rope_scaling'"),
    (
        "string-rope-factor",
        "Qwen3-8B",
        _text("rope_scaling", {"rope_type": "yarn", "factor": "4"}),
        "'factor'",
    ),
    (
        "huge-yarn-factor",
        "Qwen3-8B",
        _text("rope_scaling", {"rope_type": "yarn", "factor": 1e300}),
        "'factor'",
    ),
    ("inf-yarn-factor", "Qwen3-8B", _text("rope_scaling", {"rope_type": "yarn", "factor": INF}), "'factor'"),
    ("float-sliding-window", "Mistral-7B-v0.1", _text("sliding_window", 4096.5), "'sliding_window'"),
    ("zero-head-dim", "Qwen3-8B", _text("head_dim", 0), "'head_dim'"),
    # found by the fuzz suite: within each field's bound, but `train` replayed them for minutes
    ("8192-heads", "gemma-3-1b-it", _text("num_attention_heads", 8192), "attention heads"),
    ("million-wide-heads", "Qwen3-8B", _text("head_dim", 1 << 20), "attention heads"),
    ("2048-layers", "DeepSeek-V3", _text("num_hidden_layers", 2048), "'num_hidden_layers'"),
    ("million-layers", "Qwen3-8B", _text("num_hidden_layers", 1_000_000), "'num_hidden_layers'"),
    ("billion-layers", "Qwen3-8B", _text("num_hidden_layers", 1e9), "'num_hidden_layers'"),
    (
        "string-attention-interval",
        "Qwen3-Next-80B-A3B-Instruct",
        _text("full_attention_interval", "4"),
        "'full_attention_interval'",
    ),
    ("string-sparse-step", "Qwen3-30B-A3B", _text("decoder_sparse_step", "1"), "'decoder_sparse_step'"),
    (
        "string-window-pattern",
        "gemma-3-1b-it",
        _text("sliding_window_pattern", "6"),
        "'sliding_window_pattern'",
    ),
    ("string-first-dense", "DeepSeek-V3", _text("first_k_dense_replace", "3"), "'first_k_dense_replace'"),
    ("string-shared-experts", "DeepSeek-V3", _text("n_shared_experts", "1"), "'n_shared_experts'"),
    ("string-nextn", "DeepSeek-V3", _text("num_nextn_predict_layers", "1"), "'num_nextn_predict_layers'"),
    ("negative-nextn", "DeepSeek-V3", _text("num_nextn_predict_layers", -3), "'num_nextn_predict_layers'"),
    ("negative-experts", "Qwen3-30B-A3B", _text("num_experts", -128), "'num_experts'"),
    ("fractional-experts", "Qwen3-30B-A3B", _text("num_experts", 8.7), "'num_experts'"),
    ("top-k-above-experts", "Qwen3-30B-A3B", _text("num_experts_per_tok", 1000), "num_experts_per_tok"),
    ("moe-without-widths", "Qwen3-30B-A3B", _moe_without_widths, "'moe_intermediate_size'"),
    ("mla-incomplete", "DeepSeek-V3", _drop("qk_nope_head_dim"), "'qk_nope_head_dim'"),
    ("mamba-incomplete", "Nemotron-H-56B-Base-8K", _drop("mamba_head_dim"), "'mamba_head_dim'"),
    (
        "linear-attention-incomplete",
        "Qwen3-Next-80B-A3B-Instruct",
        _drop("linear_key_head_dim"),
        "'linear_key_head_dim'",
    ),
    ("blocks-not-objects", NEMOTRON_SUPER, _blocks(lambda b: [1] * len(b)), "block_configs[0]"),
    ("blocks-dict", NEMOTRON_SUPER, _blocks(lambda b: {"0": b[0]}), "'block_configs'"),
    (
        "blocks-zero-group",
        NEMOTRON_SUPER,
        _blocks(_first_block("attention", "n_heads_in_group", 0)),
        "'n_heads_in_group'",
    ),
    ("blocks-nan-ffn-mult", NEMOTRON_SUPER, _blocks(_first_block("ffn", "ffn_mult", "nan")), "'ffn_mult'"),
    (
        "fp8-short-block",
        "DeepSeek-V3",
        _set("quantization_config", "weight_block_size", value=[128]),
        "'weight_block_size'",
    ),
    (
        "fp8-zero-block",
        "DeepSeek-V3",
        _set("quantization_config", "weight_block_size", value=[0, 128]),
        "'weight_block_size'",
    ),
    ("string-gptq-bits", W4A16, _set("quantization_config", "bits", value="4"), "'bits'"),
    (
        "list-config-groups",
        "Llama-3.3-70B-Instruct-FP8-dynamic",
        _set("quantization_config", "config_groups", value=[{"weights": {"num_bits": 8}}]),
        "'config_groups'",
    ),
    ("string-vision-config", "gemma-3-4b-it", _set("vision_config", value="siglip"), "'vision_config'"),
    (
        "negative-vision-width",
        "gemma-3-4b-it",
        _set("vision_config", "hidden_size", value=-1152),
        "'hidden_size'",
    ),
    ("int-mlp-only-layers", "Qwen3-30B-A3B", _text("mlp_only_layers", 5), "'mlp_only_layers'"),
    (
        "short-no-rope-layers",
        "Llama-4-Scout-17B-16E-Instruct",
        _text("no_rope_layers", [1, 0]),
        "'no_rope_layers'",
    ),
]


@pytest.mark.parametrize(
    "base, edit, fragment", [case[1:] for case in BAD_CONFIGS], ids=[case[0] for case in BAD_CONFIGS]
)
def test_bad_config_field_is_one_line_naming_it(
    tmp_path: Path, base: str, edit: Callable[[dict[str, Any]], None], fragment: str
) -> None:
    config = catalog_config(base)
    edit(config)
    path = write_config(tmp_path, config)
    started = time.monotonic()
    r = run_in_process("fit", str(path), "--gpu", "H100", "--mtp", "--json")
    assert_one_line_error(r, fragment, "config.json")
    assert time.monotonic() - started < 10


@pytest.mark.parametrize(
    "name, text, fragment",
    [
        (
            "5000-digit-integer",
            '{"model_type": "llama", "hidden_size": ' + "9" * 5000 + "}",
            "not valid JSON",
        ),
        ("nested-100000-deep", '{"a": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested too deeply"),
        ("not-utf8", b'{"model_type": "\xff"}'.decode("latin-1"), "UTF-8"),
        ("json-array", "[1, 2, 3]", "JSON object"),
    ],
)
def test_malformed_json_is_one_line(tmp_path: Path, name: str, text: str, fragment: str) -> None:
    path = tmp_path / "config.json"
    path.write_bytes(text.encode("latin-1"))
    assert_one_line_error(run_in_process("fit", str(path)), fragment)


def test_huge_model_type_is_echoed_short(tmp_path: Path) -> None:
    config = catalog_config("Qwen3-8B") | {"model_type": "x" * 10_000_000}
    r = run_in_process("fit", str(write_config(tmp_path, config)))
    assert_one_line_error(r, "model_type")
    assert len(r.stderr) < 600


def test_config_beyond_the_size_cap_is_refused_unread(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    with path.open("wb") as handle:  # sparse: 300 MB of nothing
        handle.truncate(300 * 1024 * 1024)
    assert_one_line_error(run_in_process("fit", str(path)), "too large")


@pytest.mark.parametrize("length", [256, 5000, 100_000])
def test_long_model_names_give_a_short_line(length: int) -> None:
    for name in ("a" * length, "/" + "a" * length, "org/" + "a" * length):
        r = run_in_process("fit", name)
        assert_one_line_error(r)
        assert len(r.stderr) < 600


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any folder")
def test_unreadable_folder_is_one_line(tmp_path: Path) -> None:
    folder = tmp_path / "model"
    write_config(folder, catalog_config("Qwen3-8B"))
    folder.chmod(0)
    try:
        assert_one_line_error(run_in_process("fit", str(folder)))
    finally:
        folder.chmod(0o755)


# --------------------------------------------------------------------------- wrong answers


def test_gptq_without_grouping_is_positive_and_does_not_fit_a_4090(tmp_path: Path) -> None:
    """AutoGPTQ writes group_size -1 for one scale per output channel (real 70B checkpoints carry it);
    it used to give -93.0 of 21.0 GiB per GPU and exit 0."""
    config = catalog_config("Llama-3.1-70B")
    config["quantization_config"] = {"quant_method": "gptq", "bits": 4, "group_size": -1, "desc_act": False}
    r = run_in_process(
        "fit", str(write_config(tmp_path, config)), "--gpu", "RTX4090", "--gpus", "1", "--json"
    )
    data = assert_sane_answer(r)
    assert r.code == 1 and data["fits"] is False
    weights = data["candidates"][0]["per_gpu"]["weights_bytes"]
    assert 33 * 2**30 < weights < 40 * 2**30  # 70.6e9 params x ~0.5 bytes + bf16 embeddings


@pytest.mark.parametrize("command", ["fit", "curve", "serve", "quote", "train", "which"])
def test_every_json_answer_is_free_of_negative_sizes(command: str) -> None:
    args = {
        "fit": ["fit", "DeepSeek-V3", "--gpu", "H100"],
        "curve": ["curve", "Qwen3-32B", "--gpu", "L4", "--gpus", "4"],
        "serve": ["serve", "Qwen3-32B", "--gpu", "L4", "--users", "64"],
        "quote": ["quote", "Qwen3-32B", "--users", "8"],
        "train": ["train", "Qwen3-32B", "--method", "full", "--gpu", "L4"],
        "which": ["which", "--gpu", "L4", "--all"],
    }[command]
    assert_sane_answer(run_in_process(*args, "--json"))


# --------------------------------------------------------------------------- command-line numbers


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["fit", "Qwen3-8B", "--ctx", "9" * 5000], "invalid context"),
        (["fit", "Qwen3-8B", "--ctx", "0.99999999999999999999k"], "invalid context"),
        (["fit", "Qwen3-8B", "--ctx", "10^30"], "invalid context"),
        (["fit", "Qwen3-8B", "--ctx", "1" + "0" * 30], "invalid context"),
        (["fit", "Qwen3-8B", "--ctx", "1e9"], "invalid context"),
        (["serve", "Qwen3-8B", "--rps", "nan"], "--rps"),
        (["serve", "Qwen3-8B", "--rps", "inf"], "--rps"),
        (["serve", "Qwen3-8B", "--rps", "1e308"], "--rps"),
        (["serve", "Qwen3-8B", "--rps", "-1"], "--rps"),
        (["train", "Qwen3-8B", "--method", "lora", "--tokens", "9" * 5000], "--tokens"),
        (["train", "Qwen3-8B", "--method", "lora", "--tokens", "1e30"], "--tokens"),
        (["fit", "Qwen3-8B", "--batch", "9" * 30], "--batch"),
        (["serve", "Qwen3-8B", "--users", "9" * 30], "--users"),
        (["fit", "Qwen3-8B", "--gpu-memory-utilization", "nan"], "--gpu-memory-utilization"),
    ],
)
def test_bad_numbers_are_one_line(args: list[str], fragment: str) -> None:
    r = run_in_process(*args)
    assert_one_line_error(r, fragment)
    assert len(r.stderr) < 400


@pytest.mark.parametrize("value", ["yarn:4:32768:9", "yarn:4:32768:", "linear:2:4096:1:1"])
def test_rope_scaling_with_an_extra_field_names_the_accepted_form(value: str) -> None:
    """yarn:4:32768:9 dropped the 9 silently and sized yarn:4:32768 (issue 18)."""
    assert_one_line_error(
        run_in_process("fit", "Qwen3-8B", "--rope-scaling", value), "yarn:FACTOR[:ORIGINAL]"
    )


def test_context_is_shown_as_given_never_as_a_float() -> None:
    data = assert_sane_answer(run_in_process("fit", "Qwen3-8B", "--ctx", "32K", "--gpu", "H200", "--json"))
    assert data["workload"]["context_tokens"] == 32768


# --------------------------------------------------------------------------- terminal escapes


def _hostile_models_file(tmp_path: Path) -> Path:
    entry = {
        "name": f"evil{ESC}model",
        "hf_id": f"evil/{ESC}",
        "source": f"x{ESC}",
        "config": catalog_config("Qwen3-0.6B") | {"architectures": [f"Evil{ESC}ForCausalLM"]},
    }
    path = tmp_path / "models.yaml"
    path.write_text(json.dumps([entry]))
    return path


def _hostile_gpus_file(tmp_path: Path) -> Path:
    entry = {
        "name": "EVIL",
        "full_name": f"Evil{ESC} GPU",
        "vendor": "NVIDIA",
        "segment": "datacenter",
        "architecture": f"x{ESC}",
        "memory_type": "HBM3",
        "marketing_memory_gb": 80,
        "memory_mib": 81559,
        "ecc": "on",
        "interconnect": "nvswitch",
        "bandwidth_gbps": 3350,
        "source": f"y{ESC}",
    }
    path = tmp_path / "gpus.yaml"
    path.write_text(json.dumps([entry]))
    return path


@pytest.mark.parametrize(
    "args, code",
    [
        (["fit", "{model}", "--gpu", "EVIL"], 0),
        (["fit", "{mystery}", "--gpu", "EVIL", "--best-effort"], 0),
        (["fit", "{mystery}", "--gpu", "EVIL"], 2),
        (["curve", "{model}", "--gpu", "EVIL"], 0),
        (["serve", "{model}", "--gpu", "EVIL", "--users", "4"], 0),
        (["quote", "{model}", "--gpu", "EVIL"], 0),
        (["quote", "{model}", "--gpu", "EVIL", "--format", "markdown"], 0),
        (["quote", "{model}", "--gpu", "EVIL", "--format", "csv"], 0),
        (["train", "{mystery}", "--method", "lora", "--gpu", "EVIL", "--best-effort"], 0),
        (["fit", "evil\x1b]0;pwned\x07\x1b[2Jmodel", "--gpu", "EVIL"], 0),
        (["fit", "Qwen3-8B", "--gpu", "Evil\x1b]0;pwned\x07"], 2),
        (["which", "--gpu", "EVIL", "--all"], 0),
        (["models", "--models-file", "{models}"], 0),
        (["gpus", "--gpus-file", "{gpus}"], 0),
    ],
)
def test_no_control_character_from_a_file_reaches_the_terminal(
    tmp_path: Path, args: list[str], code: int
) -> None:
    """ESC sequences in a config (model_type, architectures, vision_config.model_type), a folder name,
    a user catalog (model name, Hub id, GPU name) would retitle the window or clear the screen."""
    config = catalog_config("Qwen3-8B")
    config["architectures"] = [f"Evil{ESC}ForCausalLM"]
    config["vision_config"] = {"model_type": f"v{ESC}", "hidden_size": 64, "num_hidden_layers": 2}
    model = write_config(tmp_path / f"m{ESC}", config)
    mystery = write_config(tmp_path / "mystery", config | {"model_type": f"mystery{ESC}"})
    models, gpus = _hostile_models_file(tmp_path), _hostile_gpus_file(tmp_path)
    names = {"{model}": model, "{mystery}": mystery, "{models}": models, "{gpus}": gpus}
    argv = [str(names.get(a, a)) for a in args]
    if argv[0] not in ("models", "gpus"):
        argv += ["--models-file", str(models), "--gpus-file", str(gpus)]
    r = run_in_process(*argv, env={"COLUMNS": "150", "NO_COLOR": "1"})
    assert r.code == code, r.stderr
    assert "Traceback" not in r.stderr
    assert "evil" in (r.stdout + r.stderr).lower() or "mystery" in r.stdout + r.stderr
    for stream in (r.stdout, r.stderr):
        assert "\x1b" not in stream and "\x07" not in stream, stream[:2000]


@pytest.mark.parametrize(
    "char", ["\u200d", "\u200b", "\u00ad", "\u2060", "\ufeff", "\u202e", "\u2066", "\U000e0001"]
)
def test_format_characters_in_a_name_are_escaped(char: str) -> None:
    """A zero-width joiner (any Unicode format character, category Cf) was echoed raw in the error line,
    so the name shown looked like the one the catalog holds (issue 18)."""
    code = ord(char)
    escape = f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"
    for args in (["fit", f"Qwen{char}3-8B"], ["fit", "Qwen3-8B", "--gpu", f"H1{char}00"]):
        r = run_in_process(*args)
        assert_one_line_error(r, escape)
        assert char not in r.stderr


def test_bad_quant_method_with_escapes_is_one_safe_line(tmp_path: Path) -> None:
    config = catalog_config("Qwen3-8B") | {"quantization_config": {"quant_method": f"x{ESC}"}}
    r = run_in_process("fit", str(write_config(tmp_path, config)))
    assert_one_line_error(r, "quant_method")
    assert "\x1b" not in r.stderr


def test_markdown_and_html_escape_the_model_id(tmp_path: Path) -> None:
    name = "<img src=x onerror=alert(1)>|col"
    model = write_config(tmp_path / name, catalog_config("Qwen3-8B"))
    for fmt in ("markdown", "html"):
        r = run_in_process("quote", str(model), "--gpu", "H100", "--format", fmt)
        assert r.code in (0, 1), r.stderr
        assert not re.search(r"(?<!\\)<img", r.stdout), r.stdout[:1000]  # Markdown: `\<img` is text


# --------------------------------------------------------------------------- user catalogs


def _gpu_entry(**changes: Any) -> dict[str, Any]:
    entry = json.loads(_hostile_gpus_file_text())
    entry.update(changes)
    return entry


def _hostile_gpus_file_text() -> str:
    return json.dumps(
        {
            "name": "MYGPU",
            "full_name": "My GPU",
            "vendor": "NVIDIA",
            "segment": "datacenter",
            "architecture": "hopper",
            "memory_type": "HBM3",
            "marketing_memory_gb": 80,
            "memory_mib": 81559,
            "ecc": "on",
            "interconnect": "nvswitch",
            "bandwidth_gbps": 3350,
            "source": "test",
        }
    )


@pytest.mark.parametrize(
    "text, fragment",
    [
        (json.dumps([_gpu_entry(memory_mib="80000")]), "memory_mib"),
        (json.dumps([_gpu_entry(memory_mib=True)]), "memory_mib"),
        (json.dumps([_gpu_entry(cuda_visible_gib=200)]), "cuda_visible_gib"),
        (json.dumps([_gpu_entry(memory_mib=-1)]), "memory_mib"),
        (json.dumps([_gpu_entry()]).replace("3350", ".inf"), "finite"),
        (json.dumps([_gpu_entry(price_usd_per_hour=1)]).replace(": 1}", ": .inf}"), "finite"),
        ("- &a [1]\n- *a\n" + "x: " * 0, "expected a mapping"),
    ],
)
def test_user_gpu_catalog_is_strict(tmp_path: Path, text: str, fragment: str) -> None:
    path = tmp_path / "gpus.yaml"
    path.write_text(text)
    r = run_in_process("fit", "Qwen3-8B", "--gpu", "MYGPU", "--gpus-file", str(path), "--json")
    assert_one_line_error(r, fragment)


def test_non_utf8_user_catalog_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "gpus.yaml"
    path.write_bytes(b"- name: \xff\xfe\n")
    assert_one_line_error(run_in_process("gpus", "--gpus-file", str(path)), "UTF-8")


def test_yaml_alias_bomb_is_refused_quickly(tmp_path: Path) -> None:
    lines = ["a: &a [x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 12):
        lines.append(f"{chr(97 + i)}: &{chr(97 + i)} [{', '.join(['*' + chr(96 + i)] * 9)}]")
    path = tmp_path / "models.yaml"
    path.write_text("- " + "\n  ".join(lines) + "\n")
    started = time.monotonic()
    assert_one_line_error(run_in_process("models", "--models-file", str(path)), "expands")
    assert time.monotonic() - started < 10


def test_one_broken_catalog_model_does_not_break_which(tmp_path: Path) -> None:
    broken = {
        "name": "Broken-1B",
        "hf_id": "acme/broken-1b",
        "source": "test",
        "config": catalog_config("Qwen3-0.6B") | {"intermediate_size": -5},
    }
    path = tmp_path / "models.yaml"
    path.write_text(json.dumps([broken]))
    r = run_in_process("which", "--gpu", "H100", "--models-file", str(path), "--json")
    data = assert_sane_answer(r)
    assert r.code == 0 and any(m["fits"] for m in data["models"])
    assert "Broken-1B" in r.stderr and r.stderr.startswith("gpusize: warning:")
    assert any("Broken-1B" in note for note in data["assumptions"]["notes"])


# --------------------------------------------------------------------------- messages


def test_no_arguments_prints_help_on_stdout_and_exits_0() -> None:
    r = run_in_process()
    assert r.code == 0 and "Usage" in r.stdout and "fit" in r.stdout and r.stderr == ""


@pytest.mark.parametrize("command", ["fit", "curve", "serve", "quote", "train", "which", "models", "gpus"])
def test_bad_columns_falls_back_to_80(command: str) -> None:
    args = {
        "fit": ["fit", "Qwen3-8B", "--gpu", "H100"],
        "curve": ["curve", "Qwen3-8B"],
        "serve": ["serve", "Qwen3-8B", "--users", "8"],
        "quote": ["quote", "Qwen3-8B"],
        "train": ["train", "Qwen3-8B", "--method", "lora", "--gpu", "H100"],
        "which": ["which", "--gpu", "H100"],
        "models": ["models"],
        "gpus": ["gpus"],
    }[command]
    for columns in ("abc", "-5", "0", "99999999999999999999", ""):
        r = run_in_process(*args, env={"COLUMNS": columns})
        assert r.code in (0, 1), (columns, r.stderr)
        assert r.stdout and "Traceback" not in r.stderr


@pytest.mark.parametrize(
    "base, drop, fragment",
    [
        ("Qwen3-Next-80B-A3B-Instruct", "linear_num_value_heads", "'linear_num_value_heads'"),
        ("Nemotron-H-56B-Base-8K", "mamba_num_heads", "'mamba_num_heads'"),
    ],
)
def test_recurrent_layers_without_their_dimensions(
    tmp_path: Path, base: str, drop: str, fragment: str
) -> None:
    """Found by the fuzz suite: a layout of linear-attention (or Mamba) layers whose defining field was
    dropped reached an assert in the parameter count (exit 3)."""
    config = catalog_config(base)
    config.pop(drop)
    assert_one_line_error(run_in_process("fit", str(write_config(tmp_path, config)), "--json"), fragment)


def test_yaml_python_tags_are_refused(tmp_path: Path) -> None:
    marker = tmp_path / "PWNED"
    path = tmp_path / "models.yaml"
    path.write_text(f'- !!python/object/apply:os.system ["touch {marker}"]\n')
    assert_one_line_error(run_in_process("models", "--models-file", str(path)), "not valid YAML")
    assert not marker.exists()


def test_local_remote_code_is_never_run(tmp_path: Path) -> None:
    config = catalog_config("Qwen3-8B") | {"auto_map": {"AutoModelForCausalLM": "modeling_evil.Evil"}}
    folder = tmp_path / "model"
    write_config(folder, config)
    marker = tmp_path / "PWNED"
    (folder / "modeling_evil.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    (folder / "configuration_evil.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    r = run_in_process("fit", str(folder), "--gpu", "H100", "--json")
    assert r.code == 0, r.stderr
    assert not marker.exists()
