"""hf_quant_config.json beside config.json (NVIDIA ModelOpt checkpoints): read from a local folder and
from the Hub (tests/hub_server.py via HF_ENDPOINT, in a fresh process as the CLI meets it), online,
from the cache offline, and absent (no extra GET)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gpusize.sources.config_json import load_config
from tests.conftest import ROOT
from tests.hub_server import HubServer

DATA = ROOT / "tests" / "data" / "modelopt" / "nvidia--Llama-3.1-70B-Instruct-FP8"
CONFIG = (DATA / "config.json").read_bytes()
SIDECAR = (DATA / "hf_quant_config.json").read_bytes()
REPO, PLAIN = "nvidia/Llama-3.1-70B-Instruct-FP8", "acme/plain"

CLIENT = """
import json, sys
from gpusize.sources.hub import load_hub_model
m = load_hub_model(sys.argv[1])
print(json.dumps(m.config.get("quantization_config")))
"""


@pytest.fixture
def hub() -> Iterator[HubServer]:
    with HubServer() as server:
        server.add_repo(REPO, {"config.json": CONFIG, "hf_quant_config.json": SIDECAR})
        server.add_repo(PLAIN, {"config.json": CONFIG})
        yield server


@pytest.fixture
def env(tmp_path: Path, hub: HubServer) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGINGFACE"))}
    return {
        **clean,
        "HF_HOME": str(tmp_path / "hf"),
        "GPUSIZE_CACHE_DIR": str(tmp_path / "gpusize-cache"),
        "HF_ENDPOINT": hub.url,
        "HF_HUB_DISABLE_PROGRESS_BARS": "1",
        "NO_PROXY": "127.0.0.1,localhost",
        "no_proxy": "127.0.0.1,localhost",
    }


def quantization(env: dict[str, str], repo: str) -> Any:
    proc = subprocess.run(
        [sys.executable, "-c", CLIENT, repo], env=env, cwd=ROOT, capture_output=True, text=True, timeout=90
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_local_folder_reads_the_sidecar_as_the_quantization_config(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_bytes(CONFIG)
    (tmp_path / "hf_quant_config.json").write_bytes(SIDECAR)
    assert load_config(tmp_path)["quantization_config"] == json.loads(SIDECAR)
    assert load_config(tmp_path / "config.json")["quantization_config"] == json.loads(SIDECAR)


def test_inline_quantization_config_wins_over_a_stale_sidecar(tmp_path: Path) -> None:
    inline = {**json.loads(CONFIG), "quantization_config": {"quant_method": "fp8"}}
    (tmp_path / "config.json").write_text(json.dumps(inline))
    (tmp_path / "hf_quant_config.json").write_bytes(SIDECAR)
    assert load_config(tmp_path)["quantization_config"] == {"quant_method": "fp8"}


def test_broken_sidecar_is_one_line_naming_the_file(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_bytes(CONFIG)
    (tmp_path / "hf_quant_config.json").write_text("{")
    proc = subprocess.run(
        [sys.executable, "-m", "gpusize", "fit", str(tmp_path)], cwd=ROOT, capture_output=True, text=True
    )
    assert proc.returncode == 2 and proc.stdout == ""
    assert "hf_quant_config.json: not valid JSON" in proc.stderr and proc.stderr.count("\n") == 1


def test_hub_reads_the_sidecar_online_then_offline(env: dict[str, str], hub: HubServer) -> None:
    assert quantization(env, REPO) == json.loads(SIDECAR)
    asked = len(hub.requests)
    assert quantization({**env, "HF_HUB_OFFLINE": "1"}, REPO) == json.loads(SIDECAR)
    assert len(hub.requests) == asked


def test_hub_without_a_sidecar_asks_once_and_gets_nothing(env: dict[str, str], hub: HubServer) -> None:
    assert quantization(env, PLAIN) is None
    asked = [r for r in hub.requests if r.path.endswith("hf_quant_config.json")]
    assert [r.method for r in asked] == ["HEAD"]
