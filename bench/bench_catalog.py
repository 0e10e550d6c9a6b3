"""Catalog read benchmark: 10,000-entry user GPU and model catalogs, first read (no cache) and cached.

Generates the two files in a temp folder (copies of the bundled H100-SXM and Qwen3-8B entries under new
names), then, in a fresh Python process each time, reads the merged catalog (bundled + user file) through
`Catalogs(...).gpus()` / `.models()` and reports the process's own CPU seconds (user + system) and peak
RSS (`resource.getrusage`), once with an empty cache folder and once with the cache it wrote.

Also `which --gpu L4` over the user models (the whole command, in that process).

Usage: python bench/bench_catalog.py [ENTRIES]     (target: first read <= 1.5 CPU s and <= 150 MB)
Figures are recorded in bench/RESULTS.md.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CHILD = """
import contextlib, io, resource, sys
from pathlib import Path
from gpusize.sources.catalog import Catalogs
kind, path = sys.argv[1], Path(sys.argv[2])
if kind == "which":  # the whole command over the user models, output discarded
    from gpusize.cli import main
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            main(["which", "--gpu", "L4", "--models-file", str(path), "--json"])
    except SystemExit as done:
        assert done.code in (0, 1), done.code
    n = len(Catalogs(models_files=(path,)).models())
else:
    cats = Catalogs(gpus_files=(path,)) if kind == "gpus" else Catalogs(models_files=(path,))
    n = len(cats.gpus() if kind == "gpus" else cats.models())
u = resource.getrusage(resource.RUSAGE_SELF)
print(n, u.ru_utime + u.ru_stime, u.ru_maxrss / 1024)
"""


def write_catalogs(folder: Path, entries: int) -> dict[str, Path]:
    from gpusize.sources.catalog import Catalogs

    cats = Catalogs()
    gpu = {
        k: v for k, v in asdict(cats.find_gpu("H100-SXM")).items() if k not in ("free_mib", "catalog_file")
    }
    model = asdict(cats.find_model("Qwen3-8B"))
    gpus = [{**gpu, "name": f"Card-{i}", "aliases": [f"card{i}-alt"]} for i in range(entries)]
    models = [
        {**model, "name": f"m-{i}", "hf_id": f"acme/m-{i}", "aliases": [f"m{i}-alt"]} for i in range(entries)
    ]
    out = {"gpus": folder / "gpus.yaml", "models": folder / "models.yaml"}
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    out["gpus"].write_text(yaml.dump(gpus, Dumper=dumper, sort_keys=False))
    out["models"].write_text(yaml.dump(models, Dumper=dumper, sort_keys=False))
    return out


def measure(kind: str, path: Path, cache: Path) -> tuple[int, float, float]:
    env = {**os.environ, "GPUSIZE_CACHE_DIR": str(cache), "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", CHILD, kind, str(path)], env=env, capture_output=True, text=True, check=True
    )
    n, cpu, rss = done.stdout.split()
    return int(n), float(cpu), float(rss)


def main() -> None:
    if sys.argv[1:2] == ["--write"]:
        write_catalogs(Path(sys.argv[2]), int(sys.argv[3]))
        return
    entries = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    with tempfile.TemporaryDirectory() as tmp:
        # Written by a child process: Linux carries a parent's peak RSS into the children it forks, so
        # the parent stays small and each measured child reports its own peak.
        subprocess.run(
            [sys.executable, __file__, "--write", tmp, str(entries)],
            env={**os.environ, "GPUSIZE_CACHE_DIR": ""},
            check=True,
        )
        files = {
            "gpus": Path(tmp) / "gpus.yaml",
            "models": Path(tmp) / "models.yaml",
            "which": Path(tmp) / "models.yaml",
        }
        for kind, path in files.items():
            cache = Path(tmp) / f"cache-{kind}"
            first = measure(kind, path, cache)
            cached = measure(kind, path, cache)
            size = path.stat().st_size / 2**20
            print(
                json.dumps(
                    {
                        "kind": kind,
                        "entries": entries,
                        "file_mib": round(size, 1),
                        "merged": first[0],
                        "first_cpu_s": round(first[1], 2),
                        "first_peak_rss_mb": round(first[2], 1),
                        "cached_cpu_s": round(cached[1], 2),
                        "cached_peak_rss_mb": round(cached[2], 1),
                    }
                )
            )


if __name__ == "__main__":
    main()
