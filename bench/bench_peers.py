"""Peers on the same question (issue 24): gpusize and the other sizing CLIs on PyPI answering one
configuration, Llama-3.1-8B (bf16) at a 32k context on one H100 80GB, offline, timed in one run as
paired wall-clock ratios.

1. Builds and installs the gpusize wheel as bench_cli does (`bench_cli.install`), and each peer at its
   pinned version into a fresh venv of its own (pip, .pyc compiled). A peer whose dependencies would
   pull torch (or another framework of HEAVY) is skipped and said so; one that fails to install too.
2. Runs each tool once and prints its answer (the lines that say whether it fits, or how much memory);
   a tool that exits non-zero is reported as an error and not timed.
3. N rounds; in each, every tool as a triple (tool, floor, gpusize): the paired ratios tool/floor
   and tool/gpusize of the same round (load on the machine cancels out), their medians, the tool's
   median wall seconds, its peak RSS (os.wait4, as bench_cli) and its exit statuses. The floor is
   bench_cli's bare `import typer, rich, pydantic, yaml` in the gpusize venv.

The peers need a model config they can read offline (the Hub is not asked: HF_HUB_OFFLINE=1):
vramscout reads a local config.json (tests/data/reference/configs), llm-analysis a model config file
in its own format (written here from the same config.json), llmfit and ridgepoint their built-in
model lists (ridgepoint has no Llama-3.1-8B but `llama-3-8b`, the same shape, and reads only the
Hub otherwise). Neither llmfit nor vramscout knows an H100 by name: both take an 80 GB budget.

Usage: python bench/bench_peers.py [N]   (N rounds, default 11; figures in bench/RESULTS.md)
"""

from __future__ import annotations

import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
import venv
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from bench_cli import BARE, install, run_status

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / "tests" / "data" / "reference" / "configs" / "meta-llama__Llama-3.1-8B.json"
#: Dependencies that make a peer too heavy to install here: it is skipped, and the table says so.
HEAVY = {"torch", "tensorflow", "jax", "jaxlib", "vllm"}


@dataclass
class Tool:
    """A command line ({bin}: its venv's bin folder; {data}: the configs written for it), the pattern
    of the lines of its output that answer, and what one run measured."""

    name: str
    version: str  # the pin ("" for gpusize: the checkout's wheel)
    argv: list[str]
    answer: str
    note: str = ""  # why it was skipped or errored
    installed: str = ""
    walls: list[float] = field(default_factory=list)
    to_floor: list[float] = field(default_factory=list)
    to_gpusize: list[float] = field(default_factory=list)
    statuses: list[int] = field(default_factory=list)
    rss: int = 0


GPUSIZE = Tool(
    "gpusize",
    "",
    ["{bin}/gpusize", "fit", "Llama-3.1-8B", "--ctx", "32k", "--gpu", "H100"],
    r"\A.*?GiB per GPU",
)
PEERS = [
    Tool(
        "llm-analysis",
        "0.2.2",
        [
            "{bin}/python",
            "-m",
            "llm_analysis.analysis",
            "infer",
            "--model_name={data}/llm-analysis-Llama-3.1-8B.json",
            "--gpu_name=h100-sxm-80gb",
            "--seq_len=32768",
            "--num_tokens_to_generate=1",
            "--log_level=ERROR",
        ],
        r'"(?:weight_memory_per_gpu|kv_cache_memory_per_gpu|prefill_activation_memory_per_gpu|'
        r'prefill_max_batch_size_per_gpu)": [^,\n]+',
    ),
    Tool(
        "llmfit",
        "1.1.17",
        [
            "{bin}/llmfit",
            "--memory",
            "80G",
            "--max-context",
            "32768",
            "info",
            "meta-llama/Llama-3.1-8B",
            "--no-dashboard",
        ],
        r"Best Quant: .*|Status: .*|Memory Utilization: .*",
    ),
    Tool(
        "vramscout",
        "0.7.0",
        ["{bin}/vramscout", "{data}/Llama-3.1-8B/config.json", "--context", "32768", "--vram-gib", "80"],
        r"VRAMScout\s+.*|Model weights / rank.*|KV cache .*|Estimated peak / rank.*",
    ),
    Tool(
        "ridgepoint",
        "0.1.2",
        ["{bin}/ridgepoint", "fit", "llama-3-8b", "--gpu", "h100-80gb", "--ctx", "32768"],
        r"[✓✗]\s+.*|weights\s+fp16.*|KV pool .*",
    ),
]


