"""`gpusize train`: size a training or fine-tuning job and find the smallest set of GPUs for it."""

from __future__ import annotations

from typing import cast

from gpusize.cli import prepare
from gpusize.cli.declare import Option, command
from gpusize.cli.emit import answer
from gpusize.cli.options import (
    BestEffort,
    Format,
    GpuCount,
    GpuName,
    GpusFile,
    Json,
    Model,
    ModelsFile,
    NodeBandwidth,
    NodeInterconnect,
    Nodes,
    Quiet,
    Revision,
    ShowAll,
)
from gpusize.errors import UsageError
from gpusize.render.train import render_train
from gpusize.reports.train import build_train_report
from gpusize.training import setup as ts
from gpusize.units import parse_budget, parse_count, parse_tokens

__all__ = ["train"]


@command(short_help="Training and fine-tuning memory, GPUs, time and cost.")
def train(
    model: Model,
    method: str = Option(..., "--method", help="full, lora or qlora."),
    seq: str = Option("2048", "--seq", help="Tokens per sequence: 2048, 8k, 32k."),
    batch: int = Option(1, "--batch", help="Sequences per GPU per micro-batch."),
    grad_accum: int = Option(1, "--grad-accum", help="Micro-batches accumulated per step."),
    optimizer: str = Option(
        "adamw",
        "--optimizer",
        help="adamw (torch AdamW, foreach), adamw-fused, adamw-forloop, adamw-8bit, paged-adamw, "
        "paged-adamw-8bit (bitsandbytes), adafactor, sgd (momentum) or sgd-nomomentum.",
    ),
    optimizer_in_backward: bool = Option(
        False,
        "--optimizer-in-backward",
        help="Step each parameter as its gradient is ready (torchtune optimizer_in_bwd; --grad-accum 1).",
    ),
    precision: str = Option("bf16-mixed", "--precision", help="bf16-mixed, bf16 or fp32."),
    grad_ckpt: bool = Option(True, "--grad-ckpt/--no-grad-ckpt", help="Activation checkpointing per layer."),
    lora_rank: int = Option(16, "--lora-rank", help="LoRA rank (lora and qlora)."),
    lora_targets: str = Option("all-linear", "--lora-targets", help="all-linear or attention (q, k, v, o)."),
    sharding: str = Option(
        "fsdp",
        "--sharding",
        help="none (one GPU), ddp, zero1, zero2, zero3 or fsdp; with --nodes also hsdp (FSDP sharded inside "
        "each server, replicated across).",
    ),
    offload: str = Option("none", "--offload", help="none, optimizer (ZeRO-Offload) or params (zero3/fsdp)."),
    gpu: GpuName = None,
    gpus: GpuCount = None,
    nodes: Nodes = None,
    interconnect: NodeInterconnect = None,
    node_bandwidth: NodeBandwidth = None,
    tokens: str | None = Option(None, "--tokens", help="Token budget for time and cost: 500M, 1B."),
    framework: str = Option(
        "transformers", "--framework", help="transformers (eager + SDPA), torchtune or unsloth."
    ),
    transformers_version: str = Option(
        "5",
        "--transformers-version",
        help="transformers: 5 (5.x, default) or 4 (4.4x: logits kept in backward).",
    ),
    expandable_segments: bool = Option(
        False,
        "--expandable-segments",
        help="PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (less allocator fragmentation).",
    ),
    show_all: ShowAll = False,
    best_effort: BestEffort = False,
    revision: Revision = None,
    models_file: ModelsFile = None,
    gpus_file: GpusFile = None,
    quiet: Quiet = False,
    as_json: Json = False,
    fmt: Format = None,
) -> None:
    """Size a training or fine-tuning job and find the smallest set of GPUs in one server for it.

    Example: gpusize train Llama-3.1-8B --method lora --seq 4k --gpu RTX4090
    """
    hsdp = sharding == "hsdp"
    if hsdp and nodes is None:
        raise UsageError("--sharding hsdp shards inside each server of --nodes N; give --nodes")
    job = ts.TrainSetup(
        method=cast("ts.Method", prepare.choice(method, ts.METHODS, "--method")),
        seq_tokens=parse_tokens(seq, "--seq"),
        batch=parse_count(batch, "--batch", 1 << 16),
        grad_accum=parse_count(grad_accum, "--grad-accum", 1 << 16),
        optimizer=cast("ts.Optimizer", prepare.choice(optimizer, ts.OPTIMIZERS, "--optimizer")),
        precision=cast("ts.Precision", prepare.choice(precision, ts.PRECISIONS, "--precision")),
        grad_ckpt=grad_ckpt,
        lora_rank=parse_count(lora_rank, "--lora-rank", 1 << 16),
        lora_modules=ts.LORA_MODULES[prepare.choice(lora_targets, ts.LORA_TARGETS, "--lora-targets")],
        sharding=cast(
            "ts.Sharding", "fsdp" if hsdp else prepare.choice(sharding, ts.SHARDINGS, "--sharding")
        ),
        offload=cast("ts.Offload", prepare.choice(offload, ts.OFFLOADS, "--offload")),
        optimizer_in_backward=optimizer_in_backward,
        expandable_segments=expandable_segments,
        kernels=_kernels(framework, transformers_version),
    )
    if job.optimizer_in_backward and job.grad_accum != 1:
        raise UsageError("--optimizer-in-backward steps during backward: it needs --grad-accum 1")
    count = prepare.gpu_count(gpus)
    if job.sharding == "none" and count not in (None, 1):
        raise UsageError("--sharding none trains on one GPU; use ddp to replicate or zero*/fsdp to shard")
    if job.offload == "params" and job.sharding not in ("zero3", "fsdp"):
        raise UsageError("--offload params needs --sharding zero3 or fsdp (ZeRO-Infinity / FSDP CPU offload)")
    budget = parse_budget(tokens) if tokens is not None else None
    cats = prepare.catalogs(models_file, gpus_file)
    resolved, spec = prepare.load_model(model, revision, best_effort, cats)
    where = prepare.targets(gpu, cats, count)
    others = prepare.all_gpus(cats) if where.local_count is None else ()  # this machine's GPUs: no other type
    plan = prepare.node_plan(nodes, interconnect, node_bandwidth, where.gpus[0], count)
    if plan is not None and job.sharding == "none":
        raise UsageError(
            "--nodes trains on every GPU of the servers: give --sharding ddp, zero1-3, fsdp or hsdp"
        )
    report = build_train_report(
        resolved, spec, where.gpus, job, count, budget, where.max_count, others, plan, hsdp
    )
    answer(
        report,
        0 if report.fits else 1,
        quiet,
        as_json,
        lambda width, style: render_train(report, width, style, show_all),
        fmt,
    )


def _kernels(framework: str, version: str) -> ts.Kernels:
    name = prepare.choice(framework, tuple(ts.FRAMEWORKS), "--framework")
    release = prepare.choice(version, tuple(ts.TRANSFORMERS_VERSIONS), "--transformers-version")
    if ts.FRAMEWORKS[name] is not ts.TRANSFORMERS:
        if release != "5":
            raise UsageError("--transformers-version applies to --framework transformers only")
        return ts.FRAMEWORKS[name]
    return ts.TRANSFORMERS_VERSIONS[release]
