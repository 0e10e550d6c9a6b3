"""The vendor device table and the engines' ROCm images (serving/devices.py): the sourced facts, the
catalog GPUs they cover, one declaration of each resource name, and the plans they refuse."""

from __future__ import annotations

import re

import pytest

from gpusize.core.engines import engine
from gpusize.core.settings import ENGINE_NAMES
from gpusize.errors import InputError
from gpusize.serving.deploy import DeployPlan, compose_manifest, kubernetes_manifests
from gpusize.serving.devices import ACCELERATORS, ROCM_IMAGES, accelerator, rocm_image
from gpusize.sources.catalog import load_gpus
from tests.conftest import ROOT


def test_the_vendors_resources_and_rocm_devices_are_the_sourced_ones() -> None:
    # ROCm/k8s-device-plugin: namespace "amd.com", resource "gpu"; ROCm's docker page: /dev/kfd,
    # /dev/dri, seccomp=unconfined; GPUs picked with ROCR_VISIBLE_DEVICES (ROCm GPU isolation)
    amd, nvidia = ACCELERATORS["AMD"], ACCELERATORS["NVIDIA"]
    assert (amd.resource, nvidia.resource) == ("amd.com/gpu", "nvidia.com/gpu")
    assert amd.devices == ("/dev/kfd", "/dev/dri") and amd.compose_driver is None
    assert amd.security_opt == ("seccomp=unconfined",) and amd.seccomp_unconfined
    assert amd.visible == "ROCR_VISIBLE_DEVICES"
    assert nvidia.compose_driver == "nvidia" and not nvidia.devices and nvidia.visible is None


def test_the_rocm_images_are_the_engines_official_ones() -> None:
    assert rocm_image("vllm", "vLLM", "0.14.0", "gfx942", None, "x")[1] == "vllm/vllm-openai-rocm:v0.14.0"
    assert rocm_image("sglang", "SGLang", "0.5.10", "gfx942", None, "x")[1] == (
        "lmsysorg/sglang:v0.5.10-rocm700-mi30x"
    )
    assert rocm_image("sglang", "SGLang", "0.5.23", "gfx950", None, "x")[1] == (
        "lmsysorg/sglang:v0.5.23-rocm700-mi35x"
    )
    assert rocm_image("llamacpp", "llama.cpp", None, "gfx1151", "rocm", "x")[1] == (
        "ghcr.io/ggml-org/llama.cpp:server-rocm"
    )
    assert ROCM_IMAGES["llamacpp"].program == "/app/llama-server"  # .devops/rocm.Dockerfile
    assert ROCM_IMAGES["sglang"].families == {"gfx942": "mi30x", "gfx950": "mi35x"}
    assert set(ROCM_IMAGES["sglang"].families) == ROCM_IMAGES["sglang"].targets


def test_every_amd_gpu_of_the_catalog_runs_vllm_and_llamacpp_images() -> None:
    amd = [g for g in load_gpus() if g.vendor == "AMD"]
    assert {g.name for g in amd} >= {"MI300X", "MI325X", "MI355X"}
    for gpu in amd:
        assert gpu.gfx_target in ROCM_IMAGES["vllm"].targets, gpu.name
        assert gpu.gfx_target in ROCM_IMAGES["llamacpp"].targets, gpu.name


@pytest.mark.parametrize("name", sorted(n for n in ENGINE_NAMES if engine(n).serves))
def test_an_engine_without_a_rocm_image_is_refused_on_amd(name: str) -> None:
    label = engine(name).label
    if name in ROCM_IMAGES:
        return
    with pytest.raises(InputError, match="no official ROCm image"):
        rocm_image(name, label, "1.0.0", "gfx942", None, "AMD Instinct MI300X")


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("vllm", "vLLM", "0.13.0", "gfx942", None), "tagged from 0.14.0"),
        (("vllm", "vLLM", None, "gfx942", None), "tagged from 0.14.0"),
        (("sglang", "SGLang", "0.5.9", "gfx942", None), "tagged from 0.5.10"),
        (("sglang", "SGLang", "0.5.23", "gfx90a", None), "not built for"),
        (("vllm", "vLLM", "0.33.0", None, None), "no known GPU target"),
        (("llamacpp", "llama.cpp", None, "gfx942", "vulkan"), "not its Vulkan build"),
        (("llamacpp", "llama.cpp", None, "gfx942", "cuda"), "not its CUDA build"),
    ],
)
def test_plans_no_rocm_image_runs_are_refused(
    args: tuple[str, str, str | None, str | None, str | None], says: str
) -> None:
    with pytest.raises(InputError, match=says):
        rocm_image(*args, "AMD Instinct MI300X")


def test_a_vendor_without_a_device_resource_is_refused() -> None:
    with pytest.raises(InputError, match="Apple GPUs"):
        accelerator("Apple", "Apple M3 Ultra")


def _plan(**changes: object) -> DeployPlan:
    base: dict[str, object] = {
        "engine": "vllm",
        "engine_label": "vLLM",
        "version": "0.33.0",
        "words": ("vllm", "serve", "m", "--tensor-parallel-size", "2"),
        "replicas": 2,
        "gpus_per_replica": 2,
        "node_gpus": 8,
        "name": "vllm-m",
        "vendor": "AMD",
        "gfx_target": "gfx942",
        "gpu": "AMD Instinct MI300X",
    }
    return DeployPlan(**{**base, **changes})  # type: ignore[arg-type]


def test_the_manifests_ask_the_vendor_s_resource_and_devices() -> None:
    # the table is read, not a copy: NVIDIA keeps its reservation, AMD its device files
    deployment = kubernetes_manifests(_plan())[0].body
    container = deployment["spec"]["template"]["spec"]["containers"][0]  # type: ignore[index]
    assert container["resources"] == {"limits": {"amd.com/gpu": "2"}}
    assert container["image"] == "vllm/vllm-openai-rocm:v0.33.0"
    services = compose_manifest(_plan()).body["services"]
    first, second = services.values()  # type: ignore[attr-defined]
    assert first["environment"] == ["HF_TOKEN", "ROCR_VISIBLE_DEVICES=0,1"]
    assert second["environment"] == ["HF_TOKEN", "ROCR_VISIBLE_DEVICES=2,3"]
    nvidia = compose_manifest(_plan(vendor="NVIDIA", gfx_target=None)).body["services"]
    reservation = next(iter(nvidia.values()))["deploy"]["resources"]["reservations"]  # type: ignore[attr-defined]
    assert reservation["devices"] == [{"driver": "nvidia", "device_ids": ["0", "1"], "capabilities": ["gpu"]}]
    with pytest.raises(InputError, match="installs no Ray"):
        kubernetes_manifests(_plan(gpus_per_replica=4, node_gpus=2))
    lws = kubernetes_manifests(_plan(engine="sglang", engine_label="SGLang", version="0.5.23", node_gpus=1))
    assert lws[0].body["kind"] == "LeaderWorkerSet"


def test_each_resource_name_is_written_once() -> None:
    """One declaration per concept: the device resources live in ACCELERATORS only."""
    pattern = re.compile(r"[\"'](nvidia|amd)\.com/gpu[\"']")
    writers = [
        str(p.relative_to(ROOT)) for p in (ROOT / "gpusize").rglob("*.py") if pattern.search(p.read_text())
    ]
    assert writers == ["gpusize/serving/devices.py"]