def write_configs(data: Path) -> None:
    """Llama-3.1-8B's config.json (vramscout), and the same model as an llm-analysis ModelConfig: it
    counts an MLP as two matrices of ffn_embed_dim (its own Llama-2 config writes 16384 for 3 x 11008),
    so the gated MLP's three of intermediate_size are 1.5 x intermediate_size."""
    config = json.loads(CONFIG.read_text())["config"]
    (data / "Llama-3.1-8B").mkdir(parents=True)
    (data / "Llama-3.1-8B" / "config.json").write_text(json.dumps(config, indent=2))
    ffn = 3 * config["intermediate_size"] // 2
    own = {
        "name": "meta-llama_Llama-3.1-8B",
        "num_layers": config["num_hidden_layers"],
        "n_head": config["num_attention_heads"],
        "hidden_dim": config["hidden_size"],
        "vocab_size": config["vocab_size"],
        "max_seq_len": config["max_position_embeddings"],
        "num_key_value_heads": config["num_key_value_heads"],
        "ffn_embed_dim": ffn,
        "expansion_ratio": ffn / config["hidden_size"],
        "model_type": config["model_type"],
    }
    (data / "llm-analysis-Llama-3.1-8B.json").write_text(json.dumps(own, indent=2))


def last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if "is ignored" not in line]
    return lines[-1] if lines else ""


