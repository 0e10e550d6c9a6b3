"""`which` plans each distinct config once (issue 24): the rows of a catalog with repeated configs
(copies of the bundled models under other names, families and release months) are those of planning
every entry in full, for a sample of GPU types, GPU counts and contexts, over every bundled model."""

from __future__ import annotations

import pytest

from gpusize.core.workload import Request
from gpusize.serving.which import CatalogEntry, fit_one, models_that_fit, rank
from gpusize.sources.catalog import find_gpu, load_models

#: (GPU, count, context tokens, sort): a consumer card, a datacenter one on 8, a MIG slice, a long
#: context, the speed order.
QUERIES = [
    ("RTX4090", 2, 32_768, "capability"),
    ("H100", 8, 131_072, "capability"),
    ("L4", 1, 8_192, "speed"),
    ("A100-80GB", 4, 1_048_576, "capability"),
]


def _entries() -> list[CatalogEntry]:
    bundled = [CatalogEntry(m.name, m.hf_id, m.config, m.family, m.released) for m in load_models()]
    copies = [
        CatalogEntry(f"copy-{i}-{e.name}", f"acme/copy-{i}", e.config, "acme", "2027-01" if i % 2 else None)
        for i, e in enumerate(bundled[::5])
    ]
    # interleaved: a copy may come before the entry it copies
    return [e for pair in zip(copies, bundled, strict=False) for e in pair] + bundled[len(copies) :]


@pytest.mark.parametrize(("gpu_name", "count", "ctx", "sort"), QUERIES)
def test_shared_configs_give_the_rows_of_the_full_evaluation(
    gpu_name: str, count: int, ctx: int, sort: str
) -> None:
    entries = _entries()
    gpu, request = find_gpu(gpu_name), Request(context_tokens=ctx)
    full = rank([fit_one(e, gpu, count, request) for e in entries], sort)  # type: ignore[arg-type]
    assert models_that_fit(entries, gpu, count, request, sort) == full  # type: ignore[arg-type]
    assert len({e.name for e in entries}) == len(entries) > len(load_models())
