"""One Hub commit, one answer: sized online (the safetensors headers) and then with HF_HUB_OFFLINE=1
(only config.json in the Hugging Face cache), `fit` gives the same weights; a tensor that two shards
declare counts once. Real processes against the local Hub stand-in (tests/hub_server.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gpusize.sources.hub_record import MAX_RECORD_BYTES, read_record, write_record
from gpusize.sources.safetensors import weight_bytes_from_dtype_elements
from tests.cli.test_hub_cli import QWEN3_8B, env_for, gpusize
from tests.hub_server import HubServer, safetensors_bytes

FP8 = "acme/fp8-qwen"
TENSORS = {
    "model.embed_tokens.weight": ("BF16", [1000, 64]),
    "model.layers.0.self_attn.q_proj.weight": ("F8_E4M3", [512, 256]),
}
SHARDS = ("model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors")


def fit_json(env: dict[str, str], model: str) -> dict[str, Any]:
    r = gpusize(env, "fit", model, "--gpu", "H100", "--json")
    assert r.returncode == 0, r.stderr
    data: dict[str, Any] = json.loads(r.stdout)
    return data


def test_online_then_offline_gives_the_same_weights(tmp_path: Path) -> None:
    with HubServer() as hub:
        hub.add_repo(FP8, {"config.json": QWEN3_8B, "model.safetensors": safetensors_bytes(TENSORS)})
        env = env_for(tmp_path, hub.url, GPUSIZE_CACHE_DIR=str(tmp_path / "gpusize"))
        online = fit_json(env, FP8)
        offline = fit_json({**env, "HF_HUB_OFFLINE": "1"}, FP8)
    assert online["model"]["checkpoint_dtypes"] == {"BF16": 64_000, "F8_E4M3": 131_072}
    assert offline["model"]["revision"] == online["model"]["revision"]
    assert offline["model"]["checkpoint_bytes"] == online["model"]["checkpoint_bytes"]
    assert offline["memory"]["weights_bytes"] == online["memory"]["weights_bytes"]
    assert not list((tmp_path / "hf").rglob("*gpusize*"))  # nothing of ours in the Hugging Face cache


def test_tensor_in_two_remote_shards_counts_once(tmp_path: Path) -> None:
    shards = {
        name: safetensors_bytes({**TENSORS, f"own.{i}": ("BF16", [8])}) for i, name in enumerate(SHARDS)
    }
    index = {"weight_map": {**dict.fromkeys(TENSORS, SHARDS[1]), "own.0": SHARDS[0], "own.1": SHARDS[1]}}
    with HubServer() as hub:
        files = {"config.json": QWEN3_8B, **shards}
        hub.add_repo("acme/indexed", {**files, "model.safetensors.index.json": json.dumps(index).encode()})
        hub.add_repo("acme/no-index", files)
        env = env_for(tmp_path, hub.url, GPUSIZE_CACHE_DIR="")
        data = fit_json(env, "acme/indexed")
        # without an index the Hub reader has no shard list: config arithmetic, never a double count
        plain = fit_json(env, "acme/no-index")
    expected = {"BF16": 64_000 + 16, "F8_E4M3": 131_072}
    assert data["model"]["checkpoint_dtypes"] == expected
    assert data["model"]["checkpoint_bytes"] == weight_bytes_from_dtype_elements(expected)
    assert plain["model"]["checkpoint_bytes"] is None


COMMIT, ENDPOINT = "a" * 40, "https://hub.example"


@pytest.mark.parametrize(
    "text",
    [
        "not json",
        json.dumps({"repo_id": "acme/other", "commit": COMMIT, "dtype_elements": {"BF16": 1}}),
        json.dumps({"repo_id": FP8, "commit": "b" * 40, "dtype_elements": {"BF16": 1}}),
        json.dumps({"repo_id": FP8, "commit": COMMIT, "dtype_elements": {"BF16": -1}}),
        json.dumps({"repo_id": FP8, "commit": COMMIT, "dtype_elements": {"BF16": 1.5}}),
        json.dumps({"repo_id": FP8, "commit": COMMIT, "dtype_elements": {"BF16": True}}),
        json.dumps({"repo_id": FP8, "commit": COMMIT, "dtype_elements": {"Q4_K": 1}}),
        json.dumps({"repo_id": FP8, "commit": COMMIT, "dtype_elements": {}}),
        json.dumps(
            {"repo_id": FP8, "commit": COMMIT, "dtype_elements": {"BF16": 1}, "pad": "x" * MAX_RECORD_BYTES}
        ),
        "[" * 100_000,
    ],
)
def test_unusable_record_is_ignored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    monkeypatch.setenv("GPUSIZE_CACHE_DIR", str(tmp_path))
    write_record(ENDPOINT, FP8, COMMIT, {"BF16": 1})
    assert read_record(ENDPOINT, FP8, COMMIT) == {"BF16": 1}
    (record,) = tmp_path.glob("hub-dtypes-*.json")
    record.write_text(text)
    assert read_record(ENDPOINT, FP8, COMMIT) is None


def test_record_is_per_endpoint_and_off_when_the_cache_is_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GPUSIZE_CACHE_DIR", str(tmp_path))
    write_record(ENDPOINT, FP8, COMMIT, {"BF16": 1})
    assert read_record("http://127.0.0.1:1", FP8, COMMIT) is None
    monkeypatch.setenv("GPUSIZE_CACHE_DIR", "")
    write_record(ENDPOINT, FP8, "c" * 40, {"BF16": 1})
    assert read_record(ENDPOINT, FP8, COMMIT) is None
    assert len(list(tmp_path.iterdir())) == 1
