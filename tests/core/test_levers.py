"""Each engine declares its fix-suggestion levers (EngineModel.levers, core/levers.py); the search in
core/suggest/ never compares an engine's name (STYLE.md: "An engine answers for itself")."""

from __future__ import annotations

import re

from gpusize.core.engines import ENGINE_MODULES, engine
from gpusize.core.levers import NO_LEVERS
from tests.conftest import ROOT


def test_the_search_does_not_test_engine_names() -> None:
    source = "".join(p.read_text() for p in sorted((ROOT / "gpusize" / "core" / "suggest").glob("*.py")))
    assert "model.name" not in source
    names = "|".join(ENGINE_MODULES)
    assert not re.findall(f'"(?:{names})"', source)


def test_each_engine_declares_its_levers() -> None:
    models = [engine(n) for n in ("vllm", "sglang", "llamacpp", "transformers")]
    vllm, sglang, llamacpp, hf = (m.levers for m in models)
    assert (vllm.count_flag, vllm.context_flag) == ("--tensor-parallel-size", "--max-model-len")
    assert sglang.context_flag == "--context-length"
    assert [m.quantizes_on_load for m in models] == [True, True, False, False]
    assert models[0].nodes is not None and models[1].nodes is None
    assert llamacpp.offload is not None and llamacpp.kv_note
    assert vllm.thin_margin == sglang.thin_margin == 0.03
    assert hf == NO_LEVERS
