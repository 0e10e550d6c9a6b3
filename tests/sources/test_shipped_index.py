"""A bundled model or GPU named on the command line is found through the shipped file's name index
(sources/shipped.py), decoding its row alone: the entry is the one the whole merged catalog finds, for
every name, alias and Hub id of every entry, and anything the index cannot answer falls back to it."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusize.errors import UnknownNameError
from gpusize.sources import catalog, catalog_cache, shipped
from gpusize.sources.catalog import Catalogs

MODELS = catalog.load_models()
GPUS = catalog.load_gpus()


def _whole(kind: str, name: str) -> object:
    """What the merged catalog answers, without the index."""
    if kind == "models":
        return catalog._lookup("model", name, Catalogs().models(), catalog._model_keys)
    return catalog._lookup("GPU", name, Catalogs().gpus(), catalog._gpu_keys)


def _spellings(name: str) -> list[str]:
    return [name, name.upper(), name.lower().replace("-", "_"), name.replace("-", " "), f" {name} "]


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.name)
def test_every_name_of_every_model_finds_what_the_whole_catalog_finds(model: catalog.CatalogModel) -> None:
    for name in (model.name, model.hf_id, *model.aliases):
        for spelled in _spellings(name):
            found = catalog._bundled("models", (spelled,))
            assert found is not None, spelled
            assert catalog._model(found) == _whole("models", spelled) == Catalogs().find_model(spelled)


@pytest.mark.parametrize("gpu", GPUS, ids=lambda g: g.name)
def test_every_name_of_every_gpu_finds_what_the_whole_catalog_finds(gpu: catalog.GpuSpec) -> None:
    for name in (gpu.name, *gpu.aliases):
        for spelled in _spellings(name):
            found = catalog._bundled("gpus", (spelled,))
            assert found is not None, spelled
            assert catalog._gpu(found) == _whole("gpus", spelled) == Catalogs().find_gpu(spelled)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-_ ./", min_size=1, max_size=20))
def test_any_name_is_answered_as_the_whole_catalog_answers(name: str) -> None:
    # Found through the index or not, the answer (an entry or "unknown") is the whole catalog's.
    for kind, find in (("models", Catalogs().find_model), ("gpus", Catalogs().find_gpu)):
        try:
            expected: object = _whole(kind, name)
        except UnknownNameError:
            expected = None
        row = catalog._bundled(kind, (name,))
        if row is not None:
            assert (catalog._model(row) if kind == "models" else catalog._gpu(row)) == expected
        elif expected is not None:
            pytest.fail(f"{name!r}: the index misses what the catalog finds")
        if kind == "models" and expected is not None:
            assert find(name) == expected


def test_an_org_id_whose_short_name_is_bundled_is_found() -> None:
    assert Catalogs().find_model("someone-else/Qwen3-8B").name == "Qwen3-8B"


def test_an_unusable_shipped_file_gives_no_index(tmp_path: Path) -> None:
    path = catalog.data_dir() / "models.yaml"
    types = catalog.row_types_of("models")
    digest = catalog_cache.digest_of(path.read_bytes())
    assert shipped.indexed(path, "models", digest, types) is not None
    assert shipped.indexed(path, "models", "0" * 64, types) is None  # made from other bytes
    assert shipped.indexed(path, "gpus", digest, catalog.row_types_of("gpus")) is None  # other kind
    assert shipped.indexed(tmp_path / "models.yaml", "models", digest, types) is None  # none beside it
    for broken in (b"", b"{}\n]}\n", b'{"format":5,"rows":[\n]}\n', b"not json" + b',"rows":[\n]}\n'):
        (tmp_path / "models.validated.json").write_bytes(broken)
        assert shipped.indexed(tmp_path / "models.yaml", "models", digest, types) is None
