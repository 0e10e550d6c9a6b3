"""How a container reaches one vendor's GPUs, and which official image of an engine runs on AMD's (pure).

`ACCELERATORS` is the one table of what a manifest asks of a vendor's GPUs: the Kubernetes resource
its device plugin advertises, and how docker compose hands the GPUs to a container. Everything that
writes a GPU request (serving/deploy.py, serving/dynamo.py) reads it. `ROCM_IMAGES` holds the ROCm
image of each engine that publishes one, with the releases and GPU targets it was built for; an engine,
release, GPU or build it does not cover is refused with the reason (`rocm_image`), never guessed.
"""

from __future__ import annotations

from gpusize.core.engines import engine as engine_model
from gpusize.core.releases import parse_version
from gpusize.dataclass import dataclass
from gpusize.errors import InputError

__all__ = ["ACCELERATORS", "ROCM_IMAGES", "Accelerator", "RocmImage", "accelerator", "rocm_image"]


@dataclass(frozen=True)
class Accelerator:
    """What a manifest asks for one vendor's GPUs. `resource`: the extended resource a pod's limits
    name; `compose_driver`: the driver of a compose device reservation by GPU id (None: the device
    files are mapped instead, `devices`, and `visible` is the environment variable that picks a
    service's GPUs among them); `security_opt` / `seccomp_unconfined`: the seccomp setting the
    vendor's container docs give, for compose and for a Kubernetes container; `setup`: what the
    cluster needs first (a manifest comment)."""

    resource: str
    compose_driver: str | None = None
    devices: tuple[str, ...] = ()
    visible: str | None = None
    security_opt: tuple[str, ...] = ()
    seccomp_unconfined: bool = False
    setup: str = ""


#: NVIDIA: as before, `nvidia.com/gpu` (the NVIDIA device plugin) and a compose reservation with
#: driver nvidia and the GPUs' device ids.
#: AMD: `amd.com/gpu`, the resource of the ROCm device plugin (github ROCm/k8s-device-plugin,
#: internal/pkg/plugin/plugin.go `GetResourceNamespace` returns "amd.com"; cmd/k8s-device-plugin/
#: main.go reports the resource "gpu" under the default `-resource_naming_strategy single`; its
#: example/vllm-serve/deployment.yaml asks `amd.com/gpu: "1"`), installed as the DaemonSet
#: k8s-ds-amdgpu-dp.yaml (its README). Its pod examples (example/pod/pytorch-non-privileged.yaml,
#: example/vllm-serve/deployment.yaml) set `seccompProfile: {type: Unconfined}`. In docker, a ROCm
#: container needs `--device /dev/kfd` (the compute interface all GPUs share) and `--device /dev/dri`
#: (one render node per GPU), with `--security-opt seccomp=unconfined` recommended (rocm.docs.amd.com
#: projects/install-on-linux/en/latest/how-to/docker.html, "Accessing GPUs in containers"; vLLM's
#: docs/getting_started/installation/gpu.rocm.inc.md runs vllm/vllm-openai-rocm with the same three).
#: /dev/dri gives a container every GPU, so a service's own GPUs are chosen with
#: `ROCR_VISIBLE_DEVICES` (rocm.docs.amd.com reference/env-variables.html, GPU isolation: "On Linux,
#: use ROCR_VISIBLE_DEVICES"; conceptual/gpu-isolation.html: the variables are no isolation from
#: an untrusted program). Not added: `--cap-add SYS_PTRACE` (the engine docs add it for debuggers;
#: ROCm's container page does not need it to run).
ACCELERATORS: dict[str, Accelerator] = {
    "NVIDIA": Accelerator("nvidia.com/gpu", compose_driver="nvidia"),
    "AMD": Accelerator(
        "amd.com/gpu",
        devices=("/dev/kfd", "/dev/dri"),
        visible="ROCR_VISIBLE_DEVICES",
        security_opt=("seccomp=unconfined",),
        seccomp_unconfined=True,
        setup="AMD GPUs: amd.com/gpu needs the ROCm device plugin on each node (kubectl create -f "
        "k8s-ds-amdgpu-dp.yaml, github ROCm/k8s-device-plugin)",
    ),
}


