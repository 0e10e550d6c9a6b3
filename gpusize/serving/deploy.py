"""Deployment manifests for a serve plan (pure): Kubernetes objects and a docker compose project as
plain values, from the plan's own launch command (its words, never re-derived) and layout.

One replica on one node is a Kubernetes `apps/v1` Deployment (replicas = the plan's replicas, each
pod the GPUs of one replica) with a Service; a replica on more GPUs than one node has is a
LeaderWorkerSet (`leaderworkerset.x-k8s.io/v1`, kubernetes-sigs/lws): one group per replica, `size`
pods of one node's GPUs each, started the way the LWS examples start each engine
(docs/examples/vllm/GPU/lws.yaml: Ray through vLLM's multi-node-serving.sh;
docs/examples/sglang/lws.yaml: SGLang's own --dist-init-addr / --nnodes / --node-rank). Docker compose
is one machine: one service per replica with its GPUs reserved by device id.

On AMD GPUs (serving/devices.py) the pods ask for `amd.com/gpu` and run the engine's ROCm image, and
a compose service maps /dev/kfd and /dev/dri and picks its GPUs with ROCR_VISIBLE_DEVICES; every
fact of a vendor's devices is read from `devices.ACCELERATORS`, of an image from SERVER_IMAGES or
`devices.ROCM_IMAGES`.

Every word of the launch command is passed as one list item (no shell), except the vLLM leader of a
LeaderWorkerSet, which runs the Ray start script first in `sh -c` with the command shell-quoted. A `$`
in a word is doubled: Kubernetes expands `$(VAR)` in command and args and compose interpolates `$VAR`,
and both read `$$` as one `$`, so the engine receives the word as printed.
"""

from __future__ import annotations

import re
import shlex

from gpusize.core.engines import engine as engine_model
from gpusize.dataclass import dataclass
from gpusize.errors import InputError
from gpusize.serving.devices import ROCM_IMAGES, ROCM_VENDOR, Accelerator, accelerator, rocm_image

__all__ = [
    "COMPOSE_FILE",
    "SERVER_IMAGES",
    "DeployPlan",
    "Manifest",
    "ServerImage",
    "compose_manifest",
    "kubernetes_manifests",
    "object_name",
    "pod_env",
    "pod_volumes",
]


@dataclass(frozen=True)
class ServerImage:
    """How an engine's official image serves: the image (`{version}`: the release sized), the port and
    health endpoint of its HTTP server, where the launch command's first word lives in the image (None:
    on PATH), the words that make it listen beyond localhost, and how it spans nodes (None: it cannot)."""

    image: str
    port: int
    health: str
    program: str | None = None
    listen: tuple[str, ...] = ()
    multinode: str | None = None
    #: The image used when the release is not told apart (llama.cpp's build tags are not modelled).
    unversioned: str | None = None


