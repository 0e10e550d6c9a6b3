"""A disaggregated plan as NVIDIA Dynamo runs it (pure): the launch command of each pool's worker, the
frontend's, and the `DynamoGraphDeployment` (nvidia.com/v1beta1) that starts them on Kubernetes.

A Dynamo worker is the engine inside Dynamo's own entry point: `python3 -m dynamo.vllm` takes vLLM's
engine arguments (AsyncEngineArgs.add_cli_args, so the model is `--model`, not vllm serve's positional
word) and Dynamo's role flag; the frontend (`python3 -m dynamo.frontend`) serves the OpenAI API and
sends each request to a prefill worker, then to a decode worker, which pulls the prompt's KV cache
over NIXL. Each worker's engine arguments are the words of gpusize's own launch command for that
pool's tensor parallel size (serving/launch.py), so every engine flag is one checked against the
release's argument definitions (tests/data/engine_flags.yaml).

The graph is the shape of Dynamo's own examples (examples/backends/vllm/deploy/disagg.yaml, ai-dynamo/
dynamo 2a6da14c): components Frontend, VllmPrefillWorker (type prefill) and VllmDecodeWorker (type
decode), each a pod template with one container `main`, its replicas the pool's instances and its
`nvidia.com/gpu` limit the instance's GPUs.
"""

from __future__ import annotations

import json
import re
import shlex

from gpusize.core.engines import engine as engine_model
from gpusize.dataclass import dataclass
from gpusize.errors import InputError
from gpusize.serving.deploy import HF_CACHE, Manifest, pod_env, pod_volumes
from gpusize.serving.devices import ACCELERATORS
from gpusize.serving.launch import LaunchCommand

__all__ = [
    "DYNAMO_BACKENDS",
    "DYNAMO_RELEASES",
    "DYNAMO_VENDOR",
    "FRONTEND_PORT",
    "DynamoBackend",
    "DynamoRelease",
    "GraphPlan",
    "PoolPlan",
    "dynamo_launch",
    "dynamo_release",
    "graph_manifest",
]


@dataclass(frozen=True)
class DynamoRelease:
    """A Dynamo release and the engine release its runtime image and wheel pin, by engine name."""

    version: str
    engines: dict[str, str]


#: The Dynamo releases whose worker arguments were read, each in its wheel on PyPI (ai-dynamo
#: 1.4.0 / 1.5.1 / 1.6.1, py3-none-any): dynamo/vllm/backend_args.py declares `--disaggregation-mode`
#: with choices pd, agg, prefill, decode, encode (dynamo/common/constants.py DisaggregationMode);
#: dynamo/vllm/args.py refuses a prefill worker without `--kv-transfer-config` ("--connector is
#: deprecated and the default is no longer nixl") and builds the rest with vLLM's
#: AsyncEngineArgs.add_cli_args; dynamo/frontend/frontend_args.py declares `--http-port` (default
#: 8000). The vLLM each pins: the wheel's METADATA `Requires-Dist: vllm[flashinfer,otel,runai]==X;
#: extra is vllm` (1.4.0: 0.26.0, 1.5.1: 0.28.0, 1.6.1: 0.31.0; 1.4.0 agrees with ai-dynamo/dynamo
#: docs/fern/components/releases.data.ts, "pins: {... vllm: "0.26.0"}"). Oldest first.
DYNAMO_RELEASES: tuple[DynamoRelease, ...] = (
    DynamoRelease("1.4.0", {"vllm": "0.26.0"}),
    DynamoRelease("1.5.1", {"vllm": "0.28.0"}),
    DynamoRelease("1.6.1", {"vllm": "0.31.0"}),
)

#: The frontend's HTTP port (dynamo/frontend/frontend_args.py `--http-port`, default 8000).
FRONTEND_PORT = 8000

#: The KV connector of Dynamo's vLLM disaggregation examples (examples/backends/vllm/deploy/
#: disagg.yaml: both workers `--kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":
#: "kv_both"}'`), written as they write it.
NIXL_KV_CONFIG = json.dumps({"kv_connector": "NixlConnector", "kv_role": "kv_both"}, separators=(",", ":"))


@dataclass(frozen=True)
class DynamoBackend:
    """How Dynamo runs one engine: its worker module, the words that start the engine's own server
    (replaced by the module), the flag that names the model, the component name prefix, the runtime
    image (`{release}`: the Dynamo release) and the words of each role."""

    module: str
    program: tuple[str, ...]
    model_flag: str
    component: str
    image: str
    roles: dict[str, tuple[str, ...]]


