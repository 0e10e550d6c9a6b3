"""`gpusize batch` over 10,000 rows (issue 22: under 2 s on one core), in process.

Two files, generated in a temporary folder: 10,000 `fit` rows drawn from 8 catalog models x 5 GPUs x
4 contexts (160 distinct configurations, the shape of a fleet check), and 10,000 rows that are all
distinct (the same models and GPUs over 250 contexts x 2 batch sizes). Each is run N times through
the command (`gpusize batch FILE --format jsonl`, output discarded) in this process after one warm-up
run; the median CPU seconds (process time) is printed.

Usage: python bench/bench_batch.py [N]     (recorded in bench/RESULTS.md)
"""

from __future__ import annotations

import contextlib
import io
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

from gpusize.cli import register
from gpusize.cli.app import run_command

MODELS = ["Qwen3-32B", "Llama-3.1-8B", "Llama-3.3-70B", "Qwen3-8B", "Mistral-7B-v0.1", "gpt-oss-20b",
          "Qwen3-30B-A3B", "DeepSeek-V3"]  # fmt: skip
GPUS = ["H100", "A100-80GB", "L40S", "RTX4090", "H200"]
ROWS = 10_000


def _files(where: Path) -> dict[str, Path]:
    pick = random.Random(1)
    repeated = ["command,model,gpu,ctx"] + [
        f"fit,{pick.choice(MODELS)},{pick.choice(GPUS)},{pick.choice(['4k', '8k', '32k', '128k'])}"
        for _ in range(ROWS)
    ]
    distinct = ["command,model,gpu,ctx,batch"] + [
        f"fit,{MODELS[i % 8]},{GPUS[(i // 8) % 5]},{1024 + 64 * ((i // 40) % 250)},{1 + (i // 10_000) % 2}"
        for i in range(ROWS)
    ]
    out = {"160 distinct configurations": where / "repeated.csv", "all rows distinct": where / "distinct.csv"}
    out["160 distinct configurations"].write_text("\n".join(repeated) + "\n")
    out["all rows distinct"].write_text("\n".join(distinct) + "\n")
    return out


def _run(path: Path) -> float:
    start = time.process_time()
    with contextlib.redirect_stdout(io.StringIO()):
        run_command(["batch", str(path), "--format", "jsonl"])
    return time.process_time() - start


def main(n: int) -> None:
    register(["batch"])
    with tempfile.TemporaryDirectory() as folder:
        for name, path in _files(Path(folder)).items():
            _run(path)  # warm: imports, catalogs
            times = [_run(path) for _ in range(n)]
            print(f"{ROWS:,} rows, {name}: median {statistics.median(times):.2f} s CPU (runs: "
                  + ", ".join(f"{t:.2f}" for t in times) + ")")  # fmt: skip


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