#: The official image of each engine that serves over HTTP, by engine name.
#: vLLM: image vllm/vllm-openai (docs: deployment/docker), ENTRYPOINT `vllm serve`; `--port` default
#: 8000 (vllm/entrypoints/openai/cli_args.py) and `--host` default None, bound as every interface
#: (vllm/entrypoints/openai/api_server.py: `sock_addr = (args.host or "", args.port)`); `GET /health`
#: (same file). Multi-node: Ray, as kubernetes-sigs/lws
#: docs/examples/vllm/GPU/lws.yaml.
#: SGLang: image lmsysorg/sglang (sgl-project/sglang docker/Dockerfile links /usr/bin/python);
#: `--port` default 30000 but `--host` default 127.0.0.1 (sglang/srt/server_args.py), so the manifest
#: adds `--host 0.0.0.0`; `GET /health` (sglang/srt/entrypoints/http_server.py). Multi-node: its own
#: --dist-init-addr/--nnodes/--node-rank, as docs/examples/sglang/lws.yaml.
#: llama.cpp: image ghcr.io/ggml-org/llama.cpp:server-cuda (.devops/cuda.Dockerfile: llama-server in
#: /app, not on PATH; LLAMA_ARG_HOST=0.0.0.0; HEALTHCHECK on localhost:8080/health); `--port` default
#: 8080 (common/arg.cpp); `GET /health` (tools/server/README.md). One machine only.
#: Ollama: image ollama/ollama (its Dockerfile: ENTRYPOINT /bin/ollama, OLLAMA_HOST=0.0.0.0:11434),
#: tags each release without a "v" (pinned to the release modelled); `GET /` answers "Ollama is
#: running" (server/routes.go); the model is pulled on the first `ollama run` (not expressed by the
#: manifest). One machine only.
#: TensorRT-LLM: image nvcr.io/nvidia/tensorrt-llm/release:<release> (NGC; docs/source/quick-start-
#: guide.md); trtllm-serve `--port` default 8000 and `--host` default localhost (tensorrt_llm/commands/
#: serve.py), so the manifest adds `--host 0.0.0.0`; `GET /health` (serve/openai_server.py). A
#: printed --extra_llm_api_options file must be mounted beside it (the launch note holds its content).
SERVER_IMAGES: dict[str, ServerImage] = {
    "vllm": ServerImage("vllm/vllm-openai:v{version}", 8000, "/health", multinode="ray"),
    "sglang": ServerImage(
        "lmsysorg/sglang:v{version}", 30000, "/health", listen=("--host", "0.0.0.0"), multinode="native"
    ),
    "llamacpp": ServerImage(
        "ghcr.io/ggml-org/llama.cpp:server-cuda-{version}",
        8080,
        "/health",
        program="/app/llama-server",
        unversioned="ghcr.io/ggml-org/llama.cpp:server-cuda",
    ),
    # The release whose scheduler estimate gpusize models (core/engines/ollama_estimate.py): v0.12.3.
    "ollama": ServerImage("ollama/ollama:0.12.3", 11434, "/"),
    "trtllm": ServerImage(
        "nvcr.io/nvidia/tensorrt-llm/release:{version}", 8000, "/health", listen=("--host", "0.0.0.0")
    ),
}

#: What compose's one file is called (docker compose reads compose.yaml by default: compose-spec
#: 03-compose-file.md).
COMPOSE_FILE = "compose.yaml"

#: The LWS examples' leader start script (in the vllm/vllm-openai image) and SGLang's rendezvous port.
VLLM_RAY_SCRIPT = "/vllm-workspace/examples/online_serving/multi-node-serving.sh"
SGLANG_DIST_PORT = 20000

#: Probe timing: a pod may take this long to download and load the weights (and capture CUDA graphs)
#: before liveness applies: 180 x 10 s = 30 minutes.
STARTUP_PERIOD_S = 10
STARTUP_FAILURES = 180
READY_PERIOD_S = 10
LIVE_PERIOD_S = 30

#: Where the engines cache Hub downloads in their images (huggingface_hub's default HF_HOME as root).
HF_CACHE = "/root/.cache/huggingface"
#: The Secret a gated model's token is read from (optional: ungated models need none).
HF_SECRET = "hf-token"

#: The label every object carries and the Service selects by.
APP_LABEL = "app.kubernetes.io/name"


@dataclass(frozen=True)
class DeployPlan:
    """What a manifest needs from a serve plan: the launch command's words as printed (environment
    assignments first, if any), the layout, and where the weights come from (`model_path`: a local file
    or folder to mount at the same path; None: the engine downloads the Hub id in the command), and
    the GPU: its vendor, LLVM target (AMD) and name, and the llama.cpp build asked (None: the vendor's
    own)."""

    engine: str
    engine_label: str
    version: str | None
    words: tuple[str, ...]
    replicas: int
    gpus_per_replica: int
    node_gpus: int
    name: str
    model_path: str | None = None
    model_is_file: bool = False
    header: tuple[str, ...] = ()
    vendor: str = "NVIDIA"
    gfx_target: str | None = None
    backend: str | None = None
    gpu: str = ""


@dataclass(frozen=True)
class Manifest:
    """One object to write: its file name, comment lines to print above it, and its body."""

    filename: str
    comments: tuple[str, ...]
    body: dict[str, object]


def object_name(model: str, engine: str) -> str:
    """A Kubernetes object name (a DNS-1123 label, short enough for LWS pod names) and compose project
    name from the model's name: lower case, runs of anything else turned into one `-`."""
    base = re.sub(r"\.gguf$", "", model.rsplit("/", 1)[-1].lower())
    stem = re.sub(r"[^a-z0-9]+", "-", base).strip("-")[:40].strip("-")
    return f"{engine}-{stem or 'model'}"


