"""The levers a training fix suggestion pulls (pure): each one changes a job the user described in
one way it has not been changed yet (activation checkpointing, a smaller micro-batch with the same
effective batch, pure bf16, 8-bit AdamW, optimizer offload, LoRA, QLoRA, Unsloth), with the flags
that reproduce it; training/suggest.py searches and ranks them.
"""

from __future__ import annotations

from gpusize.core.levers import Change
from gpusize.dataclass import dataclass, replace
from gpusize.training.setup import UNSLOTH, TrainSetup

__all__ = ["Variant", "fsdp", "pulled", "variants"]


@dataclass(frozen=True)
class Variant:
    """A changed training setup a suggestion tries: the lever, its changes and the setup it gives."""

    lever: str
    changes: tuple[Change, ...]
    summary: str
    note: str | None
    setup: TrainSetup


def fsdp(setup: TrainSetup) -> tuple[TrainSetup, tuple[Change, ...]]:
    return replace(setup, sharding="fsdp"), (Change("--sharding", "fsdp"),)


def pulled(job: TrainSetup, lever: str, target: TrainSetup) -> TrainSetup:
    """`job` with the fields `lever` changes taken from `target`."""
    field_of = {"grad_ckpt": ("grad_ckpt",), "batch": ("batch", "grad_accum"), "optimizer": ("optimizer",),
                "offload": ("offload",), "qlora": ("method",)}  # fmt: skip
    return replace(job, **{f: getattr(target, f) for f in field_of.get(lever, ())})


def variants(setup: TrainSetup) -> list[Variant]:
    """One lever each, only those the job has not pulled."""
    out: list[Variant] = []

    def add(lever: str, changes: tuple[Change, ...], summary: str, note: str | None, job: TrainSetup) -> None:
        out.append(Variant(lever, changes, summary, note, job))

    if not setup.grad_ckpt:
        add(
            "grad_ckpt",
            (Change("--grad-ckpt", ""),),
            "activation checkpointing",
            None,
            replace(setup, grad_ckpt=True),
        )
    if setup.batch > 1:
        accum = setup.batch * setup.grad_accum
        changes = (Change("--batch", "1"), Change("--grad-accum", str(accum)))
        note = "the same effective batch, in more, smaller steps"
        add("batch", changes, "micro-batch 1", note, replace(setup, batch=1, grad_accum=accum))
    if setup.method == "full" and setup.precision == "bf16-mixed":
        note = "no fp32 master weights; bf16 optimizer moments (less exact updates)"
        add(
            "precision", (Change("--precision", "bf16"),), "pure bf16", note, replace(setup, precision="bf16")
        )
    if setup.optimizer == "adamw":
        job = replace(setup, optimizer="adamw-8bit")
        add("optimizer", (Change("--optimizer", "adamw-8bit"),), "8-bit AdamW", "bitsandbytes", job)
    if setup.offload == "none":
        note = "optimizer states in host RAM (ZeRO-Offload): slower steps"
        add(
            "offload",
            (Change("--offload", "optimizer"),),
            "optimizer offload",
            note,
            replace(setup, offload="optimizer"),
        )
    if setup.method == "full":
        note = "adapters only; the base is frozen"
        add("lora", (Change("--method", "lora"),), "LoRA", note, replace(setup, method="lora"))
    if setup.method in ("full", "lora"):
        note = "4-bit NF4 base (bitsandbytes), adapters trained"
        add("qlora", (Change("--method", "qlora"),), "QLoRA", note, replace(setup, method="qlora"))
    if setup.method in ("lora", "qlora") and setup.kernels is not UNSLOTH:
        note = "Unsloth's fused kernels, activation checkpoints in host RAM; one GPU"
        job = replace(setup, kernels=UNSLOTH)
        add("framework", (Change("--framework", "unsloth"),), "Unsloth", note, job)
    return out
