"""The training Report: one result object for the table and --json of `gpusize train` (pure).

`build_train_report` sizes one training job on every GPU type asked for: the smallest data-parallel
count in one server (1, 2, 4, 8) whose per-GPU peak fits the CUDA-visible memory, with the reason
when none does, and, given a token budget, time and cost on 1 versus N GPUs (seed 003). JSON keys
are a contract, pinned by tests/test_training.py.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from pydantic import BaseModel, ConfigDict

from gpusize import __version__, memory, plan, training
from gpusize.catalog import GpuSpec
from gpusize.model import ModelSpec
from gpusize.params import ParamCounts
from gpusize.report import ModelInfo, Origin, model_info

GIB = 1 << 30


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TrainWorkloadInfo(_Out):
    mode: str
    method: str
    seq_tokens: int
    batch: int
    grad_accum: int
    tokens_per_gpu_step: int
    optimizer: str
    precision: str
    grad_ckpt: bool
    lora_rank: int | None
    lora_targets: str | None
    sharding: str
    offload: str
    framework: str
    token_budget: int | None


class TrainParamsInfo(_Out):
    total: int
    trainable: int
    trainable_fraction: float


class TrainMemoryInfo(_Out):
    weights_bytes: int
    master_weights_bytes: int
    gradients_bytes: int
    optimizer_bytes: int
    activations_bytes: int
    logits_bytes: int
    overhead_bytes: int
    overlap_bytes: int
    total_bytes: int
    host_ram_bytes: int


class TrainPerGpuInfo(TrainMemoryInfo):
    usable_bytes: int
    headroom_bytes: int
    visible_bytes: int


class TrainCandidateInfo(_Out):
    gpu: str
    num_gpus: int
    sharding: str
    fits: bool
    reason: str | None
    per_gpu: TrainPerGpuInfo
    max_seq_tokens: int
    price_usd_per_hour: float | None


class TrainPlanInfo(TrainCandidateInfo):
    gpu_full_name: str
    interconnect: str


class TimeRow(_Out):
    num_gpus: int
    fits: bool
    scaling_efficiency: float
    speedup: float
    hours: float | None
    cost_usd: float | None


class TimeInfo(_Out):
    token_budget: int
    flops_per_token: float
    total_flops: float
    mfu: float
    gpu: str
    bf16_tflops: float | None
    interconnect: str
    rows: list[TimeRow]
    note: str | None


class TrainReport(_Out):
    gpusize_version: str
    fits: bool
    model: ModelInfo
    workload: TrainWorkloadInfo
    params: TrainParamsInfo
    memory: TrainMemoryInfo
    plan: TrainPlanInfo | None
    candidates: list[TrainCandidateInfo]
    time: TimeInfo | None
    assumptions: dict[str, Any]


def memory_info(mem: training.TrainMemory) -> TrainMemoryInfo:
    return TrainMemoryInfo(
        weights_bytes=mem.weights_bytes,
        master_weights_bytes=mem.master_weights_bytes,
        gradients_bytes=mem.gradients_bytes,
        optimizer_bytes=mem.optimizer_bytes,
        activations_bytes=mem.activations_bytes,
        logits_bytes=mem.logits_bytes,
        overhead_bytes=mem.overhead_bytes,
        overlap_bytes=mem.overlap_bytes,
        total_bytes=mem.total_bytes,
        host_ram_bytes=mem.host_ram_bytes,
    )


def _misfit(mem: training.TrainMemory, gpu: GpuSpec, setup: training.TrainSetup, n: int) -> str:
    """Why the job does not fit on n GPUs of this type, naming the largest term and a lever."""
    terms = {
        "weights": mem.weights_bytes,
        "optimizer states": mem.optimizer_bytes,
        "gradients": mem.gradients_bytes,
        "activations": mem.activations_bytes,
    }
    name, size = max(terms.items(), key=lambda kv: kv[1])
    stage = training.SHARD_STAGE[setup.sharding]
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


def evaluate(
    spec: ModelSpec, counts: ParamCounts, setup: training.TrainSetup, gpu: GpuSpec, n: int
) -> TrainCandidateInfo:
    """Fit test of the job on n GPUs of one type: per-GPU peak <= CUDA-visible total."""
    mem = training.train_memory(spec, counts, setup, n)
    visible = gpu.visible_bytes
    fits = mem.total_bytes <= visible
    limit = max(setup.seq, spec.max_position_embeddings or 0) or 1 << 20
    return TrainCandidateInfo(
        gpu=gpu.name,
        num_gpus=n,
        sharding=setup.sharding if n > 1 else "none",
        fits=fits,
        reason=None if fits else _misfit(mem, gpu, setup, n),
        per_gpu=TrainPerGpuInfo(
            **memory_info(mem).model_dump(),
            usable_bytes=visible,
            headroom_bytes=visible - mem.total_bytes,
            visible_bytes=visible,
        ),
        max_seq_tokens=training.largest_seq(spec, counts, setup, n, visible, limit),
        price_usd_per_hour=gpu.price_usd_per_hour * n if gpu.price_usd_per_hour else None,
    )


def candidate_counts(
    setup: training.TrainSetup, fixed_count: int | None, max_count: int = 8
) -> tuple[int, ...]:
    """GPU counts to try: the fixed one, else 1/2/4/8 up to max_count (one without data parallelism)."""
    if fixed_count:
        return (fixed_count,)
    return (1,) if setup.sharding == "none" else tuple(n for n in plan.TP_SIZES if n <= max_count)


def _pick(best: list[tuple[TrainCandidateInfo, GpuSpec]]) -> tuple[TrainCandidateInfo, GpuSpec] | None:
    """Fewest GPUs, then lowest indicative price for all of them (unpriced last), then name."""
    fitting = [(c, g) for c, g in best if c.fits]
    if not fitting:
        return None
    return min(fitting, key=lambda cg: (cg[0].num_gpus, cg[0].price_usd_per_hour or float("inf"), cg[1].name))


def time_info(
    spec: ModelSpec,
    counts: ParamCounts,
    setup: training.TrainSetup,
    gpu: GpuSpec,
    tokens: int,
    max_count: int = 8,
) -> TimeInfo:
    """Seed 003's comparison: the same token budget on 1, 2, 4 and 8 GPUs of one type, in hours and
    in money. Hours need the GPU's bf16 TFLOPS and money its indicative price; rows that do not fit
    in memory still show what they would take (with DDP where the job asked for no sharding)."""
    per_token = training.flops_per_token(spec, counts, setup)
    total = per_token * tokens
    parallel = replace(setup, sharding="ddp") if setup.sharding == "none" else setup
    rows = []
    for n in (k for k in plan.TP_SIZES if k <= max_count):
        job = setup if n == 1 else parallel
        fits = training.train_memory(spec, counts, job, n).total_bytes <= gpu.visible_bytes
        eff = training.scaling_efficiency(gpu.interconnect, n)
        hours = (
            training.training_hours(total, gpu.bf16_tflops, n, gpu.interconnect) if gpu.bf16_tflops else None
        )
        cost = (
            training.training_cost_usd(hours, gpu.price_usd_per_hour, n)
            if hours and gpu.price_usd_per_hour
            else None
        )
        rows.append(
            TimeRow(
                num_gpus=n,
                fits=fits,
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
        mfu=training.ASSUMED_MFU,
        gpu=gpu.name,
        bf16_tflops=gpu.bf16_tflops,
        interconnect=gpu.interconnect,
        rows=rows,
        note=note,
    )


def _targets_name(modules: tuple[str, ...]) -> str:
    for name, mods in training.LORA_MODULES.items():
        if mods == modules:
            return name
    return ",".join(modules)


def workload_info(setup: training.TrainSetup, tokens: int | None) -> TrainWorkloadInfo:
    lora = setup.method != "full"
    return TrainWorkloadInfo(
        mode="training",
        method=setup.method,
        seq_tokens=setup.seq,
        batch=setup.batch,
        grad_accum=setup.grad_accum,
        tokens_per_gpu_step=setup.tokens_per_gpu * setup.grad_accum,
        optimizer=setup.optimizer,
        precision=setup.precision,
        grad_ckpt=setup.grad_ckpt,
        lora_rank=setup.lora_rank if lora else None,
        lora_targets=_targets_name(setup.lora_modules) if lora else None,
        sharding=setup.sharding,
        offload=setup.offload,
        framework=setup.kernels.name,
        token_budget=tokens,
    )


def build_train_report(
    origin: Origin,
    spec: ModelSpec,
    counts: ParamCounts,
    gpus: list[GpuSpec],
    setup: training.TrainSetup,
    fixed_count: int | None = None,
    tokens: int | None = None,
    max_count: int = 8,
) -> TrainReport:
    """Plan the job over `gpus`: per type the smallest count that fits, up to `max_count` (or exactly
    `fixed_count`), and with a token budget the time and cost on 1 to 8 GPUs of the chosen type."""
    rows: list[TrainCandidateInfo] = []
    best: list[tuple[TrainCandidateInfo, GpuSpec]] = []
    for gpu in gpus:
        for n in candidate_counts(setup, fixed_count, max_count):
            candidate = evaluate(spec, counts, setup, gpu, n)
            rows.append(candidate)
            if candidate.fits:
                break
        best.append((rows[-1], gpu))
    chosen = _pick(best)
    if chosen is None and len(gpus) == 1:  # one GPU type asked for: show the closest miss as the plan
        chosen = best[0]
    plan_info = None
    if chosen:
        plan_info = TrainPlanInfo(
            **chosen[0].model_dump(), gpu_full_name=chosen[1].full_name, interconnect=chosen[1].interconnect
        )
    trainable = training.trainable_params(spec, counts, setup)
    return TrainReport(
        gpusize_version=__version__,
        fits=any(c.fits for c, _ in best),
        model=model_info(origin, spec, counts),
        workload=workload_info(setup, tokens),
        params=TrainParamsInfo(
            total=counts.total, trainable=trainable, trainable_fraction=round(trainable / counts.total, 6)
        ),
        memory=memory_info(training.train_memory(spec, counts, setup, 1)),
        plan=plan_info,
        candidates=rows,
        time=time_info(spec, counts, setup, chosen[1], tokens, max_count) if chosen and tokens else None,
        assumptions=assumptions(spec, setup),
    )


def assumptions(spec: ModelSpec, setup: training.TrainSetup) -> dict[str, Any]:
    """What the numbers assume, for the footer and the JSON."""
    sb = training.state_bytes(setup.precision, setup.method)
    notes = []
    if setup.method == "full" and sb.master:
        notes.append(
            "bf16-mixed keeps an fp32 master copy (4 B/param, in weights_bytes): 16 B/param of model "
            "states with AdamW (ZeRO paper); --precision bf16 drops it and keeps bf16 moments (8 B/param)"
        )
    if setup.method != "full":
        notes.append(
            "LoRA adapters train in "
            + ("fp32 (PEFT autocast_adapter_dtype)" if sb.weight == 4 else setup.precision)
            + "; the frozen base gets no gradients or optimizer states"
        )
    if setup.method == "qlora":
        notes.append(
            f"QLoRA base: decoder linears NF4 with double quantization ({training.NF4_BYTES_PER_PARAM:.4f} "
            "B/param), embeddings/lm_head/norms bf16, + one bf16 dequantized matrix"
        )
    if setup.offload != "none":
        notes.append("host_ram_bytes is the server total (all GPUs' offloaded shards), not per GPU")
    if spec.moe:
        notes.append("MoE: activations count the top-k experts per token; all experts train in full mode")
    return {
        "framework": setup.kernels.name,
        "peak_memory": "PyTorch allocator peak + CUDA context (and NCCL communicators on 2+ GPUs); "
        "fits when it is at most the CUDA-visible total",
        "activation_model": "Korthikanti et al. 2022 per-layer saved tensors for FlashAttention, GQA, "
        f"gated MLPs and MoE routing; checkpointing keeps each layer's input; backward workspace "
        f"{training.BACKWARD_WORKSPACE_LAYERS} layers (fitted); logits "
        f"{setup.kernels.logits_bytes_per_element} B per token x vocab",
        "gradient_overlap": "single GPU and FSDP without accumulation build gradients while "
        "activations are freed: counted once (overlap_bytes)",
        "sharding": "zero1 shards optimizer + master, zero2 + gradients, zero3/fsdp + weights "
        "(2 layers + embedding gathered); ddp replicates",
        "mfu": training.ASSUMED_MFU,
        "scaling_per_doubling": training.SCALING_PER_DOUBLING,
        "estimates": ["activations_bytes", "logits_bytes", "overhead_bytes", "hours", "cost_usd"],
        "prices": "indicative cloud USD per GPU-hour, snapshot dated 2026-04-10; not a quote",
        "overhead_model": f"CUDA context {memory.CUDA_CONTEXT_TP1 / GIB:.2f} GiB, "
        f"{memory.CUDA_CONTEXT_TPN / GIB:.2f} GiB with NCCL on 2+ GPUs (vLLM 0.19 logs)",
        "notes": notes,
    }