@dataclass(frozen=True)
class RocmImage:
    """An engine's official ROCm image: `image` (`{version}`: the release sized, `{family}`: the tag's
    GPU family), the first release published so (None: the tag does not name a release), the GPU
    targets it runs on (`families` maps each to its tag part when the image is one per family), where
    the launch command's first word lives in it (None: on PATH, or as in SERVER_IMAGES), the groups a
    compose service adds, and, when it cannot span nodes as the engine's CUDA image does, why."""

    image: str
    targets: frozenset[str]
    since: str | None = None
    families: dict[str, str] | None = None
    program: str | None = None
    groups: tuple[str, ...] = ()
    one_node: str | None = None


#: vLLM: vllm/vllm-openai-rocm, "vLLM offers official Docker images ... vllm/vllm-openai-rocm",
#: AMD's rocm/vllm images deprecated, available from January 20th, 2026
#: (docs/getting_started/installation/gpu.rocm.inc.md; vllm-project/vllm#32580 of 2026-01-19 added
#: that page's release image): the release script tags `vllm/vllm-openai-rocm:v${RELEASE_VERSION}`
#: (.buildkite/scripts/publish-release-images.sh, "---- ROCm ----"), so 0.14.0, the first release
#: after that date (its rc0 was cut on 2026-01-11: QwenLM/Qwen3-VL-Embedding#7; public run scripts
#: pull vllm/vllm-openai-rocm:v0.14.0), is the first tag gpusize writes. ENTRYPOINT ["vllm", "serve"] (docker/
#: Dockerfile.rocm, stage vllm-openai), run with `--group-add=video` (gpu.rocm.inc.md). One fat
#: image: PYTORCH_ROCM_ARCH gfx90a;gfx942;gfx950;gfx1100;gfx1101;gfx1200;gfx1201;gfx1150;gfx1151
#: (docker/Dockerfile.rocm_base). No environment variable is required (the page's run line sets
#: none). Not over nodes: the LeaderWorkerSet start goes through Ray's multi-node-serving.sh, and
#: the ROCm image installs no Ray (requirements/rocm.txt, requirements/common.txt and
#: Dockerfile.rocm_base list none; the CUDA image's comes from requirements/cuda.txt).
#: SGLang: lmsysorg/sglang:v<version>-rocm700-mi30x for gfx942 (MI300X/MI325X) and -rocm700-mi35x
#: for gfx950 (MI350X/MI355X): .github/workflows/release-docker-amd.yml builds on each v* tag
#: `tag=v${version}-${rocm_tag}` with rocm_tag rocm700-mi30x / rocm700-mi35x (and rocm720) and names
#: rocm700-mi30x "the recommended variant" (its rocm-latest tag); sgl-project/sglang#38763
#: (2026-09-10) still lists rocm700 among the flavours it builds on a version tag, and docker/
#: rocm.Dockerfile's usage lines build v0.5.17-rocm700-mi30x / -mi35x. From 0.5.10
#: (radixark/miles#1474 builds on `v0.5.10-rocm700-mi30x`); older releases were tagged otherwise
#: (rocm630, no family: the same workflow's latest-tag step). The docs start the server with
#: `python3 -m sglang.launch_server` and `--group-add video` (docs/platforms/amd_gpu.md), so the
#: launch command's `python` is run as python3.
#: llama.cpp: ghcr.io/ggml-org/llama.cpp:server-rocm, "Same as server but compiled with ROCm
#: support" (docs/docker.md), llama-server in /app with LLAMA_ARG_HOST=0.0.0.0 (.devops/
#: rocm.Dockerfile, stage server); a fat build whose targets docs/docker.md lists ("Supported GPU
#: architectures"). Its run lines add the host's video and render groups by number: "the images do
#: not define video and render groups, so --group-add render fails to resolve" (docs/docker.md), so
#: compose reads the numbers from VIDEO_GID and RENDER_GID and stops when they are unset.
ROCM_IMAGES: dict[str, RocmImage] = {
    "vllm": RocmImage(
        "vllm/vllm-openai-rocm:v{version}",
        frozenset(
            ("gfx90a", "gfx942", "gfx950", "gfx1100", "gfx1101", "gfx1200", "gfx1201", "gfx1150", "gfx1151")
        ),
        since="0.14.0",
        groups=("video",),
        one_node="vLLM's ROCm image (vllm/vllm-openai-rocm) installs no Ray, which the LeaderWorkerSet "
        "start uses (SGLang's ROCm image spans nodes with its own flags: --engine sglang)",
    ),
    "sglang": RocmImage(
        "lmsysorg/sglang:v{version}-rocm700-{family}",
        frozenset(("gfx942", "gfx950")),
        since="0.5.10",
        families={"gfx942": "mi30x", "gfx950": "mi35x"},
        program="python3",
        groups=("video",),
    ),
    "llamacpp": RocmImage(
        "ghcr.io/ggml-org/llama.cpp:server-rocm",
        frozenset(
            (
                *("gfx908", "gfx90a", "gfx942", "gfx950", "gfx1010", "gfx1011", "gfx1012"),
                *(f"gfx{n}" for n in range(1030, 1037)),
                *("gfx1100", "gfx1101", "gfx1102", "gfx1103", "gfx1150", "gfx1151", "gfx1152"),
                *("gfx1153", "gfx1200", "gfx1201"),
            )
        ),
        program="/app/llama-server",
        groups=(
            "${VIDEO_GID:?set VIDEO_GID to the host's video group id}",
            "${RENDER_GID:?set RENDER_GID to the host's render group id}",
        ),
    ),
}


