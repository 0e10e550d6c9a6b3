"""The deployment of a serve report (pure): its recommended layout and printed launch command as the
plan a manifest is built from (serving/deploy.py); refused, with the reason, when there is nothing
to deploy."""

from __future__ import annotations

import os
import shlex

from gpusize.core.engines import engine
from gpusize.errors import InputError
from gpusize.reports.serve import ServeReport
from gpusize.serving.deploy import SERVER_IMAGES, DeployPlan, object_name

__all__ = ["deploy_plan"]


def deploy_plan(
    report: ServeReport, model_path: str | None, model_is_file: bool, node_gpus: int | None
) -> DeployPlan:
    """The plan of `report` to deploy: its replicas and GPUs per replica, the launch command's words
    exactly as printed; `model_path` a local model to mount (absolute, as the command names it);
    `node_gpus` the GPUs of one node (default: the server sized)."""
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
    if model_path is not None and (not os.path.isabs(model_path) or ":" in model_path):
        raise InputError(
            "a manifest mounts a local model at its own path, which must be absolute and hold no ':' "
            "(a Kubernetes mountPath rule): give the model as an absolute path"
        )
    model = engine(name)
    return DeployPlan(
        engine=name,
        engine_label=model.label,
        version=launch.engine_version,
        words=tuple(shlex.split(launch.command)),
        replicas=pick.replicas,
        gpus_per_replica=pick.gpus_per_replica,
        node_gpus=node_gpus or report.num_gpus,
        name=object_name(report.model.name or report.model.id, name),
        model_path=model_path,
        model_is_file=model_is_file,
        header=(
            f"gpusize {report.gpusize_version} serve {report.model.id}: {pick.replicas} x "
            f"{pick.gpus_per_replica} GPU(s) ({report.num_gpus}x {report.gpu}), {model.label} "
            f"{launch.engine_version or ''}".rstrip(),
        ),
    )
