"""`gpusize fit org/name` end to end against the local Hub stand-in (tests/hub_server.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpusize.sources.safetensors import weight_bytes_from_dtype_elements
from tests.conftest import REFERENCE, ROOT, load_reference
from tests.hub_server import HubServer, closed_port_url, commit_sha, safetensors_bytes

QWEN3_8B = json.dumps(load_reference(REFERENCE / "configs" / "Qwen__Qwen3-8B.json")["config"]).encode()
FP8_TENSORS = {
    "model.embed_tokens.weight": ("BF16", [1000, 64]),
    "model.layers.0.self_attn.q_proj.weight": ("F8_E4M3", [512, 256]),
    "model.layers.0.self_attn.q_proj.weight_scale": ("F32", []),
}


@pytest.fixture
def hub() -> Iterator[HubServer]:
    with HubServer() as server:
        server.add_repo("acme/qwen3-8b-copy", {"config.json": QWEN3_8B})
        server.add_repo(
            "acme/fp8-qwen", {"config.json": QWEN3_8B, "model.safetensors": safetensors_bytes(FP8_TENSORS)}
        )
        server.add_repo("meta-llama/Gated-Llama", {"config.json": QWEN3_8B}, gated_token="hf_secret")
        yield server


def env_for(tmp_path: Path, endpoint: str, **extra: str) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGINGFACE"))}
    return {
        **clean,
        "HF_HOME": str(tmp_path / "hf"),
        "HF_ENDPOINT": endpoint,
        "NO_COLOR": "1",
        "HF_HUB_DISABLE_TELEMETRY": "1",
        "HF_HUB_DISABLE_PROGRESS_BARS": "1",
        "NO_PROXY": "127.0.0.1,localhost",
        "no_proxy": "127.0.0.1,localhost",
        **extra,
    }


def gpusize(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gpusize", *args],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=90,
    )


def test_hub_model_sized_like_catalog_then_offline(tmp_path: Path, hub: HubServer) -> None:
    env = env_for(tmp_path, hub.url)
    online = gpusize(env, "fit", "acme/qwen3-8b-copy", "--gpu", "L4", "--json")
    assert online.returncode == 0, online.stderr
    data = json.loads(online.stdout)
    catalog = json.loads(gpusize(env, "fit", "Qwen3-8B", "--gpu", "L4", "--json").stdout)
    assert data["memory"] == catalog["memory"] and data["plan"] == catalog["plan"]
    assert data["model"]["source"] == "hub" and data["model"]["revision"] == commit_sha("acme/qwen3-8b-copy")
    offline = gpusize({**env, "HF_HUB_OFFLINE": "1"}, "fit", "acme/qwen3-8b-copy", "--gpu", "L4", "--json")
    assert offline.returncode == 0, offline.stderr
    assert json.loads(offline.stdout)["model"]["revision"] == data["model"]["revision"]


def test_checkpoint_bytes_are_the_stored_tensors(tmp_path: Path, hub: HubServer) -> None:
    r = gpusize(env_for(tmp_path, hub.url), "fit", "acme/fp8-qwen", "--gpu", "H100", "--json")
    data = json.loads(r.stdout)
    expected = weight_bytes_from_dtype_elements({"BF16": 64000, "F8_E4M3": 131072, "F32": 1})
    assert data["model"]["checkpoint_bytes"] == expected == 64000 * 2 + 131072 + 4
    assert "gpusize: warning:" in r.stderr and "config arithmetic" in r.stderr


def test_gated_repo_says_what_to_do(tmp_path: Path, hub: HubServer) -> None:
    r = gpusize(env_for(tmp_path, hub.url), "fit", "meta-llama/Gated-Llama")
    assert r.returncode == 2 and "HF_TOKEN" in r.stderr and r.stdout == ""
    ok = gpusize(
        env_for(tmp_path, hub.url, HF_TOKEN="hf_secret"),
        "fit",
        "meta-llama/Gated-Llama",
        "--gpu",
        "H100",
        "--json",
    )
    assert ok.returncode == 0, ok.stderr


def test_unreachable_hub_returns_quickly(tmp_path: Path) -> None:
    start = time.monotonic()
    r = gpusize(env_for(tmp_path, closed_port_url()), "fit", "acme/anything")
    assert r.returncode == 2 and "cannot reach" in r.stderr
    assert time.monotonic() - start < 60


def test_local_folder_with_safetensors(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_bytes(QWEN3_8B)
    (tmp_path / "model.safetensors").write_bytes(safetensors_bytes(FP8_TENSORS))
    before = (tmp_path / "model.safetensors").read_bytes()
    r = gpusize(env_for(tmp_path, closed_port_url()), "fit", str(tmp_path), "--gpu", "H100", "--json")
    assert json.loads(r.stdout)["model"]["checkpoint_bytes"] == 64000 * 2 + 131072 + 4
    assert (tmp_path / "model.safetensors").read_bytes() == before
