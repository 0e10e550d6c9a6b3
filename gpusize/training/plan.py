"""Training plans (pure): the fit test of one job on n GPUs of one type, the counts to try, and the
reason a job does not fit, naming only levers the job has not pulled yet."""

from __future__ import annotations

from dataclasses import dataclass

from gpusize.core.gpu import GpuSpec
from gpusize.core.plan import TP_SIZES
from gpusize.core.spec import ModelSpec
from gpusize.training.peak import TrainMemory, largest_seq, train_memory
from gpusize.training.setup import SHARD_STAGE, TrainSetup
from gpusize.units import GIB

__all__ = ["TrainCandidate", "candidate_counts", "evaluate", "pick"]


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
    price_usd_per_hour: float | None


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
        levers = ["--grad-ckpt"] if not setup.grad_ckpt else []
        levers += ["a shorter --seq"] + (["a smaller --batch"] if setup.batch > 1 else [])
        hint = "try " + ", ".join(levers[:-1]) + (" or " if len(levers) > 1 else "") + levers[-1]
    elif name == "weights" and n > 1 and stage < 3:
        hint = "weights are sharded only by zero3/fsdp"
    elif name == "optimizer states":
        hint = "try --optimizer adamw-8bit or --offload optimizer"
    else:
        levers = [lever for lever in ("more GPUs", _method_hint(setup)) if lever]
        levers.append("--offload" if setup.offload == "none" else "")
        hint = "try " + " or ".join(lever for lever in levers if lever)
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
        price_usd_per_hour=gpu.price_for(n),
    )


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
    return min(fitting, key=lambda c: (c.num_gpus, c.price_usd_per_hour or float("inf"), c.gpu))
