"""Benchmark: cold `gpusize fit Qwen3-32B --ctx 32k` against a bare import of its dependencies.

Runs both commands alternately N times in fresh processes and prints medians and their ratio.
Usage: python bench/bench_cli.py [N]   (default 21). Record results in bench/RESULTS.md.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time

FIT = [sys.executable, "-m", "gpusize", "fit", "Qwen3-32B", "--ctx", "32k"]
BARE = [sys.executable, "-c", "import typer, rich, pydantic, yaml"]


def wall(cmd: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - start


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 21
    fit, bare = [], []
    for _ in range(n):
        fit.append(wall(FIT))
        bare.append(wall(BARE))
    f, b = statistics.median(fit), statistics.median(bare)
    print(
        f"runs={n} fit_median={f * 1000:.0f}ms bare_import_median={b * 1000:.0f}ms "
        f"ratio={f / b:.2f} (target <= 1.3)"
    )


if __name__ == "__main__":
    main()
