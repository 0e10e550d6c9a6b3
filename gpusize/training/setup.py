"""A training job as the user describes it, and what its framework keeps (pure): methods, optimizers,
precisions, sharding, the bytes each model state takes, and the per-framework kernel behaviour.

Model states follow the ZeRO accounting (Rajbhandari et al. 2020, "ZeRO: Memory Optimizations Toward
Training Trillion Parameter Models", section 3.1: mixed-precision Adam keeps 2 + 2 + 12 bytes per
parameter) and its stages.
"""

from __future__ import annotations

import operator
from dataclasses import field, fields
from typing import Literal, get_args

from gpusize.dataclass import dataclass, kept_hash

__all__ = [
    "ADAFACTOR_STATE_BYTES",
    "ADAM8BIT_BLOCK",
    "ADAM8BIT_BYTES_PER_MOMENT",
    "ALL_LINEAR",
    "BACKWARD_WORKSPACE_LAYERS",
    "FRAMEWORKS",
    "Kernels",
    "LORA_MODULES",
    "LORA_TARGETS",
    "LSE_BYTES",
    "LoraTargets",
    "METHODS",
    "Method",
    "NF4_BLOCK",
    "NF4_BYTES_PER_PARAM",
    "NF4_SECOND_BLOCK",
    "OFFLOADS",
    "OPTIMIZERS",
    "PAGED_OPTIMIZERS",
    "Offload",
    "Optimizer",
    "PRECISIONS",
    "Precision",
    "SGD_MOMENTUM_BUFFERS",
    "SHARDINGS",
    "SHARD_STAGE",
    "Saved",
    "Sharding",
    "StateBytes",
    "TORCHTUNE",
    "TORCHTUNE_LOGITS_BYTES",
    "TRANSFORMERS",
    "TRANSFORMERS_4",
    "TRANSFORMERS_4_LOGITS_BYTES",
    "TRANSFORMERS_LOGITS_BYTES",
    "TRANSFORMERS_LOSS_FORWARD_BYTES",
    "TRANSFORMERS_VERSIONS",
    "TrainSetup",
    "UNSLOTH",
    "autocast_amp",
    "state_bytes",
]


Method = Literal["full", "lora", "qlora"]
Optimizer = Literal[
    "adamw",
    "adamw-fused",
    "adamw-forloop",
    "adamw-8bit",
    "paged-adamw",
    "paged-adamw-8bit",
    "adafactor",
    "sgd",
    "sgd-nomomentum",
]
Precision = Literal["bf16-mixed", "bf16", "fp32"]
Sharding = Literal["none", "ddp", "zero1", "zero2", "zero3", "fsdp"]
Offload = Literal["none", "optimizer", "params"]
LoraTargets = Literal["all-linear", "attention"]
Saved = Literal["eager", "compiled", "fused"]

METHODS: tuple[Method, ...] = get_args(Method)
#: adamw = torch.optim.AdamW with its defaults, the foreach implementation on CUDA (torch 2.11
#: optim/adam.py: "we default to foreach and pass False to use_fused"); adamw-fused = fused=True
#: (transformers Trainer's default `adamw_torch_fused` on torch >= 2.8); adamw-forloop = foreach=False;
#: adamw-8bit / paged-adamw(-8bit) = bitsandbytes AdamW8bit / PagedAdamW / PagedAdamW8bit.
OPTIMIZERS: tuple[Optimizer, ...] = get_args(Optimizer)
#: Optimizers whose states bitsandbytes keeps in CUDA unified memory (cudaMallocManaged): outside
#: PyTorch's allocator, evicted to host RAM under memory pressure.
PAGED_OPTIMIZERS = ("paged-adamw", "paged-adamw-8bit")
PRECISIONS: tuple[Precision, ...] = get_args(Precision)
SHARDINGS: tuple[Sharding, ...] = get_args(Sharding)
OFFLOADS: tuple[Offload, ...] = get_args(Offload)
LORA_TARGETS: tuple[LoraTargets, ...] = ("all-linear", "attention")
#: How far each strategy shards model states across data-parallel ranks (ZeRO paper, figure 1):
#: 1 optimizer states (+ fp32 master), 2 + gradients, 3 + parameters. FSDP FULL_SHARD is stage 3.
SHARD_STAGE: dict[str, int] = {"none": 0, "ddp": 0, "zero1": 1, "zero2": 2, "zero3": 3, "fsdp": 3}

# --------------------------------------------------------------------------- constants

