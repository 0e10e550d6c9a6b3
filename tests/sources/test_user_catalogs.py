"""User catalogs: --gpus-file / --models-file and GPUSIZE_GPUS / GPUSIZE_MODELS."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import asdict, fields
from pathlib import Path

import yaml

from gpusize.core.gpu import GpuSpec
from gpusize.sources import catalog

ENV = {**os.environ, "NO_COLOR": "1"}


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gpusize", *args], capture_output=True, text=True, env=env or ENV, timeout=60
    )


#: GpuSpec fields a catalog file may not hold (measured free memory, the file's own name, MIG facts).
_NOT_FILE_FIELDS = {f.name for f in fields(GpuSpec) if not f.metadata.get("catalog", True)}


def _my_gpu(**changes: object) -> dict[str, object]:
    base = {k: v for k, v in asdict(catalog.find_gpu("H100")).items() if k not in _NOT_FILE_FIELDS}
    base.update(
        {
            "name": "MyCard-96",
            "full_name": "Company card 96GB",
            "aliases": [],
            "memory_mib": 98304,
            "cuda_visible_gib": None,
            "price_usd_per_hour": 1.5,
            "source": "our purchase order 2026-11",
        }
    )
    base.update(changes)
    return base


def test_user_gpu_file_adds_a_gpu(tmp_path: Path) -> None:
    path = tmp_path / "my-gpus.yaml"
    path.write_text(yaml.safe_dump([_my_gpu()]))
    r = run("fit", "Qwen3-32B", "--gpu", "MyCard-96", "--gpus-file", str(path), "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["plan"]["gpu"] == "MyCard-96"
    env_run = run("fit", "Qwen3-32B", "--gpu", "mycard-96", "--json", env={**ENV, "GPUSIZE_GPUS": str(path)})
    assert env_run.returncode == 0


def test_user_gpu_file_with_a_typo_names_file_entry_and_field(tmp_path: Path) -> None:
    path = tmp_path / "my-gpus.yaml"
    path.write_text(yaml.safe_dump([_my_gpu(), _my_gpu(name="Other", memory_mib=0)]))
    r = run("gpus", "--gpus-file", str(path))
    assert r.returncode == 2 and "my-gpus.yaml: [1].memory_mib:" in r.stderr
    typo = _my_gpu()
    typo["memory_mb"] = typo.pop("memory_mib")
    path.write_text(yaml.safe_dump([typo]))
    r = run("gpus", "--gpus-file", str(path))
    assert r.returncode == 2 and "my-gpus.yaml: [0].memory_mb: unknown field" in r.stderr


def test_user_models_file_overrides_by_name(tmp_path: Path) -> None:
    entry = asdict(catalog.find_model("Qwen3-8B"))
    entry.update({"name": "private-8b", "hf_id": "acme/private-8b", "aliases": [], "source": "internal"})
    path = tmp_path / "models.yaml"
    path.write_text(yaml.safe_dump([entry]))
    r = run("fit", "private-8b", "--models-file", str(path), "--gpu", "L4", "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["model"]["id"] == "acme/private-8b"


def test_missing_user_file_is_an_input_error() -> None:
    assert run("gpus", "--gpus-file", "/nonexistent/gpus.yaml").returncode == 2