#: Engines Dynamo serves disaggregated here, by engine name. vLLM: dynamo.vllm in the image
#: nvcr.io/nvidia/ai-dynamo/vllm-runtime:<release> (releases.data.ts ARTIFACTS, "nvcr.io/nvidia/
#: ai-dynamo/vllm-runtime:1.4.0").
DYNAMO_BACKENDS: dict[str, DynamoBackend] = {
    "vllm": DynamoBackend(
        module="dynamo.vllm",
        program=("vllm", "serve"),
        model_flag="--model",
        component="Vllm",
        image="nvcr.io/nvidia/ai-dynamo/vllm-runtime:{release}",
        roles={
            role: ("--disaggregation-mode", role, "--kv-transfer-config", NIXL_KV_CONFIG)
            for role in ("prefill", "decode")
        },
    ),
}

#: The vendor whose GPUs the runtime images run on: nvcr.io/nvidia/ai-dynamo/vllm-runtime is a CUDA
#: build; gpusize has read no ROCm runtime image of Dynamo, so a disaggregated manifest is for NVIDIA
#: GPUs only (reports/deploy.py graph_plan refuses the others).
DYNAMO_VENDOR = "NVIDIA"

_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=.*", re.DOTALL)


def dynamo_release(engine: str, version: str | None) -> DynamoRelease | None:
    """The newest Dynamo release that ships `engine` at `version` (None: none does)."""
    found = [r for r in DYNAMO_RELEASES if version is not None and r.engines.get(engine) == version]
    return found[-1] if found else None


def _pins(engine: str) -> str:
    return ", ".join(
        f"{r.engines[engine]} (Dynamo {r.version})" for r in DYNAMO_RELEASES if engine in r.engines
    )


def _worker(backend: DynamoBackend, own: LaunchCommand, role: str) -> LaunchCommand:
    """The engine's own launch command for one pool as a Dynamo worker: the environment words kept,
    `vllm serve MODEL` replaced by `python3 -m dynamo.vllm --model MODEL`, the role's words added."""
    if own.command is None:
        return own
    rest = shlex.split(own.command)
    env = []
    while rest and _ASSIGNMENT.fullmatch(rest[0]):  # the leading NAME=VALUE words only
        env.append(rest.pop(0))
    n = len(backend.program)
    if tuple(rest[:n]) != backend.program or len(rest) <= n:
        raise InputError(f"the launch command does not start with {' '.join(backend.program)}: no worker")
    worker = [*env, "python3", "-m", backend.module, backend.model_flag, rest[n], *rest[n + 1 :]]
    worker += backend.roles[role]
    return LaunchCommand(shlex.join(worker), None, own.engine_version)


def dynamo_launch(
    engine: str, version: str | None, prefill: LaunchCommand, decode: LaunchCommand
) -> dict[str, LaunchCommand]:
    """The commands of a disaggregated plan under Dynamo, from the engine's own launch commands at
    each pool's tensor parallel size: the frontend, a prefill worker and a decode worker; or one note
    when no Dynamo release ships this engine release, or when gpusize writes no Dynamo worker for the
    engine."""
    backend = DYNAMO_BACKENDS.get(engine)
    label = engine_model(engine).label
    if backend is None:  # the split is sized, its launch is not written: say so
        return {
            "prefill": LaunchCommand(
                None,
                f"gpusize writes the prefill and decode workers as NVIDIA Dynamo runs them for "
                f"{', '.join(engine_model(e).label for e in DYNAMO_BACKENDS)}; not for {label}: its own P/D "
                "launch is not written",
            )
        }
    release = dynamo_release(engine, version)
    if release is None:
        return {
            "frontend": LaunchCommand(
                None,
                f"no NVIDIA Dynamo release gpusize knows ships {label} {version}; Dynamo ships "
                f"{_pins(engine)}: size with --engine-version one of them for the P/D commands",
            )
        }
    image = backend.image.format(release=release.version)
    frontend = LaunchCommand(
        shlex.join(["python3", "-m", "dynamo.frontend", "--http-port", str(FRONTEND_PORT)]),
        f"NVIDIA Dynamo {release.version} ({image}, {label} {version}): the frontend sends each request "
        "to a prefill worker, then to a decode worker, which pulls its KV cache over NIXL; outside "
        "Kubernetes the workers find each other through etcd and NATS",
        version,
    )
    return {
        "frontend": frontend,
        "prefill": _worker(backend, prefill, "prefill"),
        "decode": _worker(backend, decode, "decode"),
    }


@dataclass(frozen=True)
class PoolPlan:
    """One pool of the graph: its printed worker command, its instances and GPUs per instance."""

    words: tuple[str, ...]
    instances: int
    gpus: int


