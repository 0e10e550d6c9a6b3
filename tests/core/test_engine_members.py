"""An engine answers for itself (STYLE.md, "One declaration per concept"): what callers ask of an
engine is a member of its EngineModel, every member is filled consistently, and no module outside
`core/engines/` compares an engine's name with a literal or imports one engine's internals."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from gpusize.core.engines import ENGINE_MODULES, engine
from gpusize.core.registry import ENGINES
from gpusize.core.settings import ENGINE_LABELS, ENGINE_NAMES, settings_of
from gpusize.serving.launch import SERVER_COMMANDS
from tests.conftest import ROOT

PACKAGE = ROOT / "gpusize"
ENGINES_DIR = PACKAGE / "core" / "engines"
#: Modules that may still name an engine (none).
NOT_YET: set[str] = set()
#: Imports of one engine's decisions allowed outside it, each with why: the llama-server launch line
#: prints the flash-attention and cache-type choices its sizing made (one decision, read twice).
ALLOWED_IMPORTS = {("gpusize/serving/launch.py", "gpusize.core.engines.llamacpp")}


@pytest.mark.parametrize("name", ENGINE_NAMES)
def test_every_engine_fills_every_member(name: str) -> None:
    model = engine(name)
    assert model.name == name and name in ENGINE_MODULES
    assert model.label == ENGINE_LABELS[name] and model.version and model.note
    assert model.settings == settings_of(name)
    if model.pages_kv:  # a paged KV server has a budget fraction, a scheduler cap and a launch line
        assert model.budget is not None and model.max_sequences is not None
        assert name in SERVER_COMMANDS
    if model.serves:
        assert model.pages_kv or model.splits_layers
    if model.quantizes_on_load:
        assert model.pages_kv
    assert not (model.pages_kv and model.splits_layers)


def test_an_engine_is_its_module_and_its_registry_line() -> None:
    # core/registry.py is the one list of engines: --engine's choices and the settings' owners
    # come from it, and each line names the module holding that engine's EngineModel
    assert tuple(ENGINES) == ENGINE_NAMES and ENGINE_NAMES[0] == "vllm"
    for name, (module, label) in ENGINES.items():
        assert ENGINE_MODULES[name] == module and engine(name).label == label


def test_engine_capabilities_as_the_engines_document_them() -> None:
    # vLLM and SGLang serve a paged KV pool over HTTP and quantize to FP8 while loading
    # (vllm/config/cache.py, sglang/srt/server_args.py); llama.cpp's server splits by layers
    # (common/arg.cpp: -ngl, -sm), as Ollama's scheduler does (llm/memory.go: layers, the rest on the CPU);
    # transformers generate() serves nothing; trtllm-serve pages its KV cache in blocks
    # (resource_manager.py) but quantizes only at checkpoint time (ModelOpt).
    assert {n for n in ENGINE_NAMES if engine(n).pages_kv} == {"vllm", "sglang", "trtllm"}
    assert {n for n in ENGINE_NAMES if engine(n).serves} == {"vllm", "sglang", "llamacpp", "ollama", "trtllm"}
    assert {n for n in ENGINE_NAMES if engine(n).quantizes_on_load} == {"vllm", "sglang"}
    assert {n for n in ENGINE_NAMES if engine(n).splits_layers} == {"llamacpp", "ollama"}
    assert {n for n in ENGINE_NAMES if engine(n).nodes is not None} == {"vllm"}


_LITERAL = "|".join(re.escape(n) for n in ENGINE_NAMES)
#: `x == "vllm"`, `x != "llamacpp"`, `x in ("vllm", "sglang")`, `x not in (...)`.
_COMPARES = re.compile(rf"""(==|!=)\s*["']({_LITERAL})["']|\bin\s*[\(\[{{]\s*["']({_LITERAL})["']""")


def _outside_engines() -> list[Path]:
    return [p for p in PACKAGE.rglob("*.py") if ENGINES_DIR not in p.parents and p != ENGINES_DIR]


def test_no_module_outside_the_engines_compares_an_engine_name() -> None:
    found = []
    for path in _outside_engines():
        rel = str(path.relative_to(ROOT))
        if rel in NOT_YET:
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if _COMPARES.search(line):
                found.append(f"{rel}:{number}: {line.strip()}")
    assert found == []


def test_no_module_outside_the_engines_imports_one_engines_internals() -> None:
    found = []
    engine_modules = {f"gpusize.core.engines.{m}" for m in ENGINE_MODULES.values()}
    for path in _outside_engines():
        rel = str(path.relative_to(ROOT))
        if rel in NOT_YET:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            module = node.module if isinstance(node, ast.ImportFrom) else None
            inside = module and any(module == m or module.startswith(m + ".") for m in engine_modules)
            if inside and (rel, module) not in ALLOWED_IMPORTS:
                found.append(f"{rel}:{node.lineno}: from {module}")
    assert found == []


def test_the_name_check_catches_each_spelling() -> None:
    # the checker itself: each way a caller could test an engine's name is caught
    for line in (
        'if e == "vllm":',
        "if e != 'llamacpp':",
        'if e in ("vllm", "sglang"):',
        'e not in ["sglang"]',
    ):
        assert _COMPARES.search(line), line
    assert not _COMPARES.search('engine("vllm")')
