"""Start-up benchmark: cold commands against a bare `import typer, rich, pydantic, yaml`, on an
installed wheel, as paired ratios (each command run is divided by the bare run beside it, so load on
the machine cancels out); medians over N pairs, and the peak RSS of each command.

1. Builds the wheel, installs it with pip (which compiles .pyc files, as a user's install does) into a
   fresh venv that reuses this environment's dependencies, and warms the catalog cache once.
2. For every command of COMMANDS: N alternating (command, bare import) pairs with the cache warm,
   then N with the cache off (`GPUSIZE_CACHE_DIR=""`: what a first run, or a run whose cache folder
   cannot be written, costs).
3. `which` over the whole catalog in process (the planner's own speed).

Usage: python bench/bench_cli.py [N] [NAME ...]   (issue 24's targets: warm <= 1.0, cache off <= 1.3;
peak RSS <= 45 MB)
Figures are recorded in bench/RESULTS.md.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COMMANDS = {
    "fit": ["fit", "Qwen3-32B", "--ctx", "32k"],
    "fit --json": ["fit", "Qwen3-32B", "--ctx", "32k", "--json"],
    "which": ["which", "--gpu", "RTX4090", "--gpus", "2", "--ctx", "32k"],
    "quote": ["quote", "Llama-3.3-70B", "--ctx", "32k"],
    "serve": ["serve", "Qwen3-8B", "--users", "64", "--gpu", "L40S", "--gpus", "4"],
    "curve": ["curve", "Qwen3-8B", "--gpu", "H100"],
    "train": ["train", "Qwen3-8B", "--method", "lora", "--gpu", "H100"],
    "models": ["models"],
    "gpus": ["gpus"],
}
#: Issue 24's targets: paired ratio with the cache warm, and with it off.
TARGETS = {"warm": 1.0, "cache off": 1.3}
BARE = ["-c", "import typer, rich, pydantic, yaml"]


def install(where: Path) -> Path:
    """A venv with the wheel installed and this environment's dependencies on its path."""
    dist = where / "dist"
    subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(dist), str(ROOT)],
        check=True,
        capture_output=True,
    )
    env_dir = where / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    py = env_dir / "bin" / "python"
    site = subprocess.run(
        [str(py), "-c", "import site; print(site.getsitepackages()[0])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    deps = [p for p in sys.path if p.endswith("site-packages")]
    Path(site, "_bench_deps.pth").write_text("\n".join(deps) + "\n")
    wheel = next(dist.glob("gpusize-*.whl"))
    subprocess.run([str(py), "-m", "pip", "install", "--no-deps", "-q", str(wheel)], check=True)
    return env_dir


def run_status(argv: list[str], env: dict[str, str]) -> tuple[float, int, int]:
    """(wall seconds, peak RSS in KiB, exit status) of one fresh process."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd="/")
    _, status, usage = os.wait4(proc.pid, 0)
    return time.perf_counter() - start, usage.ru_maxrss, os.waitstatus_to_exitcode(status)


def run(argv: list[str], env: dict[str, str]) -> tuple[float, int]:
    """(wall seconds, peak RSS in KiB) of one fresh process."""
    wall, rss, _ = run_status(argv, env)
    return wall, rss


def which_in_process(n: int) -> float:
    from gpusize.core.workload import Request
    from gpusize.serving.which import CatalogEntry, models_that_fit
    from gpusize.sources.catalog import Catalogs, find_gpu

    models = Catalogs().parsed_models()  # as `which` reads them: with their stored specs
    entries = [CatalogEntry(e.name, e.hf_id, e.config, e.family, e.released, e.spec) for e in models]
    gpu, request = find_gpu("RTX4090"), Request(context_tokens=32768)
    times = []
    for _ in range(n):
        start = time.perf_counter()
        models_that_fit(entries, gpu, 2, request)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def pairs(exe: str, py: str, args: list[str], env: dict[str, str], n: int) -> str:
    """One line: the command's and the bare import's medians, the paired ratio's, the peak RSS."""
    ratios, cmd_times, bare_times, rss = [], [], [], 0
    for _ in range(n):
        t_cmd, peak = run([exe, *args], env)
        t_bare, _ = run([py, *BARE], env)
        ratios.append(t_cmd / t_bare)
        cmd_times.append(t_cmd)
        bare_times.append(t_bare)
        rss = max(rss, peak)
    cmd_ms, bare_ms = statistics.median(cmd_times) * 1000, statistics.median(bare_times) * 1000
    return (
        f"median {cmd_ms:4.0f} ms, bare {bare_ms:4.0f} ms, paired ratio median "
        f"{statistics.median(ratios):.2f}, peak RSS {rss / 1024:.1f} MB"
    )


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 21
    names = sys.argv[2:] or list(COMMANDS)
    with tempfile.TemporaryDirectory() as tmp:
        env_dir = install(Path(tmp))
        py, exe = str(env_dir / "bin" / "python"), str(env_dir / "bin" / "gpusize")
        warm = {**os.environ, "GPUSIZE_CACHE_DIR": str(Path(tmp) / "cache"), "NO_COLOR": "1"}
        off = {**warm, "GPUSIZE_CACHE_DIR": ""}
        for args in COMMANDS.values():  # fill the catalog cache, as any earlier run would have
            run([exe, *args], warm)
        print(f"pairs={n}, installed wheel, python {sys.version.split()[0]}")
        for mode, env in (("warm", warm), ("cache off", off)):
            print(f"{mode} (target: paired ratio <= {TARGETS[mode]})")
            for name in names:
                print(f"  {name:11} {pairs(exe, py, COMMANDS[name], env, n)}")
    print(f"which in process over the catalog: median {which_in_process(n) * 1000:.0f} ms")


if __name__ == "__main__":
    main()
