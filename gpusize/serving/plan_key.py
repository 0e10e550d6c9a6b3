"""The GPU as a plan sees it (pure): two GPU types with the same `plan_key` get the same server plan
(the engine's fit, the layouts, the load model), so `quote` plans each distinct key once and labels
the plan with each GPU's own name and prices (serving/quote.py; a 1,000-type user catalog of one card
under many names or prices: bench/RESULTS.md, issue 24).

The fields come from GpuSpec itself: every field but those whose metadata says `"plan": False` (the
name and aliases, provenance, the prices an option takes from its own GPU). The name is a label but
for the tables keyed by it (serving/gpu_tables.py), so a name such a table knows is part of the key
(tests/serving/test_plan_key.py plans every bundled GPU under other labels, against the full
evaluation, and asks every lookup by name).
"""

from __future__ import annotations

import operator
from dataclasses import fields

from gpusize.core.gpu import GpuSpec
from gpusize.serving.gpu_tables import NAME_KEYED

__all__ = ["PLAN_FIELDS", "plan_key"]

#: The GpuSpec fields a plan reads: all but those marked `"plan": False`.
PLAN_FIELDS = tuple(f.name for f in fields(GpuSpec) if f.metadata.get("plan", True))
_plan_fields = operator.attrgetter(*PLAN_FIELDS)
#: The names some table knows (serving/gpu_tables.py): a plan of a GPU so named may differ by its name.
_KNOWN_NAMES = frozenset(name for table in NAME_KEYED for name in table)


def plan_key(gpu: GpuSpec) -> tuple[object, ...]:
    """What a plan of this GPU depends on: its PLAN_FIELDS, and its name where a plan looks the name
    up (a table of serving/gpu_tables.NAME_KEYED knows it) or a refusal may quote it (a MIG slice's
    tensor parallel: GpuSpec.one_device); None in the name's place otherwise."""
    named = gpu.name in _KNOWN_NAMES or gpu.mig_profile is not None
    return (gpu.name if named else None, *_plan_fields(gpu))
