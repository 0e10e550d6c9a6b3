"""The rule behind quote's shared plans (serving/plan_key.py): a GPU type whose plan_key matches an
earlier one gets that plan labeled with its own name and prices, which must be exactly the option the
full evaluation of its own GpuSpec gives; and a GPU differing in any field a plan reads (or in a name
that a table keyed by name knows) gets a plan of its own."""

from __future__ import annotations

from dataclasses import Field, fields

import pytest

from gpusize.core.engines import engine, on_gpu
from gpusize.core.gpu import GpuSpec
from gpusize.core.network import default_link
from gpusize.dataclass import replace
from gpusize.serving.layouts import Demand
from gpusize.serving.moe_config import tuned_config
from gpusize.serving.plan_key import PLAN_FIELDS, plan_key
from gpusize.serving.quote import Plans, for_load, option_for
from gpusize.serving.throughput import SM_COUNT, sm_count
from gpusize.sources.catalog import Catalogs
from tests.helpers import catalog_spec, workload

_CATALOG = Catalogs()
#: Every bundled GPU and a few MIG slices (whose refusals quote their name).
GPUS = (*_CATALOG.gpus(), *_CATALOG.mig_gpus()[:4])
_LABELS = [f for f in fields(GpuSpec) if not f.metadata.get("plan", True)]


def _other(f: Field[object], gpu: GpuSpec) -> object:
    """A value of a label field (`"plan": False`) unlike the GPU's own, by the field's type."""
    kind = str(f.type)
    if kind.startswith("float"):
        value = getattr(gpu, f.name)
        return 7.25 if value is None else value * 1.5  # another price, or a price where there was none
    if kind.startswith("tuple"):
        return ("another-alias",)
    return f"{getattr(gpu, f.name)}-elsewhere"


def relabeled(gpu: GpuSpec) -> GpuSpec:
    """The GPU under another name, aliases, provenance and prices: every label field changed."""
    return replace(gpu, **{f.name: _other(f, gpu) for f in _LABELS})


def test_plan_fields_are_every_field_but_the_labels() -> None:
    names = {f.name for f in fields(GpuSpec)}
    assert set(PLAN_FIELDS) == names - {f.name for f in _LABELS}
    assert {"name", "aliases", "price_usd_per_hour", "purchase_price_usd", "catalog_file"} <= names - set(
        PLAN_FIELDS
    )
    assert {"full_name", "memory_mib", "bandwidth_gbps", "free_mib", "mig_profile"} <= set(PLAN_FIELDS)


@pytest.mark.parametrize("name", [f.name for f in fields(GpuSpec)])
def test_any_field_a_plan_reads_is_not_shared(name: str) -> None:
    """A GPU with one field changed shares the key only where that field is a label."""
    h100 = _CATALOG.find_gpu("H100-SXM")
    card = replace(h100, name="Card-0")  # a name no table knows
    changed = replace(card, **{name: object()})
    assert (plan_key(changed) == plan_key(card)) is (name not in PLAN_FIELDS)


def test_a_name_a_table_knows_is_part_of_the_key() -> None:
    h100 = _CATALOG.find_gpu("H100-SXM")
    assert h100.name in SM_COUNT
    assert plan_key(replace(h100, name="Card-0")) != plan_key(h100)
    assert plan_key(replace(h100, name="Card-0")) == plan_key(replace(h100, name="Card-1"))


def test_every_lookup_by_name_answers_alike_where_the_keys_match() -> None:
    """The functions that look a GPU's name up (serving/gpu_tables.NAME_KEYED's readers) answer the
    same for a relabeled GPU wherever its key matches the original's."""
    spec = catalog_spec("Qwen3-30B-A3B")
    work = workload(spec, 8192)

    def answers(gpu: GpuSpec) -> tuple[object, ...]:
        return sm_count(gpu), tuned_config(spec, work, gpu, 1), default_link(gpu)

    known = 0
    for gpu in GPUS:
        copy = relabeled(gpu)
        if plan_key(copy) == plan_key(gpu):
            assert answers(copy) == answers(gpu), gpu.name
        else:
            known += 1
    assert known >= len(SM_COUNT)


def test_a_mig_slice_is_keyed_by_its_name() -> None:
    """A slice's refusal of tensor parallel quotes its name, so slices under two names share no plan."""
    spec = catalog_spec("Qwen3-8B")
    work = workload(spec, 8192)
    piece = _CATALOG.mig_gpus()[0]
    copy = relabeled(piece)
    reason = engine("vllm").evaluate(spec, piece, 2, work).reason
    assert reason is not None and piece.name in reason
    assert engine("vllm").evaluate(spec, copy, 2, work).reason != reason
    assert plan_key(copy) != plan_key(piece)


@pytest.mark.parametrize("engine_name", ["vllm", "sglang"])
@pytest.mark.parametrize("model", ["Qwen3-8B", "Qwen3-30B-A3B"])
def test_a_shared_plan_is_the_full_evaluation(model: str, engine_name: str) -> None:
    """Every bundled GPU, then itself relabeled through the same `plans`: the relabeled one's option
    (and its option for a load of users) is the one planned from scratch on its own GpuSpec; shared
    exactly when the keys match."""
    spec = catalog_spec(model)
    work = workload(spec, 8192, engine_name=engine_name)
    demand = Demand(users=1)
    shared_any = False
    for gpu in GPUS:
        for copy in (relabeled(gpu), replace(gpu, name=f"{gpu.name}-copy", aliases=())):  # the same price
            same = plan_key(copy) == plan_key(gpu)
            shared_any |= same
            plans: Plans = {}
            option_for(spec, gpu, on_gpu(spec, gpu, work), demand, plans=plans)
            got = option_for(spec, copy, on_gpu(spec, copy, work), demand, plans=plans)
            assert got == option_for(spec, copy, on_gpu(spec, copy, work), demand), gpu.name
            assert got.gpu == copy.name
            assert len([k for k in plans if k[0] == "option"]) == (1 if same else 2), gpu.name
            loads: Plans = {}
            for_load(spec, gpu, on_gpu(spec, gpu, work), 40, plans=loads)
            got = for_load(spec, copy, on_gpu(spec, copy, work), 40, plans=loads)
            assert got == for_load(spec, copy, on_gpu(spec, copy, work), 40), gpu.name
            assert len([k for k in loads if k[0] == "load"]) == (1 if same else 2), gpu.name
    assert shared_any
