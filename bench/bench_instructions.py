"""Instruction counts of commands (valgrind's callgrind), before and after a change: repeatable where
wall clock is not (a shared 2-core machine moves the bare import alone by 2x between runs).

For each command: the instructions of `python -m gpusize ...` with the sources of REV (exported with
`git archive` into a temporary folder) and with this checkout, both with compiled .pyc files, with
the catalog cache warm and with the cache turned off (GPUSIZE_CACHE_DIR=""; a first run, a read-only
home), and their ratio; then a bare `import typer, rich, pydantic, yaml` as the floor.

Usage: python bench/bench_instructions.py REV [NAME ...]    (figures in bench/RESULTS.md)
NAME: only these of COMMANDS (`train 128k` takes minutes under valgrind).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COMMANDS = {
    "fit": ["fit", "Qwen3-8B", "--gpu", "H100", "-q"],
    "fit --json": ["fit", "Qwen3-32B", "--ctx", "32k", "--json"],
    "which": ["which", "--gpu", "RTX4090", "--gpus", "2", "--ctx", "32k", "-q"],
    "which table": ["which", "--gpu", "RTX4090", "--gpus", "2", "--ctx", "32k"],  # every model planned
    "serve": ["serve", "Qwen3-32B", "--gpu", "H100", "--users", "20", "-q"],
    "quote": ["quote", "Llama-3.3-70B", "--ctx", "32k", "-q"],
    "curve": ["curve", "Qwen3-8B", "--gpu", "H100", "-q"],
    "models": ["models", "-q"],
    "train": ["train", "Qwen3-8B", "--method", "full", "-q"],
    "train lora": ["train", "Qwen3-8B", "--method", "lora", "--gpu", "H100", "-q"],
    "train 128k": ["train", "Qwen3-8B", "--method", "full", "--seq", "128k", "-q"],
}
BARE = ["-c", "import typer, rich, pydantic, yaml"]


def instructions(argv: list[str], src: Path, cache: str) -> int:
    env = {**os.environ, "PYTHONPATH": str(src), "GPUSIZE_CACHE_DIR": cache, "NO_COLOR": "1"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    out = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, *argv],
        env=env,
        cwd=tempfile.gettempdir(),
        capture_output=True,
        text=True,
    ).stderr
    found = re.search(r"Collected : (\d+)", out)
    return int(found.group(1)) if found else -1


def main() -> None:
    rev, names = sys.argv[1], sys.argv[2:]
    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp) / "cache"
        base = Path(tmp) / "base"
        base.mkdir()
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev], capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", str(base)], input=archive.stdout, check=True)
        for src in (base, ROOT):
            subprocess.run([sys.executable, "-m", "compileall", "-q", str(src / "gpusize")], check=True)
        commands = {k: v for k, v in COMMANDS.items() if not names or k in names}
        for src in (base, ROOT):  # warm the cache of each, as any earlier run would have
            for args in commands.values():
                subprocess.run(
                    [sys.executable, "-m", "gpusize", *args],
                    env={**os.environ, "PYTHONPATH": str(src), "GPUSIZE_CACHE_DIR": str(cache)},
                    cwd=tempfile.gettempdir(),  # not the checkout: `-m` would import its gpusize first
                    capture_output=True,
                )
        floor = instructions(BARE, ROOT, str(cache))
        print(f"bare import (floor): {floor:,} instructions")
        for name, args in commands.items():
            for label, folder in (("cache warm", str(cache)), ("cache off", "")):
                before = instructions(["-m", "gpusize", *args], base, folder)
                after = instructions(["-m", "gpusize", *args], ROOT, folder)
                ratios = f"before/floor {before / floor:.2f}  after/floor {after / floor:.2f}"
                print(
                    f"{name:11} {label:10} before {before:>15,}  after {after:>15,}  after/before "
                    f"{after / before:.3f}  {ratios}"
                )


if __name__ == "__main__":
    main()