#: LoRA target modules: attention projections q/k/v/o and MLP (or expert) gate/up/down. Mixers
#: without q/k/v (MLA, linear attention, Mamba) map their input projections to q/k/v and their
#: output projection to o; non-gated MLPs map fc1 to up and fc2 to down.
ALL_LINEAR = ("q", "k", "v", "o", "gate", "up", "down")
LORA_MODULES: dict[str, tuple[str, ...]] = {"all-linear": ALL_LINEAR, "attention": ("q", "k", "v", "o")}


#: bitsandbytes NF4 with double quantization (Dettmers et al. 2023, QLoRA, section 3): 4-bit values,
#: one 8-bit absmax per 64 weights, one fp32 second-level constant per 256 blocks:
#: 0.5 + 1/64 + 4/(64 x 256) bytes per weight (0.127 bits of constants instead of 0.5).
NF4_BLOCK = 64
NF4_SECOND_BLOCK = 256
NF4_BYTES_PER_PARAM = 0.5 + 1 / NF4_BLOCK + 4 / (NF4_BLOCK * NF4_SECOND_BLOCK)
#: bitsandbytes 8-bit Adam (Dettmers et al. 2022, "8-bit Optimizers via Block-wise Quantization"):
#: each moment in one byte with one fp32 absmax per block of 256 values since bitsandbytes 0.44.0
#: (commit aa57bd89, "Change 8bit optimizer blocksize 2048->256"; 0.50.2 optim/optimizer.py
#: `blocksize = 256`). Before 0.44: 2048.
ADAM8BIT_BLOCK = 256
ADAM8BIT_BYTES_PER_MOMENT = 1 + 4 / ADAM8BIT_BLOCK
#: Adafactor (Shazeer & Stern 2018) keeps a row and a column second-moment vector per matrix, fp32
#: (transformers.optimization.Adafactor upcasts its state), and no first moment (beta1=None).
ADAFACTOR_STATE_BYTES = 4
#: SGD with momentum keeps one buffer per parameter (torch.optim.SGD momentum_buffer).
SGD_MOMENTUM_BUFFERS = 1
#: Bytes of a FlashAttention log-sum-exp entry (fp32), one per head per token.
LSE_BYTES = 4
#: Fitted: gradient temporaries of the layer being differentiated, as a multiple of that layer's saved
#: activations. Least squares (log ratio) over 14 records, jointly with TORCHTUNE_LOGITS_BYTES; bound
#: mostly by Unsloth's context-length tables (logits never materialized, checkpoints offloaded).
BACKWARD_WORKSPACE_LAYERS = 0.9
#: Fitted with the above: bytes per token x vocab at torchtune's loss peak (compiled
#: CEWithChunkedOutputLoss, 8 chunks). The analytic floor is 2 (the bf16 output chunks, all kept until
#: backward) plus one chunk's fp32 upcast and gradient at a time ((4 + 4) / 8 = 1): 2 to 3.
TORCHTUNE_LOGITS_BYTES = 2.1
#: transformers 5.x ForCausalLMLoss (loss/loss_utils.py: `logits = logits.float()`, labels shifted
#: instead of logits): in the forward, bf16 logits (2) + their fp32 copy (4) + the log-softmax saved
#: for backward (4) = 10 bytes per element; in the backward, once the model output is gone (Trainer's
#: compute_loss returns the loss only), the log-softmax (4) and the fp32 gradients of its output and
#: input (4 + 4) = 12. With fp32 logits (an fp32 model) the copy is skipped: 8 in the forward.
TRANSFORMERS_LOGITS_BYTES = 12.0
TRANSFORMERS_LOSS_FORWARD_BYTES = 10.0
#: transformers 4.x before the 4.46 loss rewrite (the version of 2024 benchmarks): the model output
#: kept the bf16 logits through backward (2) on top of the 12: 14 bytes per element, +2 when QLoRA's
#: fp32 lm_head emits fp32 logits.
TRANSFORMERS_4_LOGITS_BYTES = 14.0


@dataclass(frozen=True)
class StateBytes:
    """Bytes per trainable parameter of each model state, and per frozen weight."""

    weight: float
    master: float
    grad: float
    moment: float  # one optimizer moment in the optimizer's own dtype
    frozen: float
    activation: float


#: The five answers of `state_bytes` (frozen, so shared: it is asked many times per memory figure).
_FP32_STATES = StateBytes(4, 0, 4, 4, 4, 4)
_FP32_ADAPTERS = StateBytes(4, 0, 4, 4, 2, 2)
_BF16_STATES = StateBytes(2, 0, 2, 2, 2, 2)
_AMP_STATES = StateBytes(4, 0, 4, 4, 2, 2)
_MIXED_STATES = StateBytes(2, 4, 2, 4, 2, 2)