def install_peer(where: Path, tool: Tool) -> Path | None:
    """A fresh venv with the peer at its pin, or None (tool.note says why)."""
    env_dir = where / tool.name
    venv.EnvBuilder(with_pip=True).create(env_dir)
    pip = [str(env_dir / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    spec, report = f"{tool.name}=={tool.version}", where / f"{tool.name}.json"
    dry = subprocess.run([*pip, "--dry-run", "--report", str(report), spec], capture_output=True, text=True)
    if dry.returncode:
        tool.note = f"install failed: {last_line(dry.stderr)}"
        return None
    names = {item["metadata"]["name"].lower() for item in json.loads(report.read_text())["install"]}
    heavy = sorted(name for name in names if name in HEAVY or name.startswith("nvidia-"))
    if heavy:
        tool.note = f"skipped: it pulls {', '.join(heavy)}"
        return None
    done = subprocess.run([*pip, spec], capture_output=True, text=True)
    if done.returncode:
        tool.note = f"install failed: {last_line(done.stderr)}"
        return None
    return env_dir


def version_in(env_dir: Path, name: str) -> str:
    py = str(env_dir / "bin" / "python")
    code = f"import importlib.metadata as m; print(m.version({name!r}))"
    return subprocess.run([py, "-c", code], capture_output=True, text=True).stdout.strip() or "?"


def answer(tool: Tool, argv: list[str], env: dict[str, str]) -> tuple[int, str]:
    """The exit status of one run and the lines of its output that answer (or its error's last line)."""
    done = subprocess.run(argv, capture_output=True, text=True, env=env, cwd="/", timeout=300)
    if done.returncode:
        return done.returncode, last_line(done.stderr) or last_line(done.stdout)
    found = re.findall(tool.answer, done.stdout, re.S if tool is GPUSIZE else 0)
    lines = [" ".join(part.replace("│", " ").split()) for part in found]
    return 0, "; ".join(lines) or "(no answer recognised in its output)"


def statuses(codes: list[int]) -> str:
    return ", ".join(f"{code} x{count}" for code, count in sorted(Counter(codes).items()))


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 11
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        where = Path(tmp)
        data = where / "data"
        write_configs(data)
        gpusize_env = install(where)
        bins = {"gpusize": gpusize_env / "bin"}
        GPUSIZE.installed = version_in(gpusize_env, "gpusize")
        for tool in PEERS:
            env_dir = install_peer(where / "peers", tool)
            if env_dir is not None:
                bins[tool.name] = env_dir / "bin"
                tool.installed = version_in(env_dir, tool.name)
        env = {
            **os.environ,
            "GPUSIZE_CACHE_DIR": str(where / "cache"),
            "NO_COLOR": "1",
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            "HF_HOME": str(where / "hf"),
            "XDG_CACHE_HOME": str(where / "xdg"),
        }
        floor = [str(bins["gpusize"] / "python"), *BARE]
        argvs = {
            tool.name: [arg.format(bin=bins[tool.name], data=data) for arg in tool.argv]
            for tool in [GPUSIZE, *PEERS]
            if tool.name in bins
        }
        print(
            f"{time.strftime('%Y-%m-%d %H:%M')}, python {platform.python_version()}, {os.cpu_count()} CPUs, "
            f"load average {os.getloadavg()[0]:.2f} at the start; "
            f"installs took {time.monotonic() - started:.0f} s"
        )
        print(f"floor: {' '.join(['python', *BARE])} (the gpusize venv)\n")
        timed = []
        for tool in [GPUSIZE, *PEERS]:
            name = f"{tool.name} {tool.installed}".strip()
            if tool.name not in bins:
                print(f"{name} {tool.version}: {tool.note}\n")
                continue
            shown = [arg.format(bin="", data="DATA").lstrip("/") for arg in tool.argv]
            code, said = answer(tool, argvs[tool.name], env)  # also warms any cache it keeps
            print(f"{name}: {' '.join(shown)}\n  exit {code}: {said}\n")
            if code:
                tool.note = f"error, exit {code}: not timed"
                tool.statuses.append(code)
            else:
                timed.append(tool)
        run_status(floor, env)  # the floor's files in the page cache too, as the tools' are now
        floors = []
        for _ in range(n):
            for tool in timed:
                wall, rss, code = run_status(argvs[tool.name], env)
                bare, _, _ = run_status(floor, env)
                floors.append(bare)
                tool.walls.append(wall)
                tool.to_floor.append(wall / bare)
                tool.statuses.append(code)
                tool.rss = max(tool.rss, rss)
                if tool is GPUSIZE:
                    tool.to_gpusize.append(1.0)
                else:
                    ours, _, _ = run_status(argvs["gpusize"], env)
                    tool.to_gpusize.append(wall / ours)
        print(f"rounds={n}, each tool as (tool, floor, gpusize); ratios are medians of the paired ratios")
        print(f"floor median {statistics.median(floors or [0.0]):.3f} s")
        print(
            f"{'tool':13} {'version':8} {'median s':>8} {'/floor':>7} {'/gpusize':>8} {'peak RSS':>9}  exit"
        )
        for tool in [GPUSIZE, *PEERS]:
            if not tool.walls:
                print(f"{tool.name:13} {tool.installed or tool.version:8} {tool.note}")
                continue
            print(
                f"{tool.name:13} {tool.installed:8} {statistics.median(tool.walls):8.3f} "
                f"{statistics.median(tool.to_floor):7.2f} {statistics.median(tool.to_gpusize):8.2f} "
                f"{tool.rss / 1024:6.1f} MB  {statuses(tool.statuses)}"
            )
        print(f"load average {os.getloadavg()[0]:.2f} at the end; {time.monotonic() - started:.0f} s in all")


if __name__ == "__main__":
    main()
