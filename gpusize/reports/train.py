"""The training report (pure): one result object for the table and --json of `gpusize train`.

`build_train_report` sizes one training job on every GPU type asked for: the smallest data-parallel
count in one server (1, 2, 4, 8) whose per-GPU peak fits the CUDA-visible memory, with the reason when
none does, and, given a token budget, time and cost on 1 versus N GPUs.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from gpusize import __version__
from gpusize.core.gpu import GpuSpec
from gpusize.core.plan import TP_SIZES
from gpusize.core.spec import ModelSpec
from gpusize.reports.common import ModelFacts, model_facts
from gpusize.reports.train_assumptions import TrainAssumptions, train_assumptions
from gpusize.sources.resolve import ResolvedModel
from gpusize.training import time_cost
from gpusize.training.anatomy import trainable_params
from gpusize.training.device import largest_batch, largest_seq, train_memory
from gpusize.training.peak import TrainMemory
from gpusize.training.setup import (
    SHARD_STAGE,
    TrainSetup,
)
from gpusize.units import GIB

__all__ = [
    "Suggestion",
    "TimeInfo",
    "TimeRow",
    "TrainAssumptions",
    "TrainCandidate",
    "TrainParams",
    "TrainReport",
    "build_train_report",
    "candidate_counts",
    "evaluate",
    "suggest",
]


@dataclass(frozen=True, kw_only=True)
class TrainParams:
    total: int
    trainable: int
    trainable_fraction: float


@dataclass(frozen=True, kw_only=True)
class Suggestion:
    """What fits instead, on the device figure: a smaller micro-batch with more accumulation steps
    (the same effective batch), or, when one sequence does not fit, a shorter one."""

    batch: int
    grad_accum: int
    seq_tokens: int
    effective_batch: int


@dataclass(frozen=True, kw_only=True)
class TrainCandidate:
    gpu: str
    gpu_full_name: str
    num_gpus: int
    sharding: str
    fits: bool
    reason: str | None
    per_gpu: TrainMemory
    usable_bytes: int
    headroom_bytes: int
    #: Longest sequence at this micro-batch, and largest micro-batch at this sequence, that fit on the
    #: device figure.
    max_seq_tokens: int
    max_batch: int
    suggestion: Suggestion | None
    #: Where the allocated peak falls: forward/backward, optimizer step or load.
    peak_phase: str
    usd_per_hour: float | None


@dataclass(frozen=True, kw_only=True)
class TimeRow:
    num_gpus: int
    fits: bool
    scaling_efficiency: float
    speedup: float
    hours: float | None
    cost_usd: float | None


@dataclass(frozen=True, kw_only=True)
class TimeInfo:
    token_budget: int
    flops_per_token: float
    total_flops: float
    mfu: float
    gpu: str
    bf16_tflops: float | None
    interconnect: str
    rows: tuple[TimeRow, ...]
    note: str | None


@dataclass(frozen=True, kw_only=True)
class TrainReport:
    gpusize_version: str
    command: str
    fits: bool
    model: ModelFacts
    setup: TrainSetup
    token_budget: int | None
    params: TrainParams
    memory: TrainMemory
    plan: TrainCandidate | None
    candidates: tuple[TrainCandidate, ...]
    time: TimeInfo | None
    assumptions: TrainAssumptions


def _misfit(mem: TrainMemory, gpu: GpuSpec, setup: TrainSetup, n: int) -> str:
    """Why the job does not fit on n GPUs of this type, naming the largest term and a lever."""
    terms = {
        "weights": mem.weights_bytes,
        "optimizer states": mem.optimizer_bytes,
        "gradients": mem.gradients_bytes,
        "activations": mem.activations_bytes,
    }
    name, size = max(terms.items(), key=lambda kv: kv[1])
    stage = SHARD_STAGE[setup.sharding]
    if n > 1 and stage == 0:
        hint = "DDP replicates everything, so more GPUs do not lower it: try --sharding fsdp"
    elif name == "activations":
        hint = "try a shorter --seq or a smaller --batch" + ("" if setup.grad_ckpt else ", or --grad-ckpt")
    elif name == "weights" and n > 1 and stage < 3:
        hint = "weights are sharded only by zero3/fsdp"
    elif name == "optimizer states" or mem.peak_phase == "optimizer step":
        hint = "try --optimizer adamw-fused (no step temporaries), adamw-8bit or --offload optimizer"
    else:
        hint = "try more GPUs, --method lora/qlora or --offload"
    return (
        f"needs {mem.device_bytes / GIB:.1f} GiB per GPU on the device ({mem.allocated_peak_bytes / GIB:.1f} "
        f"allocated by PyTorch, peak at the {mem.peak_phase}), {gpu.visible_bytes / GIB:.1f} GiB visible "
        f"(largest: {name} {size / GIB:.1f} GiB); {hint}"
    )


def evaluate(spec: ModelSpec, setup: TrainSetup, gpu: GpuSpec, n: int) -> TrainCandidate:
    """Fit test of the job on n GPUs of one type: what the device shows (reserved peak + CUDA context
    + NCCL) <= CUDA-visible total."""
    visible = gpu.visible_bytes
    mem = train_memory(spec, setup, n, gpu.interconnect, visible)
    fits = mem.device_bytes <= visible
    limit = max(setup.seq_tokens, spec.max_position_embeddings or 0) or 1 << 20
    max_seq = largest_seq(spec, setup, n, visible, limit, interconnect=gpu.interconnect)
    max_batch = largest_batch(spec, setup, n, visible, gpu.interconnect)
    if fits:  # the searches scale the unlimited replay's cache: never below what fits here
        max_seq, max_batch = max(max_seq, setup.seq_tokens), max(max_batch, setup.batch)
    return TrainCandidate(
        gpu=gpu.name,
        gpu_full_name=gpu.full_name,
        num_gpus=n,
        sharding=setup.sharding if n > 1 else "none",
        fits=fits,
        reason=None if fits else _misfit(mem, gpu, setup, n),
        per_gpu=mem,
        usable_bytes=visible,
        headroom_bytes=visible - mem.device_bytes,
        max_seq_tokens=max_seq,
        max_batch=max_batch,
        suggestion=None,
        peak_phase=mem.peak_phase,
        usd_per_hour=gpu.price_for(n),
    )


def _fits(spec: ModelSpec, job: TrainSetup, gpu: GpuSpec, n: int) -> bool:
    mem = train_memory(spec, job, n, gpu.interconnect, gpu.visible_bytes)
    return mem.device_bytes <= gpu.visible_bytes


#: Steps a suggestion may take down from the searches' estimate until the exact replay fits.
SUGGESTION_STEPS = 24


def suggest(spec: ModelSpec, setup: TrainSetup, gpu: GpuSpec, n: int, max_batch: int) -> Suggestion | None:
    """The largest micro-batch that fits, with gradient accumulation raised to keep the effective batch
    (micro-batch x accumulation; accumulated gradients persist between micro-batches, which the check
    includes); when a single sequence does not fit, the longest one that does at micro-batch 1. The
    searches scale the allocator cache from one replay, so each suggestion is checked with its own
    replay and stepped down until it fits. None when nothing fits."""
    effective = setup.batch * setup.grad_accum
    batch = min(max_batch, setup.batch)
    while batch >= 1:
        accum = -(-effective // batch)
        if _fits(spec, replace(setup, batch=batch, grad_accum=accum), gpu, n):
            return Suggestion(
                batch=batch, grad_accum=accum, seq_tokens=setup.seq_tokens, effective_batch=batch * accum
            )
        batch -= 1
    one = replace(setup, batch=1, grad_accum=effective)
    seq = largest_seq(spec, one, n, gpu.visible_bytes, setup.seq_tokens, interconnect=gpu.interconnect)
    for _ in range(SUGGESTION_STEPS):
        if seq < 1 or _fits(spec, replace(one, seq_tokens=seq), gpu, n):
            break
        seq -= max(1, seq // 32)
    if seq < 1 or not _fits(spec, replace(one, seq_tokens=seq), gpu, n):
        return None
    return Suggestion(batch=1, grad_accum=effective, seq_tokens=seq, effective_batch=effective)


def candidate_counts(setup: TrainSetup, fixed_count: int | None, max_count: int = 8) -> tuple[int, ...]:
    """GPU counts to try: the fixed one, else 1/2/4/8 up to max_count (one without data parallelism)."""
    if fixed_count:
        return (fixed_count,)
    return (1,) if setup.sharding == "none" else tuple(n for n in TP_SIZES if n <= max_count)


def _pick(best: list[TrainCandidate]) -> TrainCandidate | None:
    """Fewest GPUs, then lowest indicative price for all of them (unpriced last), then name."""
    fitting = [c for c in best if c.fits]
    if not fitting:
        return None
    return min(fitting, key=lambda c: (c.num_gpus, c.usd_per_hour or float("inf"), c.gpu))


def time_info(spec: ModelSpec, setup: TrainSetup, gpu: GpuSpec, tokens: int, max_count: int = 8) -> TimeInfo:
    """The same token budget on 1, 2, 4 and 8 GPUs of one type, in hours and in money. Hours need the
    GPU's bf16 TFLOPS and money its indicative price; rows that do not fit in memory still show what
    they would take (with DDP where the job asked for no sharding)."""
    per_token = time_cost.flops_per_token(spec, setup)
    total = per_token * tokens
    parallel = replace(setup, sharding="ddp") if setup.sharding == "none" else setup
    rows = []
    for n in (k for k in TP_SIZES if k <= max_count):
        job = setup if n == 1 else parallel
        eff = time_cost.scaling_efficiency(gpu.interconnect, n)
        hours = (
            time_cost.training_hours(total, gpu.bf16_tflops, n, gpu.interconnect) if gpu.bf16_tflops else None
        )
        cost = (
            time_cost.training_cost_usd(hours, gpu.price_usd_per_hour, n)
            if hours and gpu.price_usd_per_hour
            else None
        )
        rows.append(
            TimeRow(
                num_gpus=n,
                fits=train_memory(spec, job, n, gpu.interconnect, gpu.visible_bytes).device_bytes
                <= gpu.visible_bytes,
                scaling_efficiency=round(eff, 4),
                speedup=round(n * eff, 3),
                hours=hours,
                cost_usd=cost,
            )
        )
    note = None
    if not gpu.bf16_tflops:
        note = f"{gpu.name}: no sourced bf16 TFLOPS in the catalog, so no time estimate"
    elif not gpu.price_usd_per_hour:
        note = f"{gpu.name}: no indicative price in the catalog, so no cost estimate"
    return TimeInfo(
        token_budget=tokens,
        flops_per_token=per_token,
        total_flops=total,
        mfu=time_cost.ASSUMED_MFU,
        gpu=gpu.name,
        bf16_tflops=gpu.bf16_tflops,
        interconnect=gpu.interconnect,
        rows=tuple(rows),
        note=note,
    )


def build_train_report(
    resolved: ResolvedModel,
    spec: ModelSpec,
    gpus: list[GpuSpec],
    setup: TrainSetup,
    fixed_count: int | None = None,
    tokens: int | None = None,
    max_count: int = 8,
) -> TrainReport:
    """Plan the job over `gpus`: per type the smallest count that fits, up to `max_count` (or exactly
    `fixed_count`), and with a token budget the time and cost on 1 to 8 GPUs of the chosen type."""
    rows: list[TrainCandidate] = []
    best: list[TrainCandidate] = []
    for gpu in gpus:
        for n in candidate_counts(setup, fixed_count, max_count):
            rows.append(evaluate(spec, setup, gpu, n))
            if rows[-1].fits:
                break
        best.append(rows[-1])
        if len(gpus) == 1 and not rows[-1].fits:  # what fits instead, on the deciding count
            last = rows[-1]
            advice = suggest(spec, setup, gpu, last.num_gpus, last.max_batch)
            rows[-1] = best[-1] = replace(last, suggestion=advice)
    chosen = _pick(best)
    plan = chosen or (best[0] if len(gpus) == 1 else None)
    plan_gpu = next((g for g in gpus if plan and g.name == plan.gpu), None)
    trainable = trainable_params(spec, setup)
    return TrainReport(
        gpusize_version=__version__,
        command="train",
        fits=chosen is not None,
        model=model_facts(resolved, spec),
        setup=setup,
        token_budget=tokens,
        params=TrainParams(
            total=spec.params.total,
            trainable=trainable,
            trainable_fraction=round(trainable / spec.params.total, 6),
        ),
        memory=train_memory(spec, setup, 1),
        plan=plan,
        candidates=tuple(rows),
        time=time_info(spec, setup, plan_gpu, tokens, max_count) if plan_gpu and tokens else None,
        assumptions=train_assumptions(spec, setup, gpus),
    )
