"""What a training answer assumes (pure): framework versions, optimizer implementation, allocator,
the peak's definition and the notes the setup needs, for the footer and the JSON."""

from __future__ import annotations

from dataclasses import field

from gpusize.core import runtime
from gpusize.core.gpu import VENDOR_TERMS, GpuSpec, VendorTerms
from gpusize.core.spec import ModelSpec
from gpusize.dataclass import dataclass, replace
from gpusize.reports.common import price_note
from gpusize.training import speed, speed_fit
from gpusize.training.activations import checkpoint_bytes_per_token
from gpusize.training.peak import nccl_bytes
from gpusize.training.setup import (
    ADAM8BIT_BLOCK,
    BACKWARD_WORKSPACE_LAYERS,
    NF4_BYTES_PER_PARAM,
    PAGED_OPTIMIZERS,
    TrainSetup,
    autocast_amp,
    state_bytes,
)
from gpusize.training.states import STEP_TEMPORARIES
from gpusize.units import GIB

__all__ = ["VERSIONS", "TrainAssumptions", "train_assumptions"]


@dataclass(frozen=True, kw_only=True)
class TrainAssumptions:
    """What a training plan assumed: framework and versions, optimizer, allocator, activation and
    communication models."""

    framework: str
    versions: str
    optimizer: str
    allocator: str
    peak_memory: str
    activation_model: str
    gradient_overlap: str
    sharding: str
    #: The fitted compute efficiency by method on the records' mean architecture (speed_fit.EFFICIENCY).
    mfu: float
    #: How hours are estimated: the step model and its out-of-sample error (training/speed.py).
    time_model: str
    estimates: tuple[str, ...]
    prices: str
    overhead_model: str
    notes: tuple[str, ...]
    #: The vendor terms of the GPUs planned over (NVIDIA's when they mix vendors); not a JSON key.
    terms: VendorTerms = field(default=VENDOR_TERMS["NVIDIA"], metadata={"json": False, "sheet": False})


#: Framework releases the model follows (facts in bench/train_calibration.md).
VERSIONS = (
    "TRL SFTTrainer defaults (gradient checkpointing on, bf16), accelerate FSDP (FULL_SHARD, BACKWARD_PRE, "
    "limit_all_gathers), DeepSpeed 0.19 ZeRO defaults (reduce bucket 5e8), bitsandbytes 0.50 (8-bit "
    f"block {ADAM8BIT_BLOCK}, NF4 + double quantization), NCCL 2.30"
)


def _optimizer_note(setup: TrainSetup, runtime_name: str = "CUDA") -> str:
    opt = setup.optimizer
    if opt == "adamw":
        how = (
            f"torch.optim.AdamW defaults: foreach on {runtime_name} (a plain loop, HF Trainer before "
            "torch 2.8)"
        )
    elif opt == "adamw-fused":
        how = "torch.optim.AdamW(fused=True) (HF Trainer's adamw_torch_fused on torch >= 2.8)"
    elif opt == "adamw-forloop":
        how = "torch.optim.AdamW(foreach=False)"
    elif opt in ("adamw-8bit", "paged-adamw-8bit", "paged-adamw"):
        how = f"bitsandbytes {opt} (block {ADAM8BIT_BLOCK})"
    elif opt == "adafactor":
        how = "transformers Adafactor (factored fp32 second moment)"
    else:
        how = f"torch.optim.SGD ({'momentum' if opt == 'sgd' else 'no momentum'}, weight_decay 0)"
    temps = STEP_TEMPORARIES.get(opt, "none")
    inbwd = "; stepped in backward, one parameter at a time" if setup.optimizer_in_backward else ""
    return f"{how}; step temporaries: {temps}{inbwd}"


