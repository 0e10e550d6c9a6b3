"""`gpusize train`: size a training or fine-tuning job. Parse, call the core, render, exit code.

Registered by cli.py as `app.command("train")(cli_train.train)`. Exit status is the verdict, as for
`fit`: 0 fits, 1 does not fit (the report is still printed), and bad input raises UsageError (exit 2
at the CLI boundary).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import cast

import typer
from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from gpusize.catalog import GpuSpec
from gpusize.errors import UsageError
from gpusize.train_report import TrainCandidateInfo, TrainReport
from gpusize.units import gib, human_tokens

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


def _choice(value: str, allowed: tuple[str, ...], what: str) -> str:
    key = value.strip().lower()
    if key not in allowed:
        raise UsageError(f"unknown {what} '{value}'; use one of {', '.join(allowed)}")
    return key


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
    from gpusize import catalog, plan, report, source, training
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

    if models_file:
        catalog.add_user_file("models", Path(models_file))
    if gpus_file:
        catalog.add_user_file("gpus", Path(gpus_file))
    resolved = source.resolve_model(model, revision)
    spec = parse_config(resolved.config, best_effort=best_effort)
    counts = count_params(spec)
    origin = report.Origin(
        resolved.id,
        resolved.source,
        resolved.revision,
        resolved.checkpoint_bytes,
        resolved.checkpoint_dtypes,
        resolved.notes,
    )
    max_count = 8
    if gpu:
        one, local_count = _find_gpu(gpu)
        targets, max_count = [one], local_count or 8
    else:
        targets = list(catalog.load_gpus())
    result = build_train_report(
        origin, spec, counts, targets, setup, fixed_count=gpus, tokens=budget, max_count=max_count
    )
    if as_json:
        typer.echo(json.dumps(result.model_dump(mode="json"), indent=2))
    else:
        render_train(result, Console(width=int(os.environ.get("COLUMNS", "0")) or None, soft_wrap=False))
    raise typer.Exit(0 if result.fits else 1)


def _find_gpu(name: str) -> tuple[GpuSpec, int | None]:
    """A catalog GPU, or `local`: this machine's GPUs via NVML or nvidia-smi (spec, how many)."""
    from gpusize import catalog

    if name.strip().lower() == "local":
        from gpusize import local_gpu

        return local_gpu.local_spec(local_gpu.detect())
    return catalog.find_gpu(name), None


# --------------------------------------------------------------------------- rendering (no arithmetic)


def _g(n_bytes: int | None) -> str:
    return "-" if n_bytes is None else f"{gib(n_bytes):.1f}"


def headline(report: TrainReport) -> str:
    w, p = report.workload, report.plan
    name = report.model.id.split("/")[-1]
    job = (
        f"{name} {w.method} ({w.precision}, {w.optimizer}, {w.batch} x {human_tokens(w.seq_tokens)} "
        f"tokens{', checkpointed' if w.grad_ckpt else ''})"
    )
    if report.fits and p:
        return (
            f"{job} needs {p.num_gpus}x {p.gpu_full_name}"
            f"{f' ({p.sharding})' if p.num_gpus > 1 else ''}: "
            f"{_g(p.per_gpu.total_bytes)} of {_g(p.per_gpu.visible_bytes)} GiB per GPU"
        )
    if p:
        return f"{job} does not fit on {p.num_gpus}x {p.gpu_full_name}: {p.reason}"
    return f"{job} does not fit on up to 8 GPUs of any type considered"