def _escaped(word: str) -> str:
    """A word as Kubernetes command/args and compose keep it literally (`$` doubled)."""
    return word.replace("$", "$$")


def _split(plan: DeployPlan) -> tuple[dict[str, str], list[str]]:
    """The leading NAME=VALUE words (the environment) and the command proper, its first word replaced
    by where the image keeps the program."""
    env: dict[str, str] = {}
    words = list(plan.words)
    while words and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", words[0], re.DOTALL):
        name, _, value = words.pop(0).partition("=")
        env[name] = value
    if not words:
        raise InputError("the launch command is empty: nothing to deploy")
    program = _program(plan)
    if program:
        words[0] = program
    return env, words


def _rocm(plan: DeployPlan) -> bool:
    """Whether the plan runs the engine's ROCm image (devices.ROCM_IMAGES) instead of SERVER_IMAGES'."""
    return plan.vendor == ROCM_VENDOR


def _program(plan: DeployPlan) -> str | None:
    """Where the image keeps the launch command's first word (None: as the command names it)."""
    server = SERVER_IMAGES[plan.engine]
    if _rocm(plan):
        return ROCM_IMAGES[plan.engine].program or server.program
    return server.program


def _device(plan: DeployPlan) -> Accelerator:
    """The vendor's devices (refused for a vendor without any, or a plan no ROCm image runs)."""
    found = accelerator(plan.vendor, plan.gpu or plan.vendor)
    if _rocm(plan):
        rocm_image(plan.engine, plan.engine_label, plan.version, plan.gfx_target, plan.backend, plan.gpu)
    elif (
        plan.backend is not None and engine_model(plan.engine).build_vendors.get(plan.backend) != plan.vendor
    ):
        server = SERVER_IMAGES[plan.engine]
        own = server.unversioned or server.image
        build = engine_model(plan.engine).build_labels.get(plan.backend, plan.backend)
        raise InputError(
            f"manifests on {plan.vendor} GPUs run {plan.engine_label}'s image {own}, not its {build} "
            "build: drop --backend, or run the launch command on the host"
        )
    return found


def _image(plan: DeployPlan) -> tuple[str, str | None]:
    """The image and, when its tag is not the release sized, a comment saying so."""
    server = SERVER_IMAGES[plan.engine]
    if _rocm(plan):
        rocm, image = rocm_image(
            plan.engine, plan.engine_label, plan.version, plan.gfx_target, plan.backend, plan.gpu
        )
        if "{version}" in rocm.image:
            return image, None
        return (
            image,
            f"image: {image} moves with each {plan.engine_label} release; pin a digest to repeat this",
        )
    if plan.version is not None:
        return server.image.format(version=plan.version), None
    image = server.unversioned or server.image.split(":")[0] + ":latest"
    return image, f"image: {image} moves with each {plan.engine_label} release; pin a tag to repeat this"


def _source_comment(plan: DeployPlan) -> str:
    if plan.model_path is not None:
        return (
            "model: a local path, mounted read-only at the same path from each node's disk (hostPath / "
            "bind mount): copy it there first"
        )
    return (
        f"model: downloaded from the Hugging Face Hub on start (cache {HF_CACHE}); a gated model reads "
        f"HF_TOKEN from the Secret {HF_SECRET} (key token) or, in compose, the shell's HF_TOKEN"
    )


def _nodes(plan: DeployPlan) -> int:
    """Pods per replica: 1 when a replica fits one node, else the nodes it spans (refused when its GPUs
    do not divide into whole nodes or the engine runs on one machine only)."""
    if plan.gpus_per_replica <= plan.node_gpus:
        return 1
    if plan.gpus_per_replica % plan.node_gpus:
        raise InputError(
            f"a replica runs on {plan.gpus_per_replica} GPUs, which do not split into nodes of "
            f"{plan.node_gpus}: give --node-gpus a divisor of {plan.gpus_per_replica}"
        )
    one_node = ROCM_IMAGES[plan.engine].one_node if _rocm(plan) else None
    if one_node is not None:
        raise InputError(
            f"{one_node}: a replica of {plan.gpus_per_replica} GPUs on {plan.gpu} is not written over "
            f"nodes; give --node-gpus {plan.gpus_per_replica} or more"
        )
    if SERVER_IMAGES[plan.engine].multinode is None:
        raise InputError(
            f"{plan.engine_label} runs a replica on one machine: a replica of {plan.gpus_per_replica} "
            f"GPUs needs nodes of at least {plan.gpus_per_replica} GPUs"
        )
    return plan.gpus_per_replica // plan.node_gpus


