"""`Catalogs.found_gpus` (the names of a quote over many user GPU types looked up together) finds what
`find_gpu` finds for every name it answers, and leaves the others (a MIG slice, a raised share, an
unknown name, the bundled catalog alone) to find_gpu."""

from __future__ import annotations

from pathlib import Path

import yaml

from gpusize.sources import catalog
from gpusize.sources.catalog import Catalogs


def _file(tmp_path: Path) -> Path:
    rows = yaml.safe_load((catalog.data_dir() / "gpus.yaml").read_text())
    h100 = next(r for r in rows if r["name"] == "H100-SXM")
    mine = [{**h100, "name": f"Mine-{i}", "aliases": [f"mine{i}-alt"]} for i in range(3)]
    shadow = {**h100, "name": "L4", "aliases": []}  # a user entry that replaces a bundled one
    path = tmp_path / "my-gpus.yaml"
    path.write_text(yaml.safe_dump([*mine, shadow], sort_keys=False))
    return path


def test_found_gpus_is_find_gpu(tmp_path: Path) -> None:
    cats = Catalogs.with_env(gpus_files=[_file(tmp_path)])
    names = ["Mine-0", "mine1-alt", "MINE2", "Mine-1", "L4", "H100", "h100sxm", "A100-80GB"]
    others = ["H100-SXM-MIG-3g.40gb", "DGX-Spark-raised", "NoSuchCard"]
    found = cats.found_gpus(names + others)
    assert found[: len(names)] == [cats.find_gpu(n) for n in names]
    assert found[0] is not None and found[0].catalog_file is not None
    assert found[len(names) :] == [None] * len(others)


def test_the_bundled_catalog_alone_is_left_to_find_gpu() -> None:
    assert Catalogs().found_gpus(["H100", "L4"]) == [None, None]
