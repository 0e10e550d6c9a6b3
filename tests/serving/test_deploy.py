"""The pure manifest builder (serving/deploy.py): names Kubernetes and compose accept, `$` kept
literal for both, and the layouts it refuses."""

from __future__ import annotations

import re

import pytest

from gpusize.core.engines import engine
from gpusize.core.settings import ENGINE_NAMES
from gpusize.errors import InputError
from gpusize.serving.deploy import (
    SERVER_IMAGES,
    DeployPlan,
    compose_manifest,
    kubernetes_manifests,
    object_name,
)

#: A DNS-1123 label (Kubernetes object names) that is also a compose project name.
LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")


@pytest.mark.parametrize("model", ["Qwen/Qwen3-8B", "", "---", "ÄÖ/名前", "x" * 300, "/tmp/a b/llama.GGUF"])
def test_object_names_are_dns_labels(model: str) -> None:
    name = object_name(model, "vllm")
    assert LABEL.fullmatch(name) and len(name) <= 50


def _plan(**changes: object) -> DeployPlan:
    base: dict[str, object] = {
        "engine": "vllm",
        "engine_label": "vLLM",
        "version": "0.33.0",
        "words": ("A=$HOME", "vllm", "serve", "/m/$(id)", "--tensor-parallel-size", "4"),
        "replicas": 2,
        "gpus_per_replica": 4,
        "node_gpus": 8,
        "name": "vllm-m",
        "model_path": "/m/$(id)",
    }
    return DeployPlan(**{**base, **changes})  # type: ignore[arg-type]


def test_a_dollar_is_doubled_where_kubernetes_and_compose_would_expand_it() -> None:
    deployment = kubernetes_manifests(_plan())[0].body
    container = deployment["spec"]["template"]["spec"]["containers"][0]  # type: ignore[index]
    assert container["args"] == ["serve", "/m/$$(id)", "--tensor-parallel-size", "4"]
    assert container["env"] == [{"name": "A", "value": "$$HOME"}]
    service = compose_manifest(_plan()).body["services"]["vllm-m-0"]  # type: ignore[index]
    assert service["entrypoint"][2] == "/m/$$(id)" and service["environment"] == ["A=$$HOME"]


def test_layouts_that_cannot_be_expressed_are_refused() -> None:
    with pytest.raises(InputError, match="divisor"):
        kubernetes_manifests(_plan(gpus_per_replica=8, node_gpus=3))
    with pytest.raises(InputError, match="one machine"):
        compose_manifest(_plan(gpus_per_replica=8, node_gpus=4))
    lws = kubernetes_manifests(_plan(gpus_per_replica=8, node_gpus=4))[0]
    assert lws.body["kind"] == "LeaderWorkerSet" and any("not expressed" in c for c in lws.comments)


def test_every_serving_engine_has_an_image() -> None:
    assert {n for n in ENGINE_NAMES if engine(n).serves} == set(SERVER_IMAGES)