def state_bytes(precision: Precision, method: Method, setup: TrainSetup | None = None) -> StateBytes:
    """bf16-mixed: bf16 weights + fp32 master + bf16 grads + fp32 moments (ZeRO paper 3.1: 2+2+12;
    DeepSpeed's bf16 optimizer; PyTorch FSDP MixedPrecision with fp32 shards is 4+4+8, the same 16
    bytes). Plain PyTorch AMP on one GPU or under DDP (`autocast_amp`: transformers Trainer, accelerate,
    Lightning bf16-mixed) keeps fp32 parameters, fp32 gradients and fp32 moments (4+4+8) and casts the
    weights to bf16 inside autocast. LoRA adapters are fp32 under bf16-mixed (PEFT
    autocast_adapter_dtype=True), and under pure bf16 too with PEFT (`fp32_adapters`): 4 + 4 + 8.
    bf16: everything bf16, moments too (torch.optim keeps state in the parameter dtype: 2+2+4).
    fp32: 4+4+8. Frozen base weights stay in the checkpoint's 16-bit dtype unless fp32."""
    if precision == "fp32":
        return _FP32_STATES
    adapters32 = method != "full" and (
        precision == "bf16-mixed" or bool(setup and setup.kernels.fp32_adapters)
    )
    if adapters32:
        return _FP32_ADAPTERS
    if precision == "bf16":
        return _BF16_STATES
    if setup is not None and autocast_amp(setup):
        return _AMP_STATES
    return _MIXED_STATES


def autocast_amp(setup: TrainSetup) -> bool:
    """Full bf16-mixed training as plain PyTorch AMP: fp32 parameters under torch.autocast, with no
    sharding engine that keeps bf16 parameters (DeepSpeed ZeRO, FSDP MixedPrecision)."""
    return (
        setup.method == "full"
        and setup.precision == "bf16-mixed"
        and setup.kernels.autocast
        and setup.sharding in ("none", "ddp")
    )


# --------------------------------------------------------------------------- kernels (frameworks)


@dataclass(frozen=True)
class Kernels:
    """What a training framework keeps for backward beyond the model states.

    saved: "eager" = PyTorch eager modules (Transformers: RMSNorm keeps an fp32 copy of its input and,
    when its weight trains, the normalized output; silu and the SwiGLU product are saved tensors);
    "compiled" = torch.compile (the norm keeps only its bf16 input, the MLP intermediates stay);
    "fused" = hand-written kernels (Unsloth's RMSNorm and SwiGLU recompute silu and the product).
    logits_bytes_per_element: bytes per (token x vocab) at the loss peak.
    offload_checkpoints: activation checkpoints live in host RAM (Unsloth, torchtune offloading)."""

    name: str
    saved: Saved
    logits_bytes_per_element: float
    offload_checkpoints: bool = False
    #: QLoRA keeps the unquantized weights (embeddings, lm_head, norms) in fp32 (PEFT
    #: prepare_model_for_kbit_training, the Transformers QLoRA recipe).
    upcast_unquantized: bool = False
    workspace_layers: float = BACKWARD_WORKSPACE_LAYERS
    #: Bytes per (token x vocab) at the loss in the forward pass, when it differs from the backward
    #: figure (`logits_bytes_per_element`); None = the same.
    loss_forward_bytes_per_element: float | None = None
    #: bf16-mixed full training runs fp32 parameters under torch.autocast (transformers Trainer,
    #: accelerate, a plain PyTorch loop), unless a sharding engine keeps bf16 parameters.
    autocast: bool = False
    #: PEFT keeps LoRA adapters in fp32 whatever the base dtype (autocast_adapter_dtype=True) and casts
    #: each adapted module's input to fp32 (tuners/lora/layer.py `_cast_input_dtype`).
    fp32_adapters: bool = False
    #: SDPA works on [batch, heads, tokens, dim]: its output's `.transpose(1, 2).contiguous()` is a
    #: second tensor that o_proj (or its adapter) keeps; FlashAttention-2's [batch, tokens, heads,
    #: dim] output is reshaped in place (Unsloth, transformers with flash_attention_2).
    attention_copy: bool = True
    #: QLoRA quantizes after loading the whole model in 16-bit (LitGPT of 2023-24), instead of layer by
    #: layer (transformers 5 on-the-fly quantization, torchtune FrozenNF4Linear).
    quantize_after_load: bool = False
    #: bitsandbytes before 0.43.2 saved every 4-bit linear's input in MatMul4Bit (PR #1270):
    #: `training.quantized.bnb_saved_input_bytes`.
    bnb_saves_input: bool = False
    #: Gradient checkpointing through `torch.utils.checkpoint(use_reentrant=True)`: transformers
    #: 4.x's default (`gradient_checkpointing_enable`, explicit from 4.38); 5.0 made it False.
    #: Under FSDP1 with LoRA it keeps each layer's input and its gradient through backward
    #: (`training.reshard_hook`).
    reentrant_checkpointing: bool = False
    #: The framework release followed, for the assumptions.
    version: str = ""