def train_assumptions(spec: ModelSpec, setup: TrainSetup, gpus: list[GpuSpec]) -> TrainAssumptions:
    """What the numbers assume, for the footer and the JSON."""
    one = replace(setup, sharding="none")
    sb = state_bytes(one.precision, one.method, one)
    notes = []
    if setup.method == "full" and autocast_amp(one):
        notes.append(
            "bf16-mixed on one GPU or under DDP is PyTorch AMP: fp32 weights, gradients and AdamW moments "
            "(16 B/param) and autocast's bf16 copy of every matmul weight during the forward; DeepSpeed "
            "and FSDP keep bf16 weights + an fp32 master (the same 16 B/param, sharded); --precision "
            "bf16 keeps everything in bf16 (8 B/param)"
        )
    if setup.method != "full":
        adapters = "fp32 (PEFT autocast_adapter_dtype)" if sb.weight == 4 else setup.precision
        notes.append(
            f"LoRA adapters train in {adapters}; the frozen base gets no gradients or optimizer states"
        )
    if setup.method == "qlora":
        notes.append(
            f"QLoRA base: decoder linears NF4 with double quantization ({NF4_BYTES_PER_PARAM:.4f} B/param), "
            "embeddings/lm_head/norms bf16 (fp32 after PEFT's prepare_model_for_kbit_training), + one "
            "bf16 dequantized matrix; load_peak_bytes: quantizing layer by layer"
        )
    if setup.optimizer in PAGED_OPTIMIZERS:
        notes.append(
            "paged optimizer states (paged_bytes) live in CUDA unified memory: nvidia-smi shows them while "
            "resident, bitsandbytes moves them to host RAM under pressure; not part of the fit"
        )
    if setup.offload != "none":
        notes.append("host_ram_bytes is the server total (all GPUs' offloaded shards), not per GPU")
    if setup.grad_ckpt and setup.kernels.offload_checkpoints:
        per_token = checkpoint_bytes_per_token(spec, setup)
        notes.append(f"activation checkpoints offloaded to host RAM ({per_token:,} B per token)")
    if spec.moe:
        notes.append("MoE: activations count the top-k experts per token; all experts train in full mode")
    context = runtime.TORCH_CUDA_CONTEXT_BYTES
    terms = gpus[0].terms if gpus and len({g.vendor for g in gpus}) == 1 else VENDOR_TERMS["NVIDIA"]
    nvidia = terms == VENDOR_TERMS["NVIDIA"]
    switch = "NVSwitch (with NVLS)" if nvidia else f"{terms.link} (NCCL's NVSwitch figure, not measured)"
    return TrainAssumptions(
        terms=terms,
        framework=setup.kernels.name,
        versions=f"{setup.kernels.version or setup.kernels.name}; {VERSIONS}",
        optimizer=_optimizer_note(setup, terms.runtime),
        allocator="PyTorch caching allocator replayed over two steps ("
        + ("expandable_segments:True" if setup.expandable_segments else "default, no expandable segments")
        + "): reserved peak = allocated peak + the cache it cannot reuse",
        peak_memory=f"device figure = reserved peak + {terms.context} + {terms.collectives} "
        f"(what {terms.smi} shows); "
        f"fits when it is at most the {terms.runtime}-visible total, headroom = visible - device figure; the "
        "allocated peak (torch.cuda.max_memory_allocated) is the largest of forward/backward, optimizer step "
        "and load",
        activation_model="saved tensors per layer as autograd keeps them (Korthikanti et al. 2022 "
        "re-derived for SDPA/FlashAttention, GQA, gated MLPs, MoE routing, autocast and PEFT casts); "
        "checkpointing keeps each layer's input; backward workspace "
        f"{BACKWARD_WORKSPACE_LAYERS} layers (fitted); loss {setup.kernels.logits_bytes_per_element} B "
        "per token x vocab in backward"
        + (
            f", {setup.kernels.loss_forward_bytes_per_element} in the forward"
            if setup.kernels.loss_forward_bytes_per_element
            else ""
        ),
        gradient_overlap="single GPU and FSDP without accumulation build gradients while activations are "
        "freed: counted once (overlap_bytes)",
        sharding="zero1 shards optimizer + master, zero2 + gradients, zero3/fsdp + weights (2 layers + "
        "embedding gathered); ddp replicates and keeps a bucket copy of the gradients; DeepSpeed adds its "
        "reduce bucket",
        mfu=speed_fit.EFFICIENCY[setup.method],
        time_model="step = max(compute + QLoRA dequantization + (1 - overlap) x collectives, collectives); "
        f"efficiency fitted per method and GPU architecture, overlap {speed_fit.OVERLAP}; "
        + speed.estimate_words(),
        estimates=(
            "activations_bytes",
            "logits_bytes",
            "fragmentation_bytes",
            "overhead_bytes",
            "hours",
            "cost_usd",
        ),
        prices=price_note(gpus),
        overhead_model=f"{terms.context} {context / GIB:.2f} GiB (torch 2.11 on an H200, measured); "
        f"{terms.collectives} on 2+ GPUs {nccl_bytes(8, 'nvswitch') / GIB:.2f} GiB per GPU on {switch}, "
        f"{nccl_bytes(8, 'pcie') / GIB:.2f} GiB over PCIe (estimates)",
        notes=tuple(notes),
    )