def _volumes(plan: DeployPlan) -> tuple[list[dict[str, object]], list[dict[str, object]]]:
    return pod_volumes(plan.model_path, plan.model_is_file)


def pod_volumes(
    model_path: str | None, model_is_file: bool
) -> tuple[list[dict[str, object]], list[dict[str, object]]]:
    """Pod volumes and their mounts: shared memory for NCCL/the engine's workers, and the weights (a
    local model mounted at its own path, else the Hub cache)."""
    volumes: list[dict[str, object]] = [{"name": "dshm", "emptyDir": {"medium": "Memory"}}]
    mounts: list[dict[str, object]] = [{"name": "dshm", "mountPath": "/dev/shm"}]
    if model_path is not None:
        kind = "File" if model_is_file else "Directory"
        volumes.append({"name": "model", "hostPath": {"path": model_path, "type": kind}})
        mounts.append({"name": "model", "mountPath": model_path, "readOnly": True})
    else:
        volumes.append({"name": "hf-cache", "emptyDir": {}})
        mounts.append({"name": "hf-cache", "mountPath": HF_CACHE})
    return volumes, mounts


def _env(plan: DeployPlan, assigned: dict[str, str]) -> list[dict[str, object]]:
    return pod_env(plan.model_path, assigned)


def pod_env(model_path: str | None, assigned: dict[str, str]) -> list[dict[str, object]]:
    """A container's environment: the launch command's assignments (`$` doubled) and, for a Hub
    model, HF_TOKEN from the optional Secret."""
    env: list[dict[str, object]] = [{"name": k, "value": _escaped(v)} for k, v in assigned.items()]
    if model_path is None:
        secret = {"name": HF_SECRET, "key": "token", "optional": True}
        env.append({"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": secret}})
    return env


def _probe(server: ServerImage, period: int, failures: int) -> dict[str, object]:
    return {
        "httpGet": {"path": server.health, "port": server.port},
        "periodSeconds": period,
        "failureThreshold": failures,
    }


def _container(
    plan: DeployPlan, name: str, command: list[str], gpus: int, env: list[dict[str, object]], probes: bool
) -> dict[str, object]:
    server = SERVER_IMAGES[plan.engine]
    image, _ = _image(plan)
    _, mounts = _volumes(plan)
    device = _device(plan)
    container: dict[str, object] = {
        "name": name,
        "image": image,
        "command": command[:1],
        "args": command[1:],
        **({"env": env} if env else {}),
        "ports": [{"name": "http", "containerPort": server.port}],
        "resources": {"limits": {device.resource: str(gpus)}},
        "volumeMounts": mounts,
    }
    if device.seccomp_unconfined:
        container["securityContext"] = {"seccompProfile": {"type": "Unconfined"}}
    if probes:
        container["startupProbe"] = _probe(server, STARTUP_PERIOD_S, STARTUP_FAILURES)
        container["readinessProbe"] = _probe(server, READY_PERIOD_S, 3)
        container["livenessProbe"] = _probe(server, LIVE_PERIOD_S, 3)
    return container


def _service(plan: DeployPlan, selector: dict[str, str]) -> dict[str, object]:
    port = SERVER_IMAGES[plan.engine].port
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": plan.name, "labels": {APP_LABEL: plan.name}},
        "spec": {
            "type": "ClusterIP",
            "selector": selector,
            "ports": [{"name": "http", "port": port, "targetPort": port, "protocol": "TCP"}],
        },
    }


