"""CPU seconds of commands, before and after a change, as paired ratios against the bare-import floor
(issue 24): for commands too long for callgrind (`train --seq 128k`) and for the large user catalogs.

Each round runs, as fresh processes, `python -c "import typer, rich, pydantic, yaml"` (the floor), the
command with the sources of REV (`git archive` into a temporary folder) and with this checkout, all
with compiled .pyc files and a warm catalog cache; a run's CPU time is its user + system time
(os.wait4), steadier than the wall clock on a shared machine. Reported: the median of each and the
median of the per-round ratios command / floor.

Commands: `train 128k` (train Qwen3-8B --method full --seq 128k -q), `which` (the bundled catalog),
`which 10k` (a 10,000-model user catalog, bench/bench_catalog.py's entries: one config under
10,000 names), `which 10k distinct` (10,000 configs, each its own MLP width), `quote 1k` (Llama-3.3-70B
over 1,000 user GPU types: copies of H100-SXM under new names), `quote 1k distinct` (1,000 types, each
its own memory, bandwidth and price). `which` and `which 10k` are `-q` (the exit code alone, which
plans only until a model fits); `which table` and `which 10k table` print the whole answer (every
model planned).

Usage: python bench/bench_cpu.py REV [ROUNDS] [NAME ...]     (figures in bench/RESULTS.md)
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BARE = ["-c", "import typer, rich, pydantic, yaml"]
#: User catalog entries for `which 10k` and `quote 1k`.
MODELS, GPUS = 10_000, 1_000


def commands(folder: Path) -> dict[str, list[str]]:
    models, gpus = str(folder / "models.yaml"), str(folder / "gpus.yaml")
    distinct = str(folder / "distinct.yaml")
    return {
        "train 128k": ["train", "Qwen3-8B", "--method", "full", "--seq", "128k", "-q"],
        "which": ["which", "--gpu", "RTX4090", "--gpus", "2", "--ctx", "32k", "-q"],
        "which table": ["which", "--gpu", "RTX4090", "--gpus", "2", "--ctx", "32k"],
        "which 10k": ["which", "--gpu", "L4", "--models-file", models, "-q"],
        "which 10k table": ["which", "--gpu", "L4", "--models-file", models],
        "which 10k distinct": ["which", "--gpu", "L4", "--models-file", distinct, "-q"],
        "quote 1k": [
            "quote",
            "Llama-3.3-70B",
            "--ctx",
            "32k",
            "--gpus-file",
            gpus,
            *(arg for i in range(GPUS) for arg in ("--gpu", f"Card-{i}")),
        ],
        "quote 1k distinct": [
            "quote",
            "Llama-3.3-70B",
            "--ctx",
            "32k",
            "--gpus-file",
            str(folder / "distinct-gpus.yaml"),
            *(arg for i in range(GPUS) for arg in ("--gpu", f"Var-{i}")),
        ],
    }


def cpu(argv: list[str], src: Path, cache: Path) -> float:
    """User + system CPU seconds of one fresh process."""
    env = {**os.environ, "PYTHONPATH": str(src), "GPUSIZE_CACHE_DIR": str(cache), "NO_COLOR": "1"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    proc = subprocess.Popen(
        [sys.executable, *argv],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd=tempfile.gettempdir(),  # not the checkout: `-m` would import its gpusize first
    )
    _, _, usage = os.wait4(proc.pid, 0)
    return usage.ru_utime + usage.ru_stime


def write_catalogs(folder: Path) -> None:
    """MODELS copies of the bundled Qwen3-8B (bench/bench_catalog.py's entries) and GPUS copies of
    data/gpus.yaml's H100-SXM entry, under new names."""
    import yaml

    sys.path.insert(0, str(ROOT / "bench"))
    from bench_catalog import write_catalogs as write

    write(folder, MODELS)
    from dataclasses import asdict

    from gpusize.sources.catalog import Catalogs

    model = asdict(Catalogs().find_model("Qwen3-8B"))
    distinct = [  # each config its own (a different MLP width): nothing shared between entries
        {
            **model,
            "name": f"d-{i}",
            "hf_id": f"acme/d-{i}",
            "aliases": [],
            "config": {**model["config"], "intermediate_size": 4096 + 16 * i},
        }
        for i in range(MODELS)
    ]
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    (folder / "distinct.yaml").write_text(yaml.dump(distinct, Dumper=dumper, sort_keys=False))
    bundled = yaml.safe_load((ROOT / "data" / "gpus.yaml").read_text())
    h100 = next(g for g in bundled if g["name"] == "H100-SXM")
    gpus = [{**h100, "name": f"Card-{i}", "aliases": [f"card{i}-alt"]} for i in range(GPUS)]
    (folder / "gpus.yaml").write_text(yaml.safe_dump(gpus, sort_keys=False))
    distinct_gpus = [  # each type its own memory, bandwidth and price: no two share a plan
        {
            **h100,
            "name": f"Var-{i}",
            "aliases": [],
            "memory_mib": 40_000 + 97 * i,
            "cuda_visible_gib": None,
            "bandwidth_gbps": 1_500 + 3 * i,
            "price_usd_per_hour": round(1.0 + 0.01 * i, 2),
        }
        for i in range(GPUS)
    ]
    (folder / "distinct-gpus.yaml").write_text(yaml.safe_dump(distinct_gpus, sort_keys=False))


def main() -> None:
    rev = sys.argv[1]
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    names = sys.argv[3:]
    with tempfile.TemporaryDirectory() as tmp:
        folder, base, cache = Path(tmp), Path(tmp) / "base", Path(tmp) / "cache"
        base.mkdir()
        write_catalogs(folder)
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev], capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", str(base)], input=archive.stdout, check=True)
        for src in (base, ROOT):
            subprocess.run([sys.executable, "-m", "compileall", "-q", str(src / "gpusize")], check=True)
        chosen = {k: v for k, v in commands(folder).items() if not names or k in names}
        for src in (base, ROOT):  # warm the caches (catalogs, user catalogs), as an earlier run would
            for args in chosen.values():
                cpu(["-m", "gpusize", *args], src, cache)
        print(f"rounds={rounds}, python {sys.version.split()[0]}, before = {rev}")
        for name, args in chosen.items():
            floor, before, after, r_before, r_after = [], [], [], [], []
            for _ in range(rounds):
                floor.append(cpu(BARE, ROOT, cache))
                before.append(cpu(["-m", "gpusize", *args], base, cache))
                after.append(cpu(["-m", "gpusize", *args], ROOT, cache))
                r_before.append(before[-1] / floor[-1])
                r_after.append(after[-1] / floor[-1])
            med = statistics.median
            print(
                f"{name:10} floor {med(floor):.3f} s  before {med(before):.3f} s (x{med(r_before):.2f})  "
                f"after {med(after):.3f} s (x{med(r_after):.2f})  after/before {med(after) / med(before):.3f}"
            )


if __name__ == "__main__":
    main()
