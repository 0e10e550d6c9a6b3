"""The curve report (pure): maximum concurrent sequences against context for one plan."""

from __future__ import annotations

from dataclasses import field

from gpusize import __version__
from gpusize.core.engines import engine, engine_label, on_gpu
from gpusize.core.gpu import VENDOR_TERMS, GpuSpec, VendorTerms
from gpusize.core.model import ResolvedModel
from gpusize.core.network import NodePlan
from gpusize.core.spec import ModelSpec
from gpusize.core.workload import Workload
from gpusize.dataclass import dataclass
from gpusize.reports.common import (
    NOT_IN_SHEETS,
    GpuFile,
    ModelFacts,
    device_notes,
    gpu_file_notes,
    gpu_files,
    model_facts,
)
from gpusize.reports.fit import model_notes
from gpusize.serving.curve import CurvePoint, concurrency_curve

__all__ = ["CurveAssumptions", "CurveReport", "build_curve"]


@dataclass(frozen=True, kw_only=True)
class CurveAssumptions:
    """What a curve assumed: the engine and its settings, the weight and KV formats, and its notes."""

    engine: str
    settings: dict[str, float | int | str]
    weight_format: str
    kv_cache_dtype: str
    #: The GPU, when it comes from a user catalog file (none: bundled).
    gpu_files: tuple[GpuFile, ...] = field(metadata=NOT_IN_SHEETS)
    notes: tuple[str, ...]
    #: The GPU's vendor terms (its name for captured graphs) the text uses; not a JSON key.
    terms: VendorTerms = field(default=VENDOR_TERMS["NVIDIA"], metadata={"json": False, **NOT_IN_SHEETS})


@dataclass(frozen=True, kw_only=True)
class CurveReport:
    """The answer of `curve`: concurrency against context length on one GPU set (its `--json`)."""

    gpusize_version: str
    command: str
    fits: bool
    model: ModelFacts
    workload: Workload
    gpu: str
    gpu_full_name: str
    num_gpus: int
    #: Concurrent sequences each point is tested with (--users; 1 when not given).
    users: int
    points: tuple[CurvePoint, ...]
    assumptions: CurveAssumptions
    #: curve --nodes: the servers (TP=G x PP=N over N servers of G GPUs) and the link between them;
    #: None on one server.
    nodes: NodePlan | None = None


def build_curve(
    resolved: ResolvedModel,
    spec: ModelSpec,
    gpu: GpuSpec,
    num_gpus: int,
    work: Workload,
    users: int = 1,
    nodes: NodePlan | None = None,
) -> CurveReport:
    """The curve of one plan: `num_gpus` GPUs of one server, or with `nodes` TP=G x PP=N over its N
    servers of G GPUs."""
    model = engine(work.engine.name)
    work = on_gpu(spec, gpu, work)  # the KV dtype the engine's auto picks on this GPU
    if nodes is not None:
        num_gpus = nodes.nodes * nodes.gpus_per_node
    across = nodes.nodes if nodes else 1
    per_node = nodes.gpus_per_node if nodes else num_gpus
    points = concurrency_curve(
        spec, gpu, num_gpus, work, points=12, users=users, nodes=across, per_node=per_node
    )
    return CurveReport(
        gpusize_version=__version__,
        command="curve",
        fits=any(p.fits for p in points),
        model=model_facts(resolved, spec),
        workload=work,
        gpu=gpu.name,
        gpu_full_name=gpu.full_name,
        num_gpus=num_gpus,
        users=users,
        points=tuple(points),
        assumptions=CurveAssumptions(
            engine=engine_label(work.engine),
            settings=model.effective_settings(spec, gpu, num_gpus, work),
            weight_format=work.weights.name,
            kv_cache_dtype=work.kv_cache_dtype,
            gpu_files=gpu_files([gpu]),
            notes=tuple(
                model_notes(resolved, spec, work)
                + gpu_file_notes([gpu])
                + device_notes([gpu], work.engine)
                + ([f"TP={nodes.gpus_per_node} x PP={nodes.nodes}: {nodes.words()}"] if nodes else [])
            ),
            terms=gpu.terms,
        ),
        nodes=nodes,
    )
