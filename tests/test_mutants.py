"""The mutants of bench/mutate.py follow the code: each one's original snippet occurs exactly once in
its file, so a change to a rule the mutation run covers fails here, at once, and not minutes into the
next run (seven mutants of core/weights.py and five of core/kvcache.py went stale unnoticed)."""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

from tests.conftest import ROOT


def _mutate() -> ModuleType:
    spec = importlib.util.spec_from_file_location("mutate", ROOT / "bench" / "mutate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["mutate"] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_every_mutant_matches_its_file_once() -> None:
    mutate = _mutate()
    assert mutate.stale(list(range(1, len(mutate.MUTANTS) + 1))) == []
