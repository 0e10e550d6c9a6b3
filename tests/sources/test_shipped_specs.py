"""The catalog models' parsed specs stored (sources/shipped_specs.py): data/models.specs.json is what
parsing data/models.yaml yields with this parser, every stored spec is the parsed one (values and
their types), the parser's fingerprint covers every module the parser runs, and a store made from
other bytes, by another parser or of another shape is not used."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gpusize.core.parse import parse_config
from gpusize.errors import ConfigError
from gpusize.sources import catalog, catalog_cache, shipped_specs

ROOT = Path(__file__).resolve().parents[2]
BUNDLED = catalog.data_dir() / "models.yaml"


def _bundled() -> tuple[str, list[dict[str, object]]]:
    return catalog_cache.digest_of(BUNDLED.read_bytes()), catalog.validated_rows(BUNDLED, "models")


def test_the_shipped_specs_are_what_parsing_the_catalog_yields() -> None:
    digest, rows = _bundled()
    specs = catalog.parsed_specs([r["config"] for r in rows])  # type: ignore[misc]
    expected = shipped_specs.text(digest, shipped_specs.encode(specs))
    got = shipped_specs.specs_path(BUNDLED).read_text(encoding="utf-8")
    assert got == expected, "data/models.specs.json is stale: python -m gpusize.sources.shipped_build"


def test_every_stored_spec_is_the_parsed_one() -> None:
    """Equal values, and equal stored text (1, 1.0 and True are equal values of other types)."""
    digest, rows = _bundled()
    stored = shipped_specs.read(shipped_specs.specs_path(BUNDLED), digest, len(rows))
    assert stored is not None
    parsed = []
    for row in rows:
        try:
            parsed.append(parse_config(row["config"]))  # type: ignore[arg-type]
        except ConfigError:
            parsed.append(None)
    assert stored == parsed
    assert [repr(s) for s in stored] == [repr(s) for s in parsed]
    assert shipped_specs.encode(stored) == shipped_specs.encode(parsed)
    assert [m.spec for m in catalog.Catalogs().parsed_models()] == parsed


def test_the_fingerprint_covers_every_module_the_parser_imports() -> None:
    code = (
        "import sys, gpusize.core.parse\n"
        "print('\\n'.join(sorted(m.__file__ for n, m in sys.modules.items() if n.startswith('gpusize'))))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    package = ROOT / "gpusize"
    imported = {Path(f).resolve().relative_to(package).as_posix() for f in done.stdout.split()}
    # the package's lazy public API, and the generated dataclass methods (the classes' own text)
    imported -= {"__init__.py", "dataclass/compiled.py"}
    assert set(shipped_specs.PARSER_SOURCES) == imported


def test_a_store_of_other_bytes_another_parser_or_shape_is_not_used(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    digest, rows = _bundled()
    path = shipped_specs.specs_path(BUNDLED)
    assert shipped_specs.read(path, "0" * 64, len(rows)) is None  # other catalog bytes
    assert shipped_specs.read(path, digest, len(rows) + 1) is None  # another number of rows
    data = json.loads(path.read_bytes())
    foreign = tmp_path / "models.specs.json"
    for broken in (
        {**data, "objects": [["NoSuchSpec", {}], *data["objects"][1:]]},
        {**data, "objects": [[data["objects"][0][0], {"no_such_field": 1}], *data["objects"][1:]]},
        {**data, "models": [{"#": 0}] * len(rows)},
        {**data, "format": shipped_specs.SPECS_FORMAT + 1},
    ):
        foreign.write_text(json.dumps(broken))
        assert shipped_specs.read(foreign, digest, len(rows)) is None
    monkeypatch.setattr(shipped_specs, "parser_fingerprint", lambda: "another parser")
    assert shipped_specs.read(path, digest, len(rows)) is None
    # and the catalog then parses: the same specs
    catalog._parsed_of.cache_clear()
    try:
        parsed = catalog.parsed_specs([r["config"] for r in rows])  # type: ignore[misc]
        assert [m.spec for m in catalog.Catalogs().parsed_models()] == parsed
    finally:
        catalog._parsed_of.cache_clear()
