"""`gpusize fit`: size a model for inference and find the smallest set of GPUs that runs it."""

from __future__ import annotations

from gpusize.cli import prepare
from gpusize.cli.declare import command
from gpusize.cli.emit import answer
from gpusize.cli.options import (
    Batch,
    BestEffort,
    Ctx,
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
    Mtp,
    Nodes,
    Quantization,
    Quiet,
    ReservedMib,
    Revision,
    RopeScaling,
    ShowAll,
    engine_options,
)
from gpusize.core.engines import engine
from gpusize.core.network import MAX_NODES
from gpusize.errors import UsageError
from gpusize.render.fit import render_fit
from gpusize.reports.fit import build_fit_report

__all__ = ["fit"]


@command(short_help="Memory needed and the smallest set of GPUs in one server.")
@engine_options("vllm", "sglang", "llamacpp", "transformers", "ollama", "trtllm")
def fit(
    model: Model,
    *,
    ctx: Ctx = None,
    batch: Batch = 1,
    dtype: Dtype = "auto",
    kv_dtype: KvDtype = "auto",
    quantization: Quantization = None,
    gpu: GpuName = None,
    gpus: GpuCount = None,
    engine_values: EngineValues,
    rope_scaling: RopeScaling = None,
    reserved_mib: ReservedMib = 0,
    mtp: Mtp = False,
    nodes: Nodes = None,
    show_all: ShowAll = False,
    best_effort: BestEffort = False,
    revision: Revision = None,
    models_file: ModelsFile = None,
    gpus_file: GpusFile = None,
    quiet: Quiet = False,
    as_json: Json = False,
    fmt: Format = None,
) -> None:
    """Size a model for inference and find the smallest set of GPUs in one server that runs it.

    Example: gpusize fit Qwen3-32B --ctx 32k --gpu H100
    """
    prepare.gpu_count(gpus)
    if nodes is not None and not 2 <= nodes <= MAX_NODES:
        raise UsageError(f"invalid --nodes {nodes}: use 2 to {MAX_NODES} servers")
    cats = prepare.catalogs(models_file, gpus_file)
    resolved, spec = prepare.load_model(model, revision, best_effort, cats, rope_scaling)
    work = prepare.workload(
        spec,
        prepare.request(
            resolved,
            spec,
            ctx,
            engine_values,
            batch=batch,
            dtype=dtype,
            kv_dtype=kv_dtype,
            mtp=mtp,
            quantization=quantization,
            reserved_mib=reserved_mib,
            cats=cats,
            gpus=[gpu],
        ),
    )
    if nodes is not None and engine(work.engine.name).nodes is None:  # it would be ignored, silently
        raise UsageError(
            f"fit --nodes takes TP=G x PP=N, modelled for vLLM; not --engine {work.engine.name} "
            "(serve --nodes compares its layouts over servers)"
        )
    where = prepare.targets(gpu, cats, gpus)
    others = prepare.all_gpus(cats) if where.local_count is None else ()  # this machine's GPUs: no other type
    report = build_fit_report(resolved, spec, work, where.gpus, gpus, where.max_count, nodes, others)
    answer(
        report,
        0 if report.fits else 1,
        quiet,
        as_json,
        lambda width, style: render_fit(report, width, style, show_all),
        fmt,
    )