def kubernetes_manifests(plan: DeployPlan) -> list[Manifest]:
    """A Deployment + Service when a replica fits one node, else a LeaderWorkerSet + Service."""
    device = _device(plan)
    nodes = _nodes(plan)
    env_words, words = _split(plan)
    env = _env(plan, env_words)
    _, image_note = _image(plan)
    volumes, _ = _volumes(plan)
    server = SERVER_IMAGES[plan.engine]
    notes = [*plan.header, _source_comment(plan), *([image_note] if image_note else [])]
    notes += [device.setup] if device.setup else []
    labels = {APP_LABEL: plan.name}
    command = [_escaped(w) for w in words] + list(server.listen)
    if nodes == 1:
        deployment: dict[str, object] = {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": plan.name, "labels": labels},
            "spec": {
                "replicas": plan.replicas,
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {
                        "containers": [
                            _container(plan, plan.engine, command, plan.gpus_per_replica, env, True)
                        ],
                        "volumes": volumes,
                    },
                },
            },
        }
        notes.append(
            f"{plan.replicas} replica(s) of {plan.gpus_per_replica} GPU(s), one pod each; the Service "
            "spreads requests over the ready pods"
        )
        return [
            Manifest(f"{plan.name}-deployment.yaml", tuple(notes), deployment),
            Manifest(f"{plan.name}-service.yaml", (), _service(plan, labels)),
        ]
    leader_cmd, worker_cmd = _multinode_commands(plan, words)
    group = {"leaderworkerset.sigs.k8s.io/name": plan.name, "role": "leader"}
    per_node = plan.node_gpus
    lws: dict[str, object] = {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": {"name": plan.name, "labels": labels},
        "spec": {
            "replicas": plan.replicas,
            "leaderWorkerTemplate": {
                "size": nodes,
                "restartPolicy": "RecreateGroupOnPodRestart",
                "leaderTemplate": {
                    "metadata": {"labels": {**labels, "role": "leader"}},
                    "spec": {
                        "containers": [
                            _container(plan, f"{plan.engine}-leader", leader_cmd, per_node, env, True)
                        ],
                        "volumes": volumes,
                    },
                },
                "workerTemplate": {
                    "metadata": {"labels": {**labels, "role": "worker"}},
                    "spec": {
                        "containers": [
                            _container(plan, f"{plan.engine}-worker", worker_cmd, per_node, env, False)
                        ],
                        "volumes": volumes,
                    },
                },
            },
        },
    }
    notes += [
        f"{plan.replicas} replica(s) of {plan.gpus_per_replica} GPUs, each a group of {nodes} pods of "
        f"{per_node} GPUs on {nodes} nodes (LeaderWorkerSet; install the LWS controller first)",
        f"not expressed: the launch command's parallelism spans {nodes} nodes over the network between "
        "them; gpusize sized memory per GPU, and its speed estimates assume one server's GPU links",
    ]
    return [
        Manifest(f"{plan.name}-leaderworkerset.yaml", tuple(notes), lws),
        Manifest(f"{plan.name}-service.yaml", (), _service(plan, group)),
    ]


def _multinode_commands(plan: DeployPlan, words: list[str]) -> tuple[list[str], list[str]]:
    """Leader and worker commands as the LWS examples start the engine over nodes."""
    server = SERVER_IMAGES[plan.engine]
    if server.multinode == "ray":
        launch = " ".join(shlex.quote(_escaped(w)) for w in words + list(server.listen))
        leader = f"bash {VLLM_RAY_SCRIPT} leader --ray_cluster_size=$(LWS_GROUP_SIZE); exec {launch}"
        worker = f"bash {VLLM_RAY_SCRIPT} worker --ray_address=$(LWS_LEADER_ADDRESS)"
        return ["sh", "-c", leader], ["sh", "-c", worker]
    dist = [
        "--dist-init-addr",
        f"$(LWS_LEADER_ADDRESS):{SGLANG_DIST_PORT}",
        "--nnodes",
        "$(LWS_GROUP_SIZE)",
        "--node-rank",
        "$(LWS_WORKER_INDEX)",
    ]
    base = [_escaped(w) for w in words]
    return base + dist + list(server.listen), base + dist


