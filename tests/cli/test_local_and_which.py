"""`--gpu local` (fake nvidia-smi on PATH, no NVML) and the reverse query `which`, in this process
(tests.helpers.run_in_process sets PATH for the call: the PATH nvidia-smi is looked up on)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from gpusize.sources import local_gpu
from tests.helpers import CliResult, run_in_process

SMI = """NVIDIA GeForce RTX 4090, 24564, 23810
NVIDIA GeForce RTX 4090, 24564, 23900
"""


def run(*args: str, path: str | None = None) -> CliResult:
    return run_in_process(*args, env={"NO_COLOR": "1", **({"PATH": path} if path else {})})


@pytest.fixture
def fake_smi(tmp_path: Path) -> str:
    script = tmp_path / "nvidia-smi"
    script.write_text("#!/bin/sh\ncat <<'EOF'\n" + SMI + "EOF\n")
    script.chmod(0o755)
    return f"{tmp_path}{os.pathsep}{os.environ['PATH']}"


def test_parse_nvidia_smi_reads_every_gpu() -> None:
    gpus = local_gpu.parse_nvidia_smi(SMI)
    assert [(g.name, g.total_mib, g.free_mib) for g in gpus] == [
        ("NVIDIA GeForce RTX 4090", 24564, 23810),
        ("NVIDIA GeForce RTX 4090", 24564, 23900),
    ]
    spec, count = local_gpu.local_spec(gpus)
    assert count == 2 and spec.free_mib == 23810 and spec.bandwidth_gbps == 1008  # from the catalog


def test_fit_on_local_gpus(fake_smi: str) -> None:
    r = run("fit", "Qwen3-14B", "--gpu", "local", "--json", path=fake_smi)
    assert r.code == 0, r.stderr
    assert json.loads(r.stdout)["plan"]["num_gpus"] == 2  # never more than the machine has


def test_no_gpu_exits_2(tmp_path: Path) -> None:
    r = run("fit", "Qwen3-8B", "--gpu", "local", path=str(tmp_path))  # no nvidia-smi, no NVML
    assert r.code == 2 and "no NVIDIA GPU found" in r.stderr and r.stdout == ""


def test_which_lists_fitting_models_fastest_first_with_sort_speed(fake_smi: str) -> None:
    r = run(
        "which", "--gpu", "RTX4090", "--gpus", "2", "--ctx", "32k", "--sort", "speed", "--json", path=fake_smi
    )
    assert r.code == 0
    models = [m for m in json.loads(r.stdout)["models"] if m["fits"]]
    assert models
    speeds = [m["tokens_per_s"] for m in models]
    assert speeds == sorted(speeds, reverse=True)
    names = {m["name"] for m in models}
    assert "Qwen3-8B" in names and "DeepSeek-V3" not in names


def test_context_beyond_model_maximum_is_refused() -> None:
    r = run_in_process("fit", "Qwen3-32B", "--ctx", "128k", "--gpu", "H200", "--json")
    # vLLM refuses to start (exit 2) with its own message and the override it names.
    assert r.code == 2 and r.stdout == ""
    assert "max_model_len (131072) is greater than the derived max_model_len" in r.stderr
    assert "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1" in r.stderr and "--rope-scaling" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_rope_scaling_lifts_the_maximum_and_travels_in_the_launch_command() -> None:
    r = run_in_process(
        "serve", "Qwen3-32B", "--max-model-len", "128k", "--gpu", "H200", "--rope-scaling", "yarn:4:32768",
        "--users", "4", "--json",
    )  # fmt: skip
    assert r.code in (0, 1), r.stderr
    plan = json.loads(r.stdout)
    command = plan["launch"]["vllm"]["command"]
    assert "--max-model-len 131072" in command
    assert '"rope_type":"yarn"' in command and '"original_max_position_embeddings":32768' in command
