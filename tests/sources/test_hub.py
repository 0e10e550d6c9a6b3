"""gpusize.sources.hub against a local stand-in for the Hub (tests/hub_server.py); never the internet.

Each call runs in a fresh Python process with HF_ENDPOINT, HF_HOME and HF_HUB_OFFLINE in its
environment, because huggingface_hub reads them into `constants` once, at import: this is how the CLI
meets them. HF_HOME is a tmp folder, so no real token or cache is ever used.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gpusize.sources.safetensors import weight_bytes_from_dtype_elements
from tests.conftest import REFERENCE, ROOT, load_reference
from tests.hub_server import (
    HubServer,
    closed_port_url,
    commit_sha,
    safetensors_bytes,
    silent_server,
    static_server,
)

PUBLIC, GATED, FP8 = "acme/tiny-llama", "meta-llama/Gated-Llama", "acme/fp8-llama"
TOKEN = "hf_test_token"

CLIENT = """
import json, sys
from gpusize.errors import GpusizeError
from gpusize.sources.hub import load_hub_model
try:
    m = load_hub_model(**json.loads(sys.argv[1]))
except GpusizeError as e:
    print(json.dumps({"error": type(e).__name__, "message": str(e), "hint": e.hint}))
else:
    out = {"revision": m.revision, "config": m.config, "dtypes": m.dtype_elements, "notes": m.notes}
    print(json.dumps(out))
