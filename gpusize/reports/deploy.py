"""The deployment of a serve report (pure): its recommended layout and printed launch command as the
plan a manifest is built from (serving/deploy.py); refused, with the reason, when there is nothing
to deploy."""

from __future__ import annotations

import os
import shlex

from gpusize.core.engines import engine
from gpusize.core.gpu import GpuSpec
from gpusize.core.network import GPUS_PER_NODE
from gpusize.errors import InputError
from gpusize.reports.serve import ServeReport
from gpusize.serving.deploy import SERVER_IMAGES, DeployPlan, object_name
from gpusize.serving.devices import ACCELERATORS
from gpusize.serving.dynamo import DYNAMO_VENDOR, GraphPlan, PoolPlan, dynamo_release
from gpusize.serving.layouts import layout_name, parallel_name

__all__ = ["deploy_plan", "graph_plan"]


def deploy_plan(
    report: ServeReport, model_path: str | None, model_is_file: bool, node_gpus: int | None, gpu: GpuSpec
) -> DeployPlan:
    """The plan of `report` to deploy: its replicas and GPUs per replica, the launch command's words
    exactly as printed; `model_path` a local model to mount (absolute, as the command names it);
    `node_gpus` the GPUs of one node (default: the server sized); `gpu` the GPU sized (its vendor
    picks the device resource and image, serving/devices.py)."""
    pick = report.recommendation
    if pick is None:
        raise InputError(
            f"no layout runs the model on {report.num_gpus}x {report.gpu}: there is no plan to deploy"
        )
    name = report.workload.engine.name
    if name not in SERVER_IMAGES:
        raise InputError(f"gpusize has no container image for {engine(name).label}: no manifest")
    launch = report.launch.get(name)
    if launch is None or launch.command is None:
        reason = launch.note if launch is not None and launch.note else "no launch command for this plan"
        raise InputError(f"nothing to deploy: {reason}")
    _check_path(model_path)
    server = report.nodes.gpus_per_node if report.nodes else report.num_gpus
    if pick.expert_parallel > 1 and pick.gpus_per_replica > (node_gpus or server):
        raise InputError(
            f"gpusize writes no manifest for {layout_name(pick)} across servers: vLLM starts it as one "
            "engine per server (--data-parallel-start-rank, --headless), which the LeaderWorkerSet's Ray "
            "start does not do; run the printed commands on each server"
        )
    model = engine(name)
    return DeployPlan(
        engine=name,
        engine_label=model.label,
        version=launch.engine_version,
        words=tuple(shlex.split(launch.command)),
        replicas=pick.replicas,
        gpus_per_replica=pick.gpus_per_replica,
        node_gpus=node_gpus or server,
        name=object_name(report.model.name or report.model.id, name),
        model_path=model_path,
        model_is_file=model_is_file,
        vendor=gpu.vendor,
        gfx_target=gpu.gfx_target,
        backend=report.workload.engine.backend,
        gpu=gpu.full_name,
        header=(
            f"gpusize {report.gpusize_version} serve {report.model.id}: {pick.replicas} x "
            f"{pick.gpus_per_replica} GPU(s) ({report.num_gpus}x {report.gpu}), {model.label} "
            f"{launch.engine_version or ''}".rstrip(),
        ),
    )


def _check_path(model_path: str | None) -> None:
    if model_path is not None and (not os.path.isabs(model_path) or ":" in model_path):
        raise InputError(
            "a manifest mounts a local model at its own path, which must be absolute and hold no ':' "
            "(a Kubernetes mountPath rule): give the model as an absolute path"
        )


def graph_plan(
    report: ServeReport, model_path: str | None, model_is_file: bool, node_gpus: int | None, gpu: GpuSpec
) -> GraphPlan:
    """The disaggregated plan of `report` (serve --disaggregate) as NVIDIA Dynamo runs it: the
    frontend and the two pools' worker commands exactly as printed, each pool's instances and GPUs;
    refused, with the reason, when there is no split, no printed worker command, or the GPU is not
    one Dynamo's runtime images run on."""
    if gpu.vendor != DYNAMO_VENDOR:
        resource = ACCELERATORS[DYNAMO_VENDOR].resource
        raise InputError(
            f"NVIDIA Dynamo's runtime images are CUDA builds requesting {resource}: gpusize writes no "
            f"disaggregated manifest for {gpu.full_name}; drop --disaggregate for the aggregated plan's"
        )
    split = report.disaggregated
    if split is None:
        raise InputError(
            f"no split of {report.num_gpus}x {report.gpu} runs the model in a prefill and a decode pool"
        )
    name = report.workload.engine.name
    front, pre, dec = (report.launch.get(k) for k in ("frontend", "prefill", "decode"))
    if front is None:
        raise InputError(
            f"gpusize has no NVIDIA Dynamo worker for {engine(name).label}: no disaggregated manifest "
            "(drop --disaggregate for the aggregated plan's)"
        )
    release = dynamo_release(name, report.workload.engine_version)
    if release is None or front.command is None:  # no Dynamo release ships this engine release
        raise InputError(f"nothing to deploy: {front.note or 'no NVIDIA Dynamo release for this plan'}")
    if pre is None or dec is None or pre.command is None or dec.command is None:
        reason = next((c.note for c in (pre, dec) if c is not None and c.note), None)
        raise InputError(f"nothing to deploy: {reason or 'no worker command for this plan'}")
    _check_path(model_path)
    p, d = split.prefill, split.decode
    return GraphPlan(
        engine=name,
        release=release.version,
        name=object_name(report.model.name or report.model.id, name),
        frontend=tuple(shlex.split(front.command)),
        prefill=PoolPlan(tuple(shlex.split(pre.command)), p.instances, p.tensor_parallel),
        decode=PoolPlan(tuple(shlex.split(dec.command)), d.instances, d.tensor_parallel),
        node_gpus=node_gpus
        or (report.nodes.gpus_per_node if report.nodes else min(report.num_gpus, GPUS_PER_NODE)),
        model_path=model_path,
        model_is_file=model_is_file,
        header=(
            f"gpusize {report.gpusize_version} serve {report.model.id} --disaggregate: prefill "
            f"{parallel_name(p.instances, p.tensor_parallel)}, decode "
            f"{parallel_name(d.instances, d.tensor_parallel)} "
            f"({report.num_gpus}x {report.gpu}), {engine(name).label} {report.workload.engine_version} "
            f"in NVIDIA Dynamo {release.version}",
            f"disaggregation (estimate) {split.verdict}",
        ),
    )
