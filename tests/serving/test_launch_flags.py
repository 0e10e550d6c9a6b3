"""Every flag of every launch command gpusize can print exists, with a legal value, in the engine
release the command names: each command is built for every release gpusize models
(core/releases.py; llama.cpp's one modelled commit) over the combinations of weight dtype, KV dtype,
bitsandbytes, engine settings, rope override, revision and GPU (with and without bf16), split with
shlex, and checked word by word against the releases' argument definitions recorded in
tests/data/engine_flags.yaml (with their upstream source)."""

from __future__ import annotations

import itertools
import json
import shlex
from dataclasses import replace
from functools import cache
from typing import Any

import pytest
import yaml

from gpusize.core.engines import engine as engine_model
from gpusize.core.engines.llamacpp import VERSION as LLAMACPP_VERSION
from gpusize.core.gpu import GpuSpec
from gpusize.core.parse import with_rope_scaling
from gpusize.core.releases import SGLANG, VLLM, Releases, Version, parse_version
from gpusize.core.settings import EngineSettings, declared
from gpusize.core.spec import ModelSpec
from gpusize.core.workload import Workload
from gpusize.errors import InputError
from gpusize.serving.launch import half_precision, llamacpp_command, sglang_command, vllm_command
from gpusize.sources.catalog import find_gpu
from tests.conftest import FIXTURES
from tests.helpers import catalog_spec, workload

Table = dict[str, Any]


@cache
def table() -> Table:
    data: Table = yaml.safe_load((FIXTURES / "engine_flags.yaml").read_text())
    return data


def _version(text: str | None) -> Version | None:
    return parse_version(text) if text else None


def _era(eras: list[Table], release: Version | None) -> Table | None:
    """The definition of a flag in `release` (None: an engine whose releases are not told apart)."""
    for era in eras:
        since, until = _version(era.get("since")), _version(era.get("until"))
        if release is None or ((since is None or since <= release) and (until is None or release < until)):
            return era
    return None


def _value_problem(era: Table, value: str) -> str | None:
    kind = era["kind"]
    try:
        if kind == "int":
            int(value)
        elif kind == "float":
            number = float(value)
            if not era.get("min", -1e300) <= number <= era.get("max", 1e300):
                return f"{value} outside [{era.get('min')}, {era.get('max')}]"
        elif kind == "json":
            if not isinstance(json.loads(value), dict):
                return f"{value!r} is not a JSON object"
        elif kind == "choice" and value not in era["choices"]:
            return f"{value!r} not among {era['choices']}"
    except ValueError:
        return f"{value!r} is not a {kind}"
    if kind in ("str", "path") and value.startswith("-"):
        return f"{value!r} would be read as an option"
    return None


def problems(engine: str, command: str, release: Version | None) -> list[str]:
    """What in `command` does not exist in `release` of `engine` (empty when every word does)."""
    spec = table()[engine]
    words = shlex.split(command)
    out: list[str] = []
    while words and "=" in words[0] and not words[0].startswith("-"):
        name, value = words.pop(0).split("=", 1)
        era = _era(spec.get("env", {}).get(name, []), release)
        if era is None or value not in era["choices"]:
            out.append(f"environment {name}={value} unknown in {release}")
    program = spec["program"]
    if words[: len(program)] != program:
        return [*out, f"does not start with {' '.join(program)}"]
    words = words[len(program) :]
    if spec["positional"]:
        model = words.pop(0)
        if model.startswith("-"):
            out.append(f"model {model!r} would be read as an option")
    i = 0
    while i < len(words):
        flag = words[i]
        era = _era(spec["flags"].get(flag, []), release)
        if era is None:
            out.append(f"{flag} does not exist in {engine} {release}")
            i += 1
            continue
        if era["kind"] == "switch":
            i += 1
            continue
        if i + 1 >= len(words):
            out.append(f"{flag} has no value")
            break
        problem = _value_problem(era, words[i + 1])
        if problem:
            out.append(f"{flag} {problem} in {engine} {release}")
        i += 2
    return out