"""


def config_bytes(name: str) -> bytes:
    return json.dumps(load_reference(REFERENCE / "configs" / name)["config"]).encode()


LLAMA_1B = config_bytes("meta-llama__Llama-3.2-1B-Instruct.json")
PUBLIC_TENSORS = {
    "model.embed_tokens.weight": ("BF16", [256, 64]),
    "model.layers.0.self_attn.q_proj.weight": ("BF16", [64, 64]),
    "model.layers.0.mlp.up_proj.weight": ("BF16", [128, 64]),
    "model.norm.weight": ("F32", [64]),
    "step": ("I64", []),  # a scalar: one element
}
# An FP8 checkpoint whose config says torch_dtype bfloat16 (as FP8 repos do); shards over 100 kB so
# that huggingface_hub's first 100 kB range request cannot be the whole file.
FP8_SHARDS = {
    "model-00001-of-00002.safetensors": {
        "model.embed_tokens.weight": ("BF16", [1000, 64]),
        "model.layers.0.self_attn.q_proj.weight": ("F8_E4M3", [512, 256]),
        "model.layers.0.self_attn.q_proj.weight_scale": ("F32", []),
    },
    "model-00002-of-00002.safetensors": {
        "model.layers.0.mlp.down_proj.weight": ("F8_E4M3", [256, 512]),
        "model.layers.0.mlp.down_proj.weight_scale": ("F32", []),
        "model.norm.weight": ("BF16", [64]),
    },
}


@pytest.fixture
def hub() -> Iterator[HubServer]:
    with HubServer() as server:
        server.add_repo(
            PUBLIC,
            {
                "config.json": LLAMA_1B,
                "model.safetensors": safetensors_bytes(PUBLIC_TENSORS),
                "README.md": b"#",
            },
            refs={"main": commit_sha("main"), "v1.0": commit_sha("v1.0")},
        )
        server.add_repo(
            GATED,
            {"config.json": LLAMA_1B, "model.safetensors": safetensors_bytes(PUBLIC_TENSORS)},
            gated_token=TOKEN,
        )
        index = {"metadata": {}, "weight_map": {t: f for f, ts in FP8_SHARDS.items() for t in ts}}
        server.add_repo(
            FP8,
            {
                "config.json": config_bytes("meta-llama__Llama-3.1-8B.json"),
                "model.safetensors.index.json": json.dumps(index).encode(),
                **{name: safetensors_bytes(tensors) for name, tensors in FP8_SHARDS.items()},
            },
        )
        server.add_repo("acme/weights-only", {"model.safetensors": safetensors_bytes(PUBLIC_TENSORS)})
        server.add_repo("acme/config-only", {"config.json": LLAMA_1B})
        server.add_repo("acme/broken-config", {"config.json": b'{"model_type": "llama",'})
        server.add_repo("acme/popular", {"config.json": LLAMA_1B}, status=429)
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


def python(env: dict[str, str], code: str, *args: str) -> Any:
    """Run `code` in a fresh interpreter; its last stdout line is JSON."""
    proc = subprocess.run(
        [sys.executable, "-c", code, *args], env=env, cwd=ROOT, capture_output=True, text=True, timeout=90
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def load(env: dict[str, str], repo_id: str, **kwargs: Any) -> dict[str, Any]:
    result: dict[str, Any] = python(env, CLIENT, json.dumps({"repo_id": repo_id, **kwargs}))
    return result


def assert_hub_error(result: dict[str, Any], *fragments: str) -> None:
    assert result.get("error") == "HubError", result
    assert "\n" not in result["message"]
    for fragment in fragments:
        assert fragment in result["message"], result["message"]


def test_public_repo_gives_config_commit_and_exact_dtype_counts(env: dict[str, str], hub: HubServer) -> None:
    result = load(env, PUBLIC)
    assert result["revision"] == commit_sha("main")
    assert result["config"] == json.loads(LLAMA_1B)
    assert result["dtypes"] == {"BF16": 256 * 64 + 64 * 64 + 128 * 64, "F32": 64, "I64": 1}
    assert result["notes"] == []
    cache = Path(env["HF_HOME"]) / "hub" / "models--acme--tiny-llama"
    assert (cache / "refs" / "main").read_text() == commit_sha("main")


def test_tag_resolves_to_its_own_commit(env: dict[str, str]) -> None:
    assert load(env, PUBLIC, revision="v1.0")["revision"] == commit_sha("v1.0")


def test_fp8_checkpoint_with_bf16_config_reads_only_headers(env: dict[str, str], hub: HubServer) -> None:
    result = load(env, FP8)
    assert result["config"]["torch_dtype"] == "bfloat16"
    fp8 = 512 * 256 + 256 * 512
    assert result["dtypes"] == {"BF16": 1000 * 64 + 64, "F32": 2, "F8_E4M3": fp8}
    assert weight_bytes_from_dtype_elements(result["dtypes"]) == fp8 + 2 * (1000 * 64 + 64) + 4 * 2
    shard_gets = [r for r in hub.requests if r.method == "GET" and r.path.endswith(".safetensors")]
    assert len(shard_gets) == 2
    assert all(r.headers.get("range", "").startswith("bytes=") for r in shard_gets)


def test_gated_repo_without_token_says_set_hf_token(env: dict[str, str]) -> None:
    result = load(env, GATED)
    assert_hub_error(result, f"{GATED} is gated", "accept its license", "HF_TOKEN")
    assert "hf auth login" in result["hint"]


@pytest.mark.parametrize("how", ["HF_TOKEN", "token argument"])
def test_gated_repo_with_token_works(env: dict[str, str], hub: HubServer, how: str) -> None:
    result = load({**env, "HF_TOKEN": TOKEN}, GATED) if how == "HF_TOKEN" else load(env, GATED, token=TOKEN)
    assert result["revision"] == commit_sha(GATED)
    assert result["dtypes"] == {"BF16": 28672, "F32": 64, "I64": 1}
    files = [r for r in hub.requests if "/resolve/" in r.path]
    assert files and all(r.headers.get("authorization") == f"Bearer {TOKEN}" for r in files)


def test_cached_then_offline_gives_same_commit_without_any_request(
    env: dict[str, str], hub: HubServer
) -> None:
    online = load(env, PUBLIC)
    asked = len(hub.requests)
    offline = load({**env, "HF_HUB_OFFLINE": "1"}, PUBLIC)
    assert len(hub.requests) == asked
    assert offline["revision"] == online["revision"]
    assert offline["config"] == online["config"]
    assert offline["dtypes"] == online["dtypes"]  # what the headers said online, for this commit
    assert "dtypes from the safetensors headers read online for this commit (offline now)" in offline["notes"]


def test_offline_without_a_record_has_no_dtypes(env: dict[str, str]) -> None:
    load({**env, "GPUSIZE_CACHE_DIR": ""}, PUBLIC)
    offline = load({**env, "HF_HUB_OFFLINE": "1"}, PUBLIC)
    assert offline["dtypes"] is None
    assert "safetensors metadata unavailable (offline): weights from config arithmetic" in offline["notes"]


def test_offline_with_the_weights_cached_reads_their_headers(env: dict[str, str], hub: HubServer) -> None:
    load(env, PUBLIC)
    fetch = "import json, sys, huggingface_hub as h; print(json.dumps(h.hf_hub_download(*sys.argv[1:])))"
    python(env, fetch, PUBLIC, "model.safetensors")  # the weights, as `hf download` or vLLM would fetch them
    offline = load({**env, "HF_HUB_OFFLINE": "1"}, PUBLIC)
    assert offline["dtypes"] == {"BF16": 28672, "F32": 64, "I64": 1}
    assert offline["notes"] == [
        "config.json from the local Hub cache (offline)",
        "dtypes from the cached safetensors headers",
    ]


def test_offline_with_only_the_config_cached_keeps_the_dtypes_read_online(env: dict[str, str]) -> None:
    online = load(env, FP8)  # caches config.json, not the shards
    assert online["dtypes"] is not None
    assert load({**env, "HF_HUB_OFFLINE": "1"}, FP8)["dtypes"] == online["dtypes"]


def test_offline_and_not_cached(env: dict[str, str], hub: HubServer) -> None:
    result = load({**env, "HF_HUB_OFFLINE": "1"}, PUBLIC)
    assert_hub_error(result, "not in the local Hub cache", "HF_HUB_OFFLINE")
    assert hub.requests == []


def test_hub_outage_falls_back_to_the_cache(env: dict[str, str], hub: HubServer) -> None:
    online = load(env, PUBLIC)
    hub.repos[PUBLIC].status = 503
    result = load(env, PUBLIC)
    assert result["revision"] == online["revision"]
    assert result["dtypes"] == online["dtypes"]
    assert "config.json from the local Hub cache (HTTP 503)" in result["notes"]


def test_server_down_fails_fast(env: dict[str, str]) -> None:
    started = time.monotonic()
    result = load({**env, "HF_ENDPOINT": closed_port_url()}, PUBLIC, timeout_s=2)
    assert time.monotonic() - started < 60
    assert_hub_error(result, "cannot reach the Hub", "cannot connect", "HF_HUB_OFFLINE=1")


def test_silent_server_times_out(env: dict[str, str]) -> None:
    started = time.monotonic()
    with silent_server() as url:
        result = load({**env, "HF_ENDPOINT": url}, PUBLIC, timeout_s=1)
    assert time.monotonic() - started < 60
    assert_hub_error(result, "cannot reach the Hub", "no answer within 1 s")


def test_endpoint_that_is_not_a_hub(env: dict[str, str], tmp_path: Path) -> None:
    folder = tmp_path / "www" / PUBLIC / "resolve" / "main"
    folder.mkdir(parents=True)
    (folder / "config.json").write_bytes(LLAMA_1B)
    with static_server(tmp_path / "www") as url:
        result = load({**env, "HF_ENDPOINT": url}, PUBLIC)
    assert_hub_error(result, "does not answer like a Hugging Face Hub", "HF_ENDPOINT")


def test_hub_outage_without_cache(env: dict[str, str], hub: HubServer) -> None:
    hub.repos[PUBLIC].status = 503
    assert_hub_error(load(env, PUBLIC), "the Hub at", "is unavailable (HTTP 503)", "retry later")


def test_repo_not_found(env: dict[str, str]) -> None:
    assert_hub_error(load(env, "acme/no-such-model"), "acme/no-such-model: no such model on the Hub")


def test_revision_not_found(env: dict[str, str]) -> None:
    assert_hub_error(load(env, PUBLIC, revision="v9"), "has no revision 'v9'", "branch, tag or commit")


def test_repo_without_config_json(env: dict[str, str]) -> None:
    assert_hub_error(load(env, "acme/weights-only"), "acme/weights-only has no config.json")


def test_rate_limited(env: dict[str, str]) -> None:
    assert_hub_error(load(env, "acme/popular"), "rate limited", "HTTP 429", "HF_TOKEN")


def test_invalid_repo_id(env: dict[str, str], hub: HubServer) -> None:
    assert_hub_error(load(env, "acme/../etc"), "not a valid Hub model id")
    assert hub.requests == []


def test_config_that_is_not_json_is_a_config_error(env: dict[str, str]) -> None:
    result = load(env, "acme/broken-config")
    assert result["error"] == "ConfigError"
    assert "acme/broken-config@" in result["message"] and "not valid JSON" in result["message"]


def test_repo_without_safetensors(env: dict[str, str]) -> None:
    result = load(env, "acme/config-only")
    assert result["dtypes"] is None
    assert result["notes"] == ["no safetensors weights in the repo: weights from config arithmetic"]


def test_import_does_not_load_huggingface_hub(env: dict[str, str]) -> None:
    assert (
        python(env, "import sys, gpusize.sources.hub; print(str('huggingface_hub' in sys.modules).lower())")
        is False
    )


def test_fake_hub_answers_model_info_like_the_hub(env: dict[str, str]) -> None:
    code = """
import json, sys
from huggingface_hub import model_info
info = model_info(sys.argv[1], revision="v1.0")
print(json.dumps([info.sha, sorted(s.rfilename for s in info.siblings)]))
"""
    sha, files = python(env, code, PUBLIC)
    assert sha == commit_sha("v1.0")
    assert files == ["README.md", "config.json", "model.safetensors"]