def compose_manifest(plan: DeployPlan) -> Manifest:
    """One compose service per replica on one machine, each with its own GPUs by device id and port;
    a plan whose replicas fill several servers (serve --nodes) is one machine's share of them, the
    same file run on each server."""
    if plan.gpus_per_replica > plan.node_gpus:
        raise InputError("docker compose runs on one machine: a replica spanning nodes needs --format k8s")
    servers = max(1, -(-plan.replicas * plan.gpus_per_replica // plan.node_gpus))
    here = -(-plan.replicas // servers)  # the replicas one server runs
    device = _device(plan)
    env_words, words = _split(plan)
    server = SERVER_IMAGES[plan.engine]
    image, image_note = _image(plan)
    entrypoint = [_escaped(w) for w in words] + list(server.listen)
    environment: list[str] = [f"{k}={_escaped(v)}" for k, v in env_words.items()]
    volumes: list[dict[str, object]] = []
    if plan.model_path is not None:
        volumes.append(
            {
                "type": "bind",
                "source": _escaped(plan.model_path),
                "target": _escaped(plan.model_path),
                "read_only": True,
            }
        )
    else:
        environment.append("HF_TOKEN")
        volumes.append({"type": "volume", "source": "hf-cache", "target": HF_CACHE})
    services: dict[str, object] = {}
    for i in range(here):
        first = i * plan.gpus_per_replica
        devices = [str(d) for d in range(first, first + plan.gpus_per_replica)]
        services[f"{plan.name}-{i}"] = {
            "image": image,
            "entrypoint": entrypoint,
            **_compose_environment(plan, device, environment, devices),
            "ipc": "host",
            "ports": [f"{server.port + i}:{server.port}"],
            "volumes": volumes,
            **_compose_gpus(plan, device, devices),
            "restart": "unless-stopped",
        }
    body: dict[str, object] = {"name": plan.name, "services": services}
    if plan.model_path is None:
        body["volumes"] = {"hf-cache": {}}
    notes = [
        *plan.header,
        _source_comment(plan),
        *([image_note] if image_note else []),
        f"{here} service(s), one per replica of {plan.gpus_per_replica} GPU(s), on host port(s) "
        f"{server.port}"
        + (f"-{server.port + here - 1}" if here > 1 else "")
        + "; put a load balancer in front of them",
    ]
    if servers > 1:
        notes.append(
            f"run this file on each of the {servers} servers of {plan.node_gpus} GPUs: the plan's "
            f"{plan.replicas} replicas, {here} per server; the load balancer spreads over every server"
        )
    if device.visible is not None:
        notes.append(
            f"each service maps every GPU ({', '.join(device.devices)}) and runs on its own through "
            f"{device.visible}, which selects GPUs but does not isolate them"
        )
    groups = ROCM_IMAGES[plan.engine].groups if _rocm(plan) else ()
    if any("$" in g for g in groups):
        notes.append(
            "group_add: the image defines no video and render groups, so give the host's group ids: export "
            "VIDEO_GID=$(getent group video | cut -d: -f3) RENDER_GID=$(getent group render | cut -d: -f3)"
        )
    return Manifest(COMPOSE_FILE, tuple(notes), body)


def _compose_environment(
    plan: DeployPlan, device: Accelerator, environment: list[str], gpus: list[str]
) -> dict[str, object]:
    """A service's environment: the command's, the Hub token, and the variable that picks its GPUs
    where the vendor's devices are mapped whole."""
    picked = [f"{device.visible}={','.join(gpus)}"] if device.visible is not None else []
    every = environment + picked
    return {"environment": every} if every else {}


def _compose_gpus(plan: DeployPlan, device: Accelerator, gpus: list[str]) -> dict[str, object]:
    """How a service gets its GPUs: a device reservation by id (NVIDIA), or the vendor's device files
    with the image's groups and the vendor's security options (AMD)."""
    if device.compose_driver is not None:
        reservation = {"driver": device.compose_driver, "device_ids": gpus, "capabilities": ["gpu"]}
        return {"deploy": {"resources": {"reservations": {"devices": [reservation]}}}}
    groups = ROCM_IMAGES[plan.engine].groups if _rocm(plan) else ()
    return {
        "devices": list(device.devices),
        **({"group_add": list(groups)} if groups else {}),
        **({"security_opt": list(device.security_opt)} if device.security_opt else {}),
    }