DTYPES = ("auto", "fp32", "bf16", "fp16", "fp8", "int4", "int8")
KV_DTYPES = ("auto", "fp8", "fp16")
GPUS = ("H100", "T4")


#: A legal value of each kind, for every declared setting a launch command may carry.
_SAMPLE = {"bool": True, "int": 64, "float": 4.0}


def _every_setting(engine: str) -> dict[str, object]:
    """Every setting of `engine` that its launch command carries (core/settings/), set: a new
    declared flag is checked against the flag table without editing this test."""
    out: dict[str, object] = {}
    for name, setting in declared():
        if engine in setting.engines and name != "name":
            kind = str(EngineSettings.__dataclass_fields__[name].type).split(" ")[0]
            if setting.launch or kind == "bool":
                sample = _SAMPLE.get(kind)
                if kind == "float" and setting.high is not None:  # a ratio: legal inside its range
                    sample = min(float(setting.high), 4.0)
                if kind == "int" and setting.high is not None:  # a count with a ceiling (ranks)
                    sample = min(int(setting.high), 64)
                out[name] = sample
    return {k: v for k, v in out.items() if v is not None}


def _specs() -> list[ModelSpec]:
    spec = catalog_spec("Qwen3-8B")
    return [spec, with_rope_scaling(spec, "yarn", 4.0, 32768)]


def _workloads(engine: str) -> list[tuple[Workload, ModelSpec, GpuSpec, str | None]]:
    """Every (workload, spec, GPU, revision) a command is printed for, over one release."""
    everything = {name: _every_setting(name) for name in ("vllm", "sglang")}
    out = []
    for dtype, kv, gpu_name, full, (index, spec) in itertools.product(
        DTYPES + ("bitsandbytes",), KV_DTYPES, GPUS, (False, True), enumerate(_specs())
    ):
        settings = everything[engine] if full else {}
        if full and engine == "vllm":  # prepared at the newest release, whose flags include every one
            settings = {**settings, "version": str(VLLM.newest)}
        weight = "int4" if dtype == "bitsandbytes" else dtype
        work = workload(spec, 8192, dtype=weight, kv_dtype=kv, engine_name=engine, **settings)
        if dtype == "bitsandbytes":
            work = replace(work, load_quantization="bitsandbytes")
        gpu = find_gpu(gpu_name)
        out.append((half_precision(work, gpu), spec, gpu, "v1.0" if full or index else None))
    return out


def _releases(releases: Releases) -> list[str]:
    """The releases modelled; for SGLang (only era boundaries listed) also the releases just before a
    boundary where a flag's values change."""
    extra = (
        ["0.4.1", "0.4.1.post3", "0.4.1.post4", "0.4.1.post5", "0.4.1.post6", "0.5.2"]
        if releases is SGLANG
        else []
    )
    return [*releases.known, *extra]


def _commands(engine: str, releases: Releases) -> list[tuple[str, str]]:
    build = vllm_command if engine == "vllm" else sglang_command
    out = []
    for version in _releases(releases):
        release = releases.resolve(version)
        for work, spec, gpu, revision in _workloads(engine):
            work = replace(work, release=release)
            if engine_model(engine).refuses_context(spec, work):  # refused: no plan, no command
                continue
            launch = build("Qwen/Qwen3-8B", revision, 2, work, 0.9, spec, gpu)
            if launch.command is not None:
                out.append((version, launch.command))
    return out


def test_the_table_covers_every_release_gpusize_models() -> None:
    for engine, releases in (("vllm", VLLM), ("sglang", SGLANG)):
        first, newest = (parse_version(v) for v in table()[engine]["covers"])
        assert (first, newest) == (releases.versions[0], releases.newest), engine
    assert table()["llamacpp"]["covers"] == [LLAMACPP_VERSION.split()[0]]


