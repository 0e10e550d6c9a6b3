"""`gpusize curve`: maximum concurrent sequences against context for one plan."""

from __future__ import annotations

from gpusize.cli import prepare
from gpusize.cli.declare import Option, command
from gpusize.cli.emit import answer
from gpusize.cli.options import (
    Dtype,
    EngineValues,
    Format,
    GpuCount,
    GpuName,
    GpusFile,
    Json,
    KvDtype,
    Model,
    ModelsFile,
    NodeBandwidth,
    NodeInterconnect,
    Nodes,
    Quantization,
    Quiet,
    ReservedMib,
    Revision,
    RopeScaling,
    engine_options,
)
from gpusize.cli.output import write_file
from gpusize.core.engines import engine
from gpusize.errors import UsageError
from gpusize.render.curve import curve_chart_svg, render_curve
from gpusize.reports.curve import build_curve
from gpusize.units import parse_count

__all__ = ["curve"]


@command(short_help="Concurrent sequences against context length for one plan.")
@engine_options("vllm", "sglang", "trtllm")
def curve(
    model: Model,
    *,
    gpu: GpuName = "H100",
    gpus: GpuCount = None,
    nodes: Nodes = None,
    interconnect: NodeInterconnect = None,
    node_bandwidth: NodeBandwidth = None,
    users: int | None = Option(
        None, "--users", help="Concurrent sequences each context is tested with (default 1)."
    ),
    dtype: Dtype = "auto",
    kv_dtype: KvDtype = "auto",
    quantization: Quantization = None,
    engine_values: EngineValues,
    rope_scaling: RopeScaling = None,
    reserved_mib: ReservedMib = 0,
    revision: Revision = None,
    models_file: ModelsFile = None,
    gpus_file: GpusFile = None,
    svg: str | None = Option(None, "--svg", help="Also save the rendering as an SVG file."),
    quiet: Quiet = False,
    as_json: Json = False,
    fmt: Format = None,
) -> None:
    """Maximum concurrent sequences against context length for one plan.

    Example: gpusize curve Llama-3.1-8B --gpu H100 --gpus 1
    """
    count = prepare.gpu_count(gpus) or 1
    cats = prepare.catalogs(models_file, gpus_file)
    resolved, spec = prepare.load_model(model, revision, False, cats, rope_scaling)
    work = prepare.workload(
        spec,
        prepare.request(
            resolved,
            spec,
            "1k",
            engine_values,
            dtype=dtype,
            kv_dtype=kv_dtype,
            quantization=quantization,
            reserved_mib=reserved_mib,
            cats=cats,
            gpus=[gpu],
        ),
    )
    where = prepare.targets(gpu, cats, count)
    load = parse_count(users, "--users") if users is not None else 1
    plan = prepare.node_plan(nodes, interconnect, node_bandwidth, where.gpus[0], gpus)
    if plan is not None and engine(work.engine.name).nodes is None:
        raise UsageError(
            f"curve --nodes draws TP=G x PP=N, modelled for vLLM; not --engine {work.engine.name}"
        )
    report = build_curve(resolved, spec, where.gpus[0], count, work, load, plan)
    if svg:
        write_file(svg, curve_chart_svg(report))
    answer(
        report,
        0 if report.fits else 1,
        quiet,
        as_json,
        lambda width, style: render_curve(report, width, style),
        fmt,
    )
