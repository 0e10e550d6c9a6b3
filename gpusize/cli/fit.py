"""`gpusize fit`: size a model for inference and find the smallest set of GPUs that runs it."""

from __future__ import annotations

import typer

from gpusize.cli import prepare
from gpusize.cli.app import app
from gpusize.cli.emit import answer
from gpusize.cli.options import (
    AttnImplementation,
    Batch,
    BestEffort,
    Ctx,
    Dtype,
    Engine,
    ExpandableSegments,
    FlashAttn,
    GpuCount,
    GpuName,
    GpusFile,
    Json,
    KvDtype,
    MaxNumBatchedTokens,
    MaxNumSeqs,
    MemFraction,
    Model,
    ModelsFile,
    Mtp,
    NGpuLayers,
    Quiet,
    Revision,
    TransformersVersion,
    Utilization,
)
from gpusize.errors import UsageError
from gpusize.render.fit import render_fit
from gpusize.reports.fit import build_fit_report

__all__ = ["fit"]


@app.command()
def fit(
    model: Model,
    ctx: Ctx = "8k",
    batch: Batch = 1,
    dtype: Dtype = "auto",
    kv_dtype: KvDtype = "auto",
    gpu: GpuName = None,
    gpus: GpuCount = None,
    engine: Engine = None,
    utilization: Utilization = None,
    max_num_seqs: MaxNumSeqs = None,
    max_num_batched_tokens: MaxNumBatchedTokens = None,
    mem_fraction: MemFraction = None,
    n_gpu_layers: NGpuLayers = None,
    flash_attn: FlashAttn = False,
    attn_implementation: AttnImplementation = None,
    transformers_version: TransformersVersion = None,
    expandable_segments: ExpandableSegments = False,
    mtp: Mtp = False,
    nodes: int | None = typer.Option(
        None, "--nodes", help="Allow N servers of 8 GPUs (TP=8 x PP=N) when one server is not enough."
    ),
    best_effort: BestEffort = False,
    revision: Revision = None,
    models_file: ModelsFile = None,
    gpus_file: GpusFile = None,
    quiet: Quiet = False,
    as_json: Json = False,
) -> None:
    """Size a model for inference and find the smallest set of GPUs in one server that runs it.

    Example: gpusize fit Qwen3-32B --ctx 32k --gpu H100
    """
    prepare.gpu_count(gpus)
    if nodes is not None and not 2 <= nodes <= 64:
        raise UsageError(f"invalid --nodes {nodes}: use 2 to 64 servers")
    cats = prepare.catalogs(models_file, gpus_file)
    resolved, spec = prepare.load_model(model, revision, best_effort, cats)
    settings = prepare.engine_settings(
        engine,
        resolved,
        utilization,
        max_num_seqs,
        max_num_batched_tokens,
        mem_fraction,
        n_gpu_layers,
        flash_attn,
        attn_implementation,
        transformers_version,
        expandable_segments,
    )
    work = prepare.workload(spec, prepare.request(resolved, ctx, settings, batch, dtype, kv_dtype, mtp))
    where = prepare.targets(gpu, cats, gpus)
    report = build_fit_report(resolved, spec, work, where.gpus, gpus, where.max_count, nodes)
    answer(
        report, 0 if report.fits else 1, quiet, as_json, lambda width, style: render_fit(report, width, style)
    )