def test_every_row_names_its_source() -> None:
    for engine, spec in table().items():
        for name, eras in {**spec["flags"], **spec.get("env", {})}.items():
            for era in eras:
                assert era.get("source"), f"{engine} {name}: no source"


@pytest.mark.parametrize("engine, releases", [("vllm", VLLM), ("sglang", SGLANG)])
def test_every_vllm_and_sglang_flag_exists_in_its_release(engine: str, releases: Releases) -> None:
    commands = _commands(engine, releases)
    # every release prints commands, bitsandbytes and an fp8 cache among them
    assert {v for v, _ in commands} == set(_releases(releases))
    assert any("bitsandbytes" in c for _, c in commands) and any("kv-cache-dtype" in c for _, c in commands)
    bad = {}
    for version, command in commands:
        found = problems(engine, command, parse_version(version))
        if found:
            bad.setdefault(found[0], command)
    assert not bad, bad


def test_every_llamacpp_flag_exists_in_the_modelled_release() -> None:
    spec0 = catalog_spec("Llama-3.1-8B")
    specs = [spec0, *(with_rope_scaling(spec0, kind, 4.0, 8192) for kind in ("yarn", "linear"))]
    printed = 0
    for spec, kv, fa, gpus, split, parallel in itertools.product(
        specs,
        ("auto", "fp8", "fp16", "fp32", "bf16"),
        (None, True, False),
        (1, 2),
        (None, "row", "layer"),
        (1, 4),
    ):
        try:
            work = workload(spec, 8192, kv_dtype=kv, engine_name="llamacpp", flash_attn=fa, split_mode=split)
        except InputError:  # a quantized V cache without flash attention: refused, nothing printed
            assert kv == "fp8" and fa is False
            continue
        launch = llamacpp_command("./-m.gguf", "gguf", work, 33, parallel, gpus, spec)
        assert launch.command is not None
        assert not problems("llamacpp", launch.command, None), launch.command
        printed += 1
    assert printed > 100


def test_the_check_finds_a_flag_a_release_lacks() -> None:
    """The checker has teeth: what gpusize used to print fails it."""
    old_tp = "python -m sglang.launch_server --model-path m --tp 2 --context-length 8192"
    assert problems("sglang", old_tp, parse_version("0.5.23"))
    e4m3_in_040 = "python -m sglang.launch_server --model-path m --kv-cache-dtype fp8_e4m3"
    assert problems("sglang", e4m3_in_040, parse_version("0.4.0"))
    assert not problems("sglang", e4m3_in_040, parse_version("0.4.2"))
    assert problems("vllm", "vllm serve -x --tensor-parallel-size 1", parse_version("0.19.1"))
    assert problems("llamacpp", "llama-server -m m.gguf -fa", None)
    assert problems("vllm", "vllm serve m --quantization int4", parse_version("0.19.1"))
    assert problems("vllm", "VLLM_USE_V1=0 vllm serve m", parse_version("0.11.0"))  # V0 removed
    assert not problems("vllm", "VLLM_USE_V1=0 vllm serve m", parse_version("0.10.2"))
    assert problems("vllm", "vllm serve m --enable-expert-parallel", parse_version("0.7.3"))


def test_each_settings_first_release_is_its_flags_first_release_in_the_table() -> None:
    """A setting's `since` (or its engine's `launch_since`) is the first release of its launch flag in
    the table, which bench/verify_engine_flags.py checks in the wheels: a gate later than the flag
    refuses a flag the release has, an earlier one prints a flag it lacks."""
    for name, setting in declared():
        for engine in ("vllm", "sglang"):
            if engine not in setting.engines or not setting.launch:
                continue
            eras = table()[engine]["flags"].get(setting.launch)
            assert eras, f"{setting.launch} ({engine}) not in the table"
            first = dict(setting.launch_since).get(engine) or setting.since or table()[engine]["covers"][0]  # type: ignore[call-overload]
            assert parse_version(first) == parse_version(eras[0]["since"]), (name, engine, first)
