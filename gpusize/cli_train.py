"""`gpusize train`: size a training or fine-tuning job. Parse, call the core, render, exit code.

Registered by cli.py as `app.command("train")(cli_train.train)`. Exit status is the verdict, as for
`fit`: 0 fits, 1 does not fit (the report is still printed), and bad input raises UsageError (exit 2
at the CLI boundary).
"""

from __future__ import annotations

import json
import os
import re
from typing import cast

import typer

from gpusize.errors import UsageError

FRAMEWORKS = ("transformers", "torchtune", "unsloth")
_BUDGET = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kKmMbBtT]?)\s*$")
_DECIMAL = {"": 1, "k": 10**3, "m": 10**6, "b": 10**9, "t": 10**12}


def parse_token_budget(text: str) -> int:
    """'1B' -> 10**9, '500m' -> 5 x 10**8, '20000' -> 20000: decimal, as token budgets are quoted."""
    match = _BUDGET.match(text)
    if not match:
        raise UsageError(f"invalid --tokens '{text}': use a number such as 20000, 500M or 1B")
    value = float(match.group(1)) * _DECIMAL[match.group(2).lower()]
    if value < 1:
        raise UsageError(f"invalid --tokens '{text}': must be at least one token")
    return int(value)


def _positive(value: int, what: str) -> int:
    if value <= 0:
        raise UsageError(f"invalid {what} {value}: must be greater than zero")
    return value


def train(
    model: str = typer.Argument(
        ..., help="Catalog name, Hub id in the catalog, or a local config.json / folder."
    ),
    method: str = typer.Option(..., "--method", help="full, lora or qlora."),
    seq: str = typer.Option("2048", "--seq", help="Tokens per sequence: 2048, 8k, 32k."),
    batch: int = typer.Option(1, "--batch", help="Sequences per GPU per micro-batch."),
    grad_accum: int = typer.Option(1, "--grad-accum", help="Micro-batches accumulated per step."),
    optimizer: str = typer.Option(
        "adamw", "--optimizer", help="adamw, adamw-8bit, adafactor, sgd (momentum) or sgd-nomomentum."
    ),
    precision: str = typer.Option("bf16-mixed", "--precision", help="bf16-mixed, bf16 or fp32."),
    grad_ckpt: bool = typer.Option(
        True, "--grad-ckpt/--no-grad-ckpt", help="Activation checkpointing, one checkpoint per layer."
    ),
    lora_rank: int = typer.Option(16, "--lora-rank", help="LoRA rank (lora and qlora)."),
    lora_targets: str = typer.Option(
        "all-linear", "--lora-targets", help="all-linear (attention + MLP) or attention (q, k, v, o)."
    ),
    sharding: str = typer.Option(
        "fsdp", "--sharding", help="none (one GPU), ddp, zero1, zero2, zero3 or fsdp."
    ),
    offload: str = typer.Option(
        "none", "--offload", help="none, optimizer (ZeRO-Offload) or params (zero3/fsdp only)."
    ),
    gpu: str | None = typer.Option(None, "--gpu", help="Restrict to one GPU type (or local)."),
    gpus: int | None = typer.Option(None, "--gpus", help="Fix the GPU count (1, 2, 4 or 8)."),
    tokens: str | None = typer.Option(None, "--tokens", help="Token budget for time and cost: 500M, 1B."),
    framework: str = typer.Option(
        "transformers",
        "--framework",
        help="Activation/loss model: transformers (eager + FlashAttention-2), torchtune, unsloth.",
    ),
    best_effort: bool = typer.Option(
        False, "--best-effort", help="Size an unsupported architecture as a Llama-style decoder (flagged)."
    ),
    revision: str | None = typer.Option(
        None, "--revision", help="Hub branch, tag or commit (default main); skips the catalog."
    ),
    models_file: str | None = typer.Option(
        None, "--models-file", help="Extra model catalog YAML (or GPUSIZE_MODELS)."
    ),
    gpus_file: str | None = typer.Option(
        None, "--gpus-file", help="Extra GPU catalog YAML (or GPUSIZE_GPUS)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Size a training or fine-tuning job and find the smallest set of GPUs in one server for it."""
    from gpusize import plan, report, source, training
    from gpusize.cli import _choice, _targets, _user_catalogs
    from gpusize.model import parse_config
    from gpusize.params import count_params
    from gpusize.train_report import build_train_report
    from gpusize.units import parse_tokens

    setup = training.TrainSetup(
        method=cast("training.Method", _choice(method, training.METHODS, "--method")),
        seq=parse_tokens(seq, "--seq"),
        batch=_positive(batch, "--batch"),
        grad_accum=_positive(grad_accum, "--grad-accum"),
        optimizer=cast("training.Optimizer", _choice(optimizer, training.OPTIMIZERS, "--optimizer")),
        precision=cast("training.Precision", _choice(precision, training.PRECISIONS, "--precision")),
        grad_ckpt=grad_ckpt,
        lora_rank=_positive(lora_rank, "--lora-rank"),
        lora_modules=training.LORA_MODULES[_choice(lora_targets, training.LORA_TARGETS, "--lora-targets")],
        sharding=cast("training.Sharding", _choice(sharding, training.SHARDINGS, "--sharding")),
        offload=cast("training.Offload", _choice(offload, training.OFFLOADS, "--offload")),
        kernels=training.FRAMEWORKS[_choice(framework, FRAMEWORKS, "--framework")],
    )
    if gpus is not None and gpus not in plan.TP_SIZES:
        raise UsageError(f"invalid --gpus {gpus}: one server runs 1, 2, 4 or 8 GPUs")
    if setup.sharding == "none" and gpus not in (None, 1):
        raise UsageError("--sharding none trains on one GPU; use ddp to replicate or zero*/fsdp to shard")
    if setup.offload == "params" and setup.sharding not in ("zero3", "fsdp"):
        raise UsageError("--offload params needs --sharding zero3 or fsdp (ZeRO-Infinity / FSDP CPU offload)")
    budget = parse_token_budget(tokens) if tokens is not None else None

    _user_catalogs(models_file, gpus_file)
    resolved = source.resolve_model(model, revision)
    spec = parse_config(resolved.config, best_effort=best_effort)
    counts = count_params(spec)
    origin = report.origin_of(resolved)
    targets, max_count = _targets(gpu)
    result = build_train_report(
        origin, spec, counts, targets, setup, fixed_count=gpus, tokens=budget, max_count=max_count
    )
    if as_json:
        typer.echo(json.dumps(result.model_dump(mode="json"), indent=2))
    else:
        from rich.console import Console

        from gpusize.train_render import render_train

        render_train(result, Console(width=int(os.environ.get("COLUMNS", "0")) or None, soft_wrap=False))
    raise typer.Exit(0 if result.fits else 1)
