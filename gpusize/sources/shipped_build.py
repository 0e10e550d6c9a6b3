"""Regenerate the bundled catalogs' validated copies (`sources.shipped`) and the models' parsed
specs (`sources.shipped_specs`) after editing data/*.yaml or the config parser: `python -m
gpusize.sources.shipped_build` (tests/sources/test_shipped.py and test_shipped_specs.py fail until
it is run)."""

from __future__ import annotations

from gpusize.sources import catalog, catalog_cache, schema, shipped, shipped_specs

__all__ = ["main"]


def main() -> None:  # pragma: no cover - run by hand; tests/sources/test_shipped.py checks its output
    for kind in shipped.KINDS:
        path = catalog.data_dir() / f"{kind}.yaml"
        raw = path.read_bytes()
        rows = schema.validate_file(path, raw, kind)
        content = catalog.shipped_text(kind, catalog_cache.digest_of(raw), rows)
        shipped.shipped_path(path).write_text(content, encoding="utf-8")
        print(f"wrote {shipped.shipped_path(path)}")
        if kind == "models":
            specs = shipped_specs.encode(catalog.parsed_specs([r["config"] for r in rows]))
            target = shipped_specs.specs_path(path)
            target.write_text(shipped_specs.text(catalog_cache.digest_of(raw), specs), encoding="utf-8")
            print(f"wrote {target}")


if __name__ == "__main__":  # pragma: no cover
    main()
