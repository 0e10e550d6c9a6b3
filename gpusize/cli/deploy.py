"""`serve --format k8s|compose [-o DIR]`: the serve plan as deployment manifests, printed as YAML
documents or written one file per object into a folder (each file atomically)."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated

from gpusize.cli.app import finish
from gpusize.cli.capture import current
from gpusize.cli.declare import Option
from gpusize.cli.emit import taken
from gpusize.cli.output import write_file
from gpusize.cli.prepare import choice
from gpusize.errors import OutputError, UsageError
from gpusize.render.text import Style, safe

if TYPE_CHECKING:
    from gpusize.core.gpu import GpuSpec
    from gpusize.core.model import ResolvedModel
    from gpusize.reports.serve import ServeReport
    from gpusize.serving.deploy import Manifest

__all__ = ["DEPLOY_FORMATS", "NodeGpus", "OutputDir", "ServeFormat", "deploy_answer", "wants_deploy"]

#: The manifest formats: Kubernetes objects, a docker compose project.
DEPLOY_FORMATS = ("k8s", "compose")
#: Most GPUs one node is given (--node-gpus).
MAX_NODE_GPUS = 64

ServeFormat = Annotated[
    str | None,
    Option(
        "--format",
        help="Output: table (the default), json (the same as --json), markdown, csv, or the plan as "
        "manifests: k8s (Kubernetes Deployment or LeaderWorkerSet + Service; with --disaggregate an "
        "NVIDIA Dynamo DynamoGraphDeployment) or compose (docker compose).",
    ),
]
OutputDir = Annotated[
    str | None,
    Option("--output", "-o", help="With --format k8s|compose: write one file per object into DIR."),
]
NodeGpus = Annotated[
    int | None,
    Option(
        "--node-gpus",
        help="With --format k8s: GPUs of one Kubernetes node (default: the server sized); a replica on "
        "more runs as a LeaderWorkerSet over nodes.",
    ),
]


def wants_deploy(fmt: str | None, as_json: bool, output_dir: str | None, node_gpus: int | None) -> bool:
    """Whether the answer is a manifest; -o and --node-gpus without one are refused."""
    deploy = fmt is not None and fmt.strip().lower() in DEPLOY_FORMATS
    if deploy and as_json:
        raise UsageError(f"--json and --format {fmt} ask for two formats; give one")
    if not deploy and output_dir is not None:
        raise UsageError("-o DIR writes manifests: give --format k8s or --format compose")
    if node_gpus is not None:
        if not deploy or choice(fmt or "", DEPLOY_FORMATS, "--format") != "k8s":
            raise UsageError("--node-gpus sizes Kubernetes nodes: give --format k8s")
        if not 1 <= node_gpus <= MAX_NODE_GPUS:
            raise UsageError(f"invalid --node-gpus {node_gpus}: use 1 to {MAX_NODE_GPUS}")
    return deploy


def deploy_answer(
    report: ServeReport,
    resolved: ResolvedModel,
    fmt: str,
    output_dir: str | None,
    node_gpus: int | None,
    quiet: bool,
    code: int,
    summary: Callable[[int, Style], str],
    gpu: GpuSpec,
) -> None:
    """Print or write the manifests of the plan and end with the plan's verdict (`code`); a batch row
    or library call takes the report (with `summary`, serve's text) and writes nothing. `gpu`: the GPU
    sized (its vendor's device resource and images, serving/devices.py; others are refused)."""
    from gpusize.render.deploy import manifest_text, manifests_text  # noqa: PLC0415 - start-up: manifests only

    kind = choice(fmt, DEPLOY_FORMATS, "--format")
    manifests = _manifests(report, resolved, kind, node_gpus, gpu)
    if current() is not None and output_dir is not None:
        raise UsageError("-o DIR writes manifest files from the command line only, not from a batch row")
    text = manifests_text(manifests)
    taken(report, code, summary)
    if output_dir is None:
        finish(None if quiet else text, code)
        return
    shown = safe(output_dir, limit=200)
    try:
        os.makedirs(output_dir, exist_ok=True)
    except (OSError, ValueError) as exc:
        raise OutputError(
            f"{shown}: cannot make the folder ({getattr(exc, 'strerror', None) or exc})"
        ) from None
    if not os.path.isdir(output_dir):
        raise OutputError(f"{shown}: is not a folder")
    written = []
    for manifest in manifests:
        path = os.path.join(output_dir, manifest.filename)
        write_file(path, manifest_text(manifest))
        written.append(path)
    finish(None if quiet else "".join(f"wrote {safe(p, limit=300)}\n" for p in written), code)


def _manifests(
    report: ServeReport, resolved: ResolvedModel, kind: str, node_gpus: int | None, gpu: GpuSpec
) -> list[Manifest]:
    """The objects of the plan: with --disaggregate, the NVIDIA Dynamo graph of its split."""
    from gpusize.reports.deploy import deploy_plan, graph_plan  # noqa: PLC0415 - start-up: manifests only
    from gpusize.serving.deploy import compose_manifest, kubernetes_manifests  # noqa: PLC0415 - start-up: manifests only
    from gpusize.serving.dynamo import graph_manifest  # noqa: PLC0415 - start-up: manifests only

    model_path, is_file = resolved.path, resolved.source == "gguf"
    if report.disaggregated is not None:
        if kind != "k8s":
            raise UsageError(
                "a disaggregated plan runs as an NVIDIA Dynamo graph on Kubernetes: give --format k8s"
            )
        return [graph_manifest(graph_plan(report, model_path, is_file, node_gpus, gpu))]
    plan = deploy_plan(report, model_path, is_file, node_gpus, gpu)
    return kubernetes_manifests(plan) if kind == "k8s" else [compose_manifest(plan)]