def memory_table(report: TrainReport) -> Table:
    m, w, params = report.memory, report.workload, report.params
    table = Table(title="Memory, whole job on one GPU", title_justify="left")
    for col, just in (("term", "left"), ("GiB", "right"), ("how", "left")):
        table.add_column(col, justify=just)  # type: ignore[arg-type]
    table.add_row(
        "weights", _g(m.weights_bytes), f"{params.total:,} params; fp32 master {_g(m.master_weights_bytes)}"
    )
    table.add_row("gradients", _g(m.gradients_bytes), f"{params.trainable:,} trainable params")
    table.add_row("optimizer", _g(m.optimizer_bytes), w.optimizer)
    table.add_row("activations", _g(m.activations_bytes), f"estimate; logits {_g(m.logits_bytes)}")
    table.add_row("overlap", f"-{_g(m.overlap_bytes)}", "gradients built while activations are freed")
    table.add_row("overhead", _g(m.overhead_bytes), "CUDA context")
    table.add_row("total", _g(m.total_bytes), f"host RAM {_g(m.host_ram_bytes)}" if m.host_ram_bytes else "")
    return table


def candidates_table(rows: list[TrainCandidateInfo], title: str) -> Table:
    table = Table(title=title, title_justify="left")
    for col, just in (
        ("GPU", "left"),
        ("GPUs", "right"),
        ("sharding", "left"),
        ("fits", "left"),
        ("need GiB/GPU", "right"),
        ("visible", "right"),
        ("max seq", "right"),
        ("host RAM GiB", "right"),
        ("$/h", "right"),
    ):
        table.add_column(col, justify=just, no_wrap=True)  # type: ignore[arg-type]
    for c in rows:
        table.add_row(
            c.gpu,
            str(c.num_gpus),
            c.sharding,
            "yes" if c.fits else "NO",
            _g(c.per_gpu.total_bytes),
            _g(c.per_gpu.visible_bytes),
            f"{c.max_seq_tokens:,}",
            _g(c.per_gpu.host_ram_bytes) if c.per_gpu.host_ram_bytes else "-",
            f"{c.price_usd_per_hour:.2f}" if c.price_usd_per_hour else "-",
        )
    return table


def time_table(report: TrainReport) -> Table | None:
    t = report.time
    if t is None:
        return None
    title = (
        f"Time and cost for {t.token_budget:,} tokens on {t.gpu} ({t.flops_per_token:.3g} FLOP/token, "
        f"MFU {t.mfu}, {t.interconnect})"
    )
    table = Table(title=title, title_justify="left")
    for col in ("GPUs", "fits", "scaling", "speed-up", "hours", "cost $"):
        table.add_column(col, justify="right")
    for r in t.rows:
        table.add_row(
            str(r.num_gpus),
            "yes" if r.fits else "NO",
            f"{r.scaling_efficiency:.0%}",
            f"{r.speedup:.2f}x",
            "-" if r.hours is None else f"{r.hours:,.1f}",
            "-" if r.cost_usd is None else f"{r.cost_usd:,.0f}",
        )
    return table


def footer(report: TrainReport) -> Text:
    a, w = report.assumptions, report.workload
    lines = [
        f"Assumptions: {a['framework']}; sharding {w.sharding}, offload {w.offload}, grad-accum "
        f"{w.grad_accum}. Activations, logits and overhead are estimates. Sizes in GiB (2^30 bytes).",
        f"Peak: {a['peak_memory']}.",
    ]
    if report.time:
        lines.append(f"Time: {report.time.note}" if report.time.note else "Time: " + a["prices"] + ".")
    lines += [f"Note: {n}" for n in a["notes"]]
    return Text("\n".join(lines), style="dim")


def render_train(report: TrainReport, console: Console) -> None:
    last: dict[str, TrainCandidateInfo] = {}
    for c in report.candidates:
        last[c.gpu] = c
    many = len(last) > 1
    rows = list(last.values()) if many else report.candidates
    title = "Smallest GPU count per type (one server, 1/2/4/8)" if many else "Counts tried"
    parts: list[Table | Text] = [memory_table(report), candidates_table(rows, title)]
    reasons = [f"{c.gpu} x{c.num_gpus}: {c.reason}" for c in rows if c.reason]
    if reasons:
        parts.append(Text("\n".join(reasons)))
    times = time_table(report)
    if times is not None:
        parts.append(times)
    parts.append(footer(report))
    console.print(Text(headline(report), style="bold"))
    console.print(Group(*parts))
