"""Shell completion of model and GPU names from the catalogs (typer `autocompletion`)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from gpusize.cli.options import complete_gpu, complete_model


def test_model_names_complete_from_the_catalog() -> None:
    assert "Llama-3.1-405B" in complete_model("Llama-3.1-4")
    assert complete_model("mixtral-8x7b")[0].lower() == "mixtral-8x7b-instruct-v0.1"
    assert all(c.startswith("mixtral") for c in complete_model("mixtral"))  # the user's own prefix kept
    assert "Qwen/Qwen3-32B" in complete_model("Qwen/Qwen3-3")
    assert complete_model("no-such-model-xyz") == []


def test_gpu_names_complete_from_the_catalog() -> None:
    assert set(complete_gpu("RTX-PRO")) == {"RTX-PRO-6000", "RTX-PRO-6000-MaxQ", "RTX-PRO-6000-Server"}
    assert "h200-SXM" in complete_gpu("h20")
    assert complete_gpu("lo") == ["local"]


def test_a_broken_user_catalog_completes_nothing_instead_of_failing() -> None:
    env = {**os.environ, "GPUSIZE_GPUS": "/nonexistent/gpus.yaml"}
    out = _complete_in_shell("gpusize fit x --gpu H1", env)
    assert out.returncode == 0 and out.stdout.strip() == "" and out.stderr == ""


def _complete_in_shell(words: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """What bash's completion hook runs (click's protocol: _GPUSIZE_COMPLETE, COMP_WORDS, COMP_CWORD)."""
    base = {**(env or os.environ), "_GPUSIZE_COMPLETE": "complete_bash", "COMP_WORDS": words}
    base["COMP_CWORD"] = str(len(words.split()) - 1)
    script = Path(sys.executable).parent / "gpusize"
    command = [str(script)] if script.exists() else [sys.executable, "-m", "gpusize"]
    return subprocess.run(command, capture_output=True, text=True, env=base, timeout=60)


def test_bash_completion_offers_catalog_names() -> None:
    models = _complete_in_shell("gpusize fit Qwen3-Coder")
    assert "Qwen3-Coder-30B-A3B-Instruct" in models.stdout.split()
    gpus = _complete_in_shell("gpusize serve Qwen3-8B --gpu MI3")
    assert set(gpus.stdout.split()) == {"MI300X", "MI325X", "MI350X", "MI355X"}