@dataclass(frozen=True)
class GraphPlan:
    """What a DynamoGraphDeployment needs from a disaggregated serve plan."""

    engine: str
    release: str
    name: str
    frontend: tuple[str, ...]
    prefill: PoolPlan
    decode: PoolPlan
    node_gpus: int
    model_path: str | None = None
    model_is_file: bool = False
    header: tuple[str, ...] = ()


def _volumes(plan: GraphPlan) -> tuple[list[dict[str, object]], list[dict[str, object]]]:
    """The weights' volume and mount; not /dev/shm, which the Dynamo operator mounts itself in every
    component's main container (deploy/operator/internal/dynamo/shared_memory.go
    ApplySharedMemoryVolumeAndMount: 8Gi in memory unless `sharedMemorySize` says otherwise, any other
    mount at /dev/shm dropped)."""
    volumes, mounts = pod_volumes(plan.model_path, plan.model_is_file)
    return [v for v in volumes if v["name"] != "dshm"], [m for m in mounts if m["name"] != "dshm"]


def _container(plan: GraphPlan, image: str, words: tuple[str, ...], gpus: int) -> dict[str, object]:
    """One `main` container: environment words as its environment, the rest as command + args."""
    env = {}
    rest = list(words)
    while rest and _ASSIGNMENT.fullmatch(rest[0]):
        key, _, value = rest.pop(0).partition("=")
        env[key] = value
    _, mounts = _volumes(plan)
    escaped = [w.replace("$", "$$") for w in rest]
    container: dict[str, object] = {
        "name": "main",
        "image": image,
        "command": escaped[:3],
        "args": escaped[3:],
    }
    if gpus:
        container["env"] = pod_env(plan.model_path, env)
        container["resources"] = {"limits": {ACCELERATORS[DYNAMO_VENDOR].resource: str(gpus)}}
        container["volumeMounts"] = mounts
    return container


def _component(
    plan: GraphPlan, name: str, kind: str, replicas: int, image: str, words: tuple[str, ...], gpus: int
) -> dict[str, object]:
    spec: dict[str, object] = {"containers": [_container(plan, image, words, gpus)]}
    if gpus:
        spec["volumes"] = _volumes(plan)[0]
    return {"name": name, "type": kind, "replicas": replicas, "podTemplate": {"spec": spec}}


def graph_manifest(plan: GraphPlan) -> Manifest:
    """The DynamoGraphDeployment of the plan: one frontend, the prefill and the decode pool."""
    backend = DYNAMO_BACKENDS[plan.engine]
    for pool in (plan.prefill, plan.decode):
        if pool.gpus > plan.node_gpus:
            raise InputError(
                f"a worker runs on {pool.gpus} GPUs, more than a node's {plan.node_gpus}: a multi-node "
                "Dynamo worker is not expressed; give --node-gpus at least the pool's GPUs"
            )
    image = backend.image.format(release=plan.release)
    c = backend.component
    body: dict[str, object] = {
        "apiVersion": "nvidia.com/v1beta1",
        "kind": "DynamoGraphDeployment",
        "metadata": {"name": plan.name, "labels": {"app.kubernetes.io/name": plan.name}},
        "spec": {
            "backendFramework": plan.engine,
            "components": [
                _component(plan, "Frontend", "frontend", 1, image, plan.frontend, 0),
                _component(
                    plan,
                    f"{c}PrefillWorker",
                    "prefill",
                    plan.prefill.instances,
                    image,
                    plan.prefill.words,
                    plan.prefill.gpus,
                ),
                _component(
                    plan,
                    f"{c}DecodeWorker",
                    "decode",
                    plan.decode.instances,
                    image,
                    plan.decode.words,
                    plan.decode.gpus,
                ),
            ],
        },
    }
    source = (
        "model: a local path, mounted read-only at the same path from each node's disk (hostPath): "
        "copy it there first"
        if plan.model_path is not None
        else f"model: downloaded from the Hugging Face Hub on start (cache {HF_CACHE}); a gated model reads "
        "HF_TOKEN from the Secret hf-token (key token)"
    )
    notes = (
        *plan.header,
        source,
        f"NVIDIA Dynamo {plan.release} graph: install the Dynamo Kubernetes platform (its operator, etcd "
        f"and NATS) first; the frontend listens on port {FRONTEND_PORT}",
        f"prefill {plan.prefill.instances} worker(s) of {plan.prefill.gpus} GPU(s), decode "
        f"{plan.decode.instances} worker(s) of {plan.decode.gpus} GPU(s): each worker one pod",
    )
    return Manifest(f"{plan.name}-dynamographdeployment.yaml", notes, body)
