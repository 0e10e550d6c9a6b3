"""The training report (pure): one result object for the table and --json of `gpusize train`.

`build_train_report` sizes one training job on every GPU type asked for: the smallest data-parallel
count in one server (1, 2, 4, 8) whose per-GPU peak fits the CUDA-visible memory, with the reason when
none does, and, given a token budget, time and cost on 1 versus N GPUs.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from gpusize import __version__
from gpusize.core import runtime
from gpusize.core.gpu import GpuSpec
from gpusize.core.plan import TP_SIZES
from gpusize.core.spec import ModelSpec
from gpusize.reports.common import ModelFacts, model_facts, price_note
from gpusize.sources.resolve import ResolvedModel
from gpusize.training import time_cost
from gpusize.training.activations import checkpoint_bytes_per_token
from gpusize.training.anatomy import trainable_params
from gpusize.training.peak import TrainMemory, largest_seq, train_memory
from gpusize.training.setup import (
    BACKWARD_WORKSPACE_LAYERS,
    NF4_BYTES_PER_PARAM,
    SHARD_STAGE,
    TrainSetup,
    state_bytes,
)
from gpusize.units import GIB

__all__ = [
    "TimeInfo",
    "TimeRow",
    "TrainAssumptions",
    "TrainCandidate",
    "TrainParams",
    "TrainReport",
    "build_train_report",
    "candidate_counts",
    "evaluate",
]


@dataclass(frozen=True, kw_only=True)
class TrainParams:
    total: int
    trainable: int
    trainable_fraction: float


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
    max_seq_tokens: int
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
class TrainAssumptions:
    framework: str
    peak_memory: str
    activation_model: str
    gradient_overlap: str
    sharding: str
    mfu: float
    scaling_per_doubling: dict[str, float]
    estimates: tuple[str, ...]
    prices: str
    overhead_model: str
    notes: tuple[str, ...]


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
        hint = "try --grad-ckpt, a shorter --seq or a smaller --batch"
    elif name == "weights" and n > 1 and stage < 3:
        hint = "weights are sharded only by zero3/fsdp"
    elif name == "optimizer states":
        hint = "try --optimizer adamw-8bit or --offload optimizer"
    else:
        hint = "try more GPUs, --method lora/qlora or --offload"
    return (
        f"needs {mem.total_bytes / GIB:.1f} GiB per GPU, {gpu.visible_bytes / GIB:.1f} GiB visible "
        f"(largest: {name} {size / GIB:.1f} GiB); {hint}"
    )


def evaluate(spec: ModelSpec, setup: TrainSetup, gpu: GpuSpec, n: int) -> TrainCandidate:
    """Fit test of the job on n GPUs of one type: per-GPU peak <= CUDA-visible total."""
    mem = train_memory(spec, setup, n)
    visible = gpu.visible_bytes
    fits = mem.total_bytes <= visible
    limit = max(setup.seq_tokens, spec.max_position_embeddings or 0) or 1 << 20
    return TrainCandidate(
        gpu=gpu.name,
        gpu_full_name=gpu.full_name,
        num_gpus=n,
        sharding=setup.sharding if n > 1 else "none",
        fits=fits,
        reason=None if fits else _misfit(mem, gpu, setup, n),
        per_gpu=mem,
        usable_bytes=visible,
        headroom_bytes=visible - mem.total_bytes,
        max_seq_tokens=largest_seq(spec, setup, n, visible, limit),
        usd_per_hour=gpu.price_for(n),
    )


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
                fits=train_memory(spec, job, n).total_bytes <= gpu.visible_bytes,
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
        assumptions=_assumptions(spec, setup, gpus),
    )


def _assumptions(spec: ModelSpec, setup: TrainSetup, gpus: list[GpuSpec]) -> TrainAssumptions:
    """What the numbers assume, for the footer and the JSON."""
    sb = state_bytes(setup.precision, setup.method)
    notes = []
    if setup.method == "full" and sb.master:
        notes.append(
            "bf16-mixed keeps an fp32 master copy (4 B/param, in weights_bytes): 16 B/param of model states "
            "with AdamW (ZeRO paper); --precision bf16 drops it and keeps bf16 moments (8 B/param)"
        )
    if setup.method != "full":
        adapters = "fp32 (PEFT autocast_adapter_dtype)" if sb.weight == 4 else setup.precision
        notes.append(
            f"LoRA adapters train in {adapters}; the frozen base gets no gradients or optimizer states"
        )
    if setup.method == "qlora":
        notes.append(
            f"QLoRA base: decoder linears NF4 with double quantization ({NF4_BYTES_PER_PARAM:.4f} B/param), "
            "embeddings/lm_head/norms bf16, + one bf16 dequantized matrix"
        )
    if setup.offload != "none":
        notes.append("host_ram_bytes is the server total (all GPUs' offloaded shards), not per GPU")
    if setup.grad_ckpt and setup.kernels.offload_checkpoints:
        per_token = checkpoint_bytes_per_token(spec, setup)
        notes.append(f"activation checkpoints offloaded to host RAM ({per_token:,} B per token)")
    if spec.moe:
        notes.append("MoE: activations count the top-k experts per token; all experts train in full mode")
    return TrainAssumptions(
        framework=setup.kernels.name,
        peak_memory="PyTorch allocator peak + CUDA context (and NCCL communicators on 2+ GPUs); fits "
        "when it is at most the CUDA-visible total",
        activation_model="Korthikanti et al. 2022 per-layer saved tensors for FlashAttention, GQA, gated "
        "MLPs and MoE routing; checkpointing keeps each layer's input; backward workspace "
        f"{BACKWARD_WORKSPACE_LAYERS} layers (fitted); logits "
        f"{setup.kernels.logits_bytes_per_element} B per token x vocab",
        gradient_overlap="single GPU and FSDP without accumulation build gradients while activations are "
        "freed: counted once (overlap_bytes)",
        sharding="zero1 shards optimizer + master, zero2 + gradients, zero3/fsdp + weights (2 layers + "
        "embedding gathered); ddp replicates",
        mfu=time_cost.ASSUMED_MFU,
        scaling_per_doubling=dict(time_cost.SCALING_PER_DOUBLING),
        estimates=("activations_bytes", "logits_bytes", "overhead_bytes", "hours", "cost_usd"),
        prices=price_note(gpus),
        overhead_model=f"CUDA context {runtime.CUDA_CONTEXT_TP1 / GIB:.2f} GiB, "
        f"{runtime.CUDA_CONTEXT_TPN / GIB:.2f} GiB with NCCL on 2+ GPUs (vLLM 0.19 logs)",
        notes=tuple(notes),
    )
