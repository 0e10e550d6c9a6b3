"""Training plans (pure): the fit test of one job on n GPUs of one type (on the device figure), the
counts to try, the pick, what fits instead on the same count, and the reason a job does not fit,
naming only levers the job has not pulled yet."""

from __future__ import annotations

from gpusize.core.gpu import GpuSpec
from gpusize.core.plan import TP_SIZES
from gpusize.core.spec import ModelSpec
from gpusize.dataclass import dataclass, replace
from gpusize.training.device import fits_within, largest_batch, largest_seq, train_memory
from gpusize.training.peak import TrainMemory, allocated_memory, per_gpu_setup
from gpusize.training.setup import SHARD_STAGE, TrainSetup
from gpusize.units import GIB

__all__ = [
    "SUGGESTION_STEPS",
    "Suggestion",
    "TrainCandidate",
    "candidate_counts",
    "evaluate",
    "fits",
    "pick",
    "suggest",
]


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
    """One training configuration on one GPU type and count: its sharding, memory per GPU and verdict."""

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


def _method_hint(setup: TrainSetup) -> str:
    """The method levers left: lora/qlora from full, qlora from lora, none from qlora."""
    return {"full": "--method lora or qlora", "lora": "--method qlora"}.get(setup.method, "")


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
        levers = ["more GPUs", _method_hint(setup), "--offload" if setup.offload == "none" else ""]
        hint = "try " + " or ".join(lever for lever in levers if lever)
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
    one_device = gpu.one_device if n > 1 else None  # no collective across MIG slices / one machine
    fits = fits and one_device is None
    return TrainCandidate(
        gpu=gpu.name,
        gpu_full_name=gpu.full_name,
        num_gpus=n,
        sharding=setup.sharding if n > 1 else "none",
        fits=fits,
        reason=None if fits else one_device or _misfit(mem, gpu, setup, n),
        per_gpu=mem,
        usable_bytes=visible,
        headroom_bytes=visible - mem.device_bytes,
        max_seq_tokens=max_seq,
        max_batch=max_batch,
        suggestion=None,
        peak_phase=mem.peak_phase,
        usd_per_hour=gpu.price_for(n),
    )


def fits(spec: ModelSpec, job: TrainSetup, gpu: GpuSpec, n: int) -> bool:
    """The fit test alone (no searches): what the device shows <= the CUDA-visible total. The
    allocated peak + CUDA context and NCCL is a lower bound of it (the allocator's cache only adds),
    so a job above the GPU on that figure is refused without replaying the allocator."""
    if n > 1 and gpu.one_device:
        return False
    low = allocated_memory(spec, per_gpu_setup(job, max(n, 1)), max(n, 1), gpu.interconnect)
    if low.allocated_peak_bytes + low.overhead_bytes > gpu.visible_bytes:
        return False
    return fits_within(spec, job, n, gpu.interconnect, gpu.visible_bytes)


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
        if fits(spec, replace(setup, batch=batch, grad_accum=accum), gpu, n):
            return Suggestion(
                batch=batch, grad_accum=accum, seq_tokens=setup.seq_tokens, effective_batch=batch * accum
            )
        batch -= 1
    one = replace(setup, batch=1, grad_accum=effective)
    seq = largest_seq(spec, one, n, gpu.visible_bytes, setup.seq_tokens, interconnect=gpu.interconnect)
    for _ in range(SUGGESTION_STEPS):
        if seq < 1 or fits(spec, replace(one, seq_tokens=seq), gpu, n):
            break
        seq -= max(1, seq // 32)
    if seq < 1 or not fits(spec, replace(one, seq_tokens=seq), gpu, n):
        return None
    return Suggestion(batch=1, grad_accum=effective, seq_tokens=seq, effective_batch=effective)


def candidate_counts(setup: TrainSetup, fixed_count: int | None, max_count: int = 8) -> tuple[int, ...]:
    """GPU counts to try: the fixed one, else 1/2/4/8 up to max_count (one without data parallelism)."""
    if fixed_count:
        return (fixed_count,)
    return (1,) if setup.sharding == "none" else tuple(n for n in TP_SIZES if n <= max_count)


def pick(best: list[TrainCandidate]) -> TrainCandidate | None:
    """Fewest GPUs, then lowest indicative price for all of them (unpriced last), then name."""
    fitting = [c for c in best if c.fits]
    if not fitting:
        return None
    return min(fitting, key=lambda c: (c.num_gpus, c.usd_per_hour or float("inf"), c.gpu))