#: transformers 5.x + PEFT (Trainer / TRL SFTTrainer / a plain PyTorch loop), eager modules with SDPA
#: or FlashAttention-2 (the default answer): torch 2.11, transformers 5.17, peft 0.21.
TRANSFORMERS = Kernels(
    "transformers 5.x eager + SDPA/FlashAttention-2",
    "eager",
    TRANSFORMERS_LOGITS_BYTES,
    upcast_unquantized=True,
    loss_forward_bytes_per_element=TRANSFORMERS_LOSS_FORWARD_BYTES,
    autocast=True,
    fp32_adapters=True,
    version="transformers 5.17, peft 0.21, torch 2.11",
)
#: transformers 4.x of 2024 (before the loss rewrite): the bf16 logits stay alive through backward.
TRANSFORMERS_4 = Kernels(
    "transformers 4.x eager + FlashAttention-2",
    "eager",
    TRANSFORMERS_4_LOGITS_BYTES,
    upcast_unquantized=True,
    autocast=True,
    fp32_adapters=True,
    attention_copy=False,
    reentrant_checkpointing=True,
    version="transformers 4.4x, peft 0.1x",
)
#: torchtune recipes with compile=True and CEWithChunkedOutputLoss.
TORCHTUNE = Kernels("torchtune compiled, chunked cross-entropy", "compiled", TORCHTUNE_LOGITS_BYTES)
#: Unsloth: fused linear cross-entropy (logits never materialized whole), fused RMSNorm/SwiGLU kernels,
#: activation checkpoints offloaded to host RAM (use_gradient_checkpointing="unsloth").
UNSLOTH = Kernels(
    "unsloth fused kernels, offloaded checkpoints",
    "fused",
    0.0,
    offload_checkpoints=True,
    attention_copy=False,
)
FRAMEWORKS: dict[str, Kernels] = {"transformers": TRANSFORMERS, "torchtune": TORCHTUNE, "unsloth": UNSLOTH}
#: Older behaviour behind --transformers-version.
TRANSFORMERS_VERSIONS: dict[str, Kernels] = {"5": TRANSFORMERS, "4": TRANSFORMERS_4}


@dataclass(frozen=True)
class TrainSetup:
    """One training job as the user describes it (per-GPU micro-batch; the GPU count is separate)."""

    method: Method
    seq_tokens: int
    batch: int = 1
    grad_accum: int = 1
    optimizer: Optimizer = "adamw"
    precision: Precision = "bf16-mixed"
    grad_ckpt: bool = True
    lora_rank: int = 16
    lora_modules: tuple[str, ...] = ALL_LINEAR
    sharding: Sharding = "fsdp"
    offload: Offload = "none"
    #: Step each parameter as soon as its gradient is ready (torchtune optimizer_in_bwd); grad_accum 1.
    optimizer_in_backward: bool = False
    #: PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (the allocator maps one growing segment).
    expandable_segments: bool = False
    kernels: Kernels = field(default=TRANSFORMERS, metadata={"json": False})

    __json_properties__ = ("framework",)

    @property
    def framework(self) -> str:
        return self.kernels.name

    @property
    def tokens_per_gpu(self) -> int:
        """Tokens in one micro-batch on one GPU (what activations scale with)."""
        return self.batch * self.seq_tokens

    def __hash__(self) -> int:
        """The compared fields' hash, kept (`kept_hash`): the training caches (step sizes, replays,
        probes) hash the same job some 15,000 times in one `train --seq 128k` (bench/RESULTS.md)."""
        known: int | None = self.__dict__.get("_hash")  # kept: no call
        return kept_hash(self, _SETUP_VALUES) if known is None else known


#: The fields TrainSetup's equality compares, which its kept hash covers.
_SETUP_VALUES = operator.attrgetter(*(f.name for f in fields(TrainSetup) if f.compare))
