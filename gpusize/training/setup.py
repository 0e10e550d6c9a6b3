"""A training job as the user describes it, and what its framework keeps (pure): methods, optimizers,
precisions, sharding, the bytes each model state takes, and the per-framework kernel behaviour.

Model states follow the ZeRO accounting (Rajbhandari et al. 2020, "ZeRO: Memory Optimizations Toward
Training Trillion Parameter Models", section 3.1: mixed-precision Adam keeps 2 + 2 + 12 bytes per
parameter) and its stages.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

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
    "TRANSFORMERS_LOGITS_BYTES",
    "TrainSetup",
    "UNSLOTH",
    "state_bytes",
]


Method = Literal["full", "lora", "qlora"]
Optimizer = Literal["adamw", "adamw-8bit", "adafactor", "sgd", "sgd-nomomentum"]
Precision = Literal["bf16-mixed", "bf16", "fp32"]
Sharding = Literal["none", "ddp", "zero1", "zero2", "zero3", "fsdp"]
Offload = Literal["none", "optimizer", "params"]
LoraTargets = Literal["all-linear", "attention"]
Saved = Literal["eager", "compiled", "fused"]

METHODS: tuple[Method, ...] = ("full", "lora", "qlora")
OPTIMIZERS: tuple[Optimizer, ...] = ("adamw", "adamw-8bit", "adafactor", "sgd", "sgd-nomomentum")
PRECISIONS: tuple[Precision, ...] = ("bf16-mixed", "bf16", "fp32")
SHARDINGS: tuple[Sharding, ...] = ("none", "ddp", "zero1", "zero2", "zero3", "fsdp")
OFFLOADS: tuple[Offload, ...] = ("none", "optimizer", "params")
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
#: each moment in one byte with one fp32 absmax per block of 2048 values.
ADAM8BIT_BLOCK = 2048
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
BACKWARD_WORKSPACE_LAYERS = 0.87
#: Fitted with the above: bytes per token x vocab at torchtune's loss peak (compiled
#: CEWithChunkedOutputLoss, 8 chunks). The analytic floor is 2 (the bf16 output chunks, all kept until
#: backward) plus one chunk's fp32 upcast and gradient at a time ((4 + 4) / 8 = 1): 2 to 3.
TORCHTUNE_LOGITS_BYTES = 2.2
#: Transformers' ForCausalLMLoss: bf16 logits held in the model output (2), the log-softmax of their
#: fp32 upcast saved for backward (4), then the fp32 gradients of log-softmax's output and input
#: (4 + 4) at the backward peak: 14 bytes per element (transformers/loss/loss_utils.py; versions
#: of 2024 also copied the shifted fp32 logits: 18).
TRANSFORMERS_LOGITS_BYTES = 14.0


@dataclass(frozen=True)
class StateBytes:
    """Bytes per trainable parameter of each model state, and per frozen weight."""

    weight: float
    master: float
    grad: float
    moment: float  # one optimizer moment in the optimizer's own dtype
    frozen: float
    activation: float


def state_bytes(precision: Precision, method: Method) -> StateBytes:
    """bf16-mixed: bf16 weights + fp32 master + bf16 grads + fp32 moments (ZeRO paper 3.1: 2+2+12;
    PyTorch FSDP MixedPrecision with fp32 shards is 4+4+8, the same 16 bytes). LoRA adapters under
    bf16-mixed are fp32 themselves (PEFT autocast_adapter_dtype=True): 4 + 4 + 8, no separate master.
    bf16: everything bf16, moments too (torch.optim keeps state in the parameter dtype: 2+2+4).
    fp32: 4+4+8. Frozen base weights stay in the checkpoint's 16-bit dtype unless fp32."""
    if precision == "fp32":
        return StateBytes(4, 0, 4, 4, 4, 4)
    if precision == "bf16":
        return StateBytes(2, 0, 2, 2, 2, 2)
    if method == "full":
        return StateBytes(2, 4, 2, 4, 2, 2)
    return StateBytes(4, 0, 4, 4, 2, 2)


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


#: Transformers + PEFT, eager modules with FlashAttention-2 (the default answer).
TRANSFORMERS = Kernels(
    "transformers eager + FlashAttention-2", "eager", TRANSFORMERS_LOGITS_BYTES, upcast_unquantized=True
)
#: torchtune recipes with compile=True and CEWithChunkedOutputLoss.
TORCHTUNE = Kernels("torchtune compiled, chunked cross-entropy", "compiled", TORCHTUNE_LOGITS_BYTES)
#: Unsloth: fused linear cross-entropy (logits never materialized whole), fused RMSNorm/SwiGLU kernels,
#: activation checkpoints offloaded to host RAM (use_gradient_checkpointing="unsloth").
UNSLOTH = Kernels("unsloth fused kernels, offloaded checkpoints", "fused", 0.0, offload_checkpoints=True)
FRAMEWORKS: dict[str, Kernels] = {"transformers": TRANSFORMERS, "torchtune": TORCHTUNE, "unsloth": UNSLOTH}


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
    kernels: Kernels = field(default=TRANSFORMERS, metadata={"json": False})

    __json_properties__ = ("framework",)

    @property
    def framework(self) -> str:
        return self.kernels.name

    @property
    def tokens_per_gpu(self) -> int:
        """Tokens in one micro-batch on one GPU (what activations scale with)."""
        return self.batch * self.seq_tokens
