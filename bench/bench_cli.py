"""Benchmarks, medians over N runs (default 21); record results in bench/RESULTS.md.

1. Cold `gpusize fit Qwen3-32B --ctx 32k` against a bare `import typer, rich, pydantic, yaml`,
   alternating, in fresh processes (issue 2: target ratio <= 1.3).
2. `gpusize which`: every catalog model x one GPU type, in-process (catalog loaded) and as a cold
   command (issue 7: target < 0.5 s).
Usage: python bench/bench_cli.py [N]
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


WHICH = [sys.executable, "-m", "gpusize", "which", "--gpu", "RTX4090", "--gpus", "2", "--ctx", "32k"]


def which_in_process(n: int) -> float:
    from gpusize import catalog, plan, reverse

    entries = [(e.name, e.hf_id, e.config) for e in catalog.load_models()]
    gpu, work = catalog.find_gpu("RTX4090"), plan.Workload(32768, 1, "auto", "auto")
    times = []
    for _ in range(n):
        start = time.perf_counter()
        reverse.models_that_fit(entries, gpu, 2, work)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 21
    fit, bare, which = [], [], []
    for _ in range(n):
        fit.append(wall(FIT))
        bare.append(wall(BARE))
        which.append(wall(WHICH))
    f, b = statistics.median(fit), statistics.median(bare)
    print(
        f"runs={n} fit_median={f * 1000:.0f}ms bare_import_median={b * 1000:.0f}ms ratio={f / b:.2f} "
        f"(target <= 1.3)"
    )
    from gpusize import catalog

    models = len(catalog.load_models())
    print(
        f"which over {models} models x RTX4090 x2: in-process median {which_in_process(n) * 1000:.0f}ms, "
        f"cold command median {statistics.median(which) * 1000:.0f}ms (target < 500ms)"
    )


if __name__ == "__main__":
    main()