#: The vendor whose GPUs ROCM_IMAGES run on (llama.cpp's builds name theirs: core/engines/llamacpp.py).
ROCM_VENDOR = "AMD"


def _shown(image: RocmImage) -> str:
    """The image name as a message writes it, its tag's parts as placeholders."""
    return image.image.format(version="<version>", family="<family>")


def accelerator(vendor: str, gpu: str) -> Accelerator:
    """The vendor's entry of ACCELERATORS; refused for a vendor without one (Apple)."""
    found = ACCELERATORS.get(vendor)
    if found is None:
        raise InputError(
            f"gpusize knows no container device resource for {vendor} GPUs ({gpu}): no manifest; "
            "run the launch command on the host"
        )
    return found


def rocm_image(
    engine: str, label: str, version: str | None, gfx_target: str | None, backend: str | None, gpu: str
) -> tuple[RocmImage, str]:
    """The engine's ROCm image for this plan and its tag, refused (one line, what to do) where the
    engine, its release, the GPU's target or the build has no official ROCm image."""
    image = ROCM_IMAGES.get(engine)
    if image is None:
        raise InputError(f"gpusize knows no official ROCm image of {label}: no manifest for {gpu}")
    model = engine_model(engine)
    if backend is not None and model.build_vendors.get(backend) != ROCM_VENDOR:
        raise InputError(
            f"manifests on AMD GPUs run {label}'s ROCm image ({_shown(image)}), not its "
            f"{model.build_labels.get(backend, backend)} build: drop --backend, or run the launch command "
            "on the host"
        )
    if gfx_target not in image.targets:
        target = gfx_target or "no known GPU target"
        raise InputError(
            f"{label}'s ROCm image ({_shown(image)}) is not built for {gpu} ({target}; it targets "
            f"{', '.join(sorted(image.targets))}): run the launch command on the host"
        )
    if image.since is not None:
        asked, first = parse_version(version or ""), parse_version(image.since)
        if asked is None or first is None or asked < first:
            raise InputError(
                f"{label}'s ROCm images are tagged from {image.since}: size with --engine-version "
                f"{image.since} or later for a manifest on {gpu}"
            )
    family = (image.families or {}).get(gfx_target or "", "")
    return image, image.image.format(version=version, family=family)
