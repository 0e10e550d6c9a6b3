"""Training and fine-tuning memory, time and cost: one function per term, integer bytes (pure).

Model states follow the ZeRO accounting (Rajbhandari et al. 2020, "ZeRO: Memory Optimizations
Toward Training Trillion Parameter Models", section 3.1: mixed-precision Adam keeps 2 + 2 + 12 bytes
per parameter) and its stages; activations follow Korthikanti et al. 2022 ("Reducing Activation
Recomputation in Large Transformer Models", section 4.1), re-derived for gated MLPs, GQA, MoE routing
and FlashAttention (which keeps the attention output and its log-sum-exp instead of the s x s score
matrices). Two constants no formula gives are fitted over the training records in
../shared/reference/engine-logs.yaml (BACKWARD_WORKSPACE_LAYERS, TORCHTUNE_LOGITS_BYTES);
bench/train_calibration.md records the fit and every record's residual, and tests/test_training.py
re-runs both. Nothing here is looked up per model: every number follows from the config.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, replace
from typing import Literal

from gpusize import memory
from gpusize.model import LayerSpec, ModelSpec
from gpusize.params import ParamCounts

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
    seq: int
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
    kernels: Kernels = TRANSFORMERS

    @property
    def tokens_per_gpu(self) -> int:
        """Tokens in one micro-batch on one GPU (what activations scale with)."""
        return self.batch * self.seq


# --------------------------------------------------------------------------- layer anatomy


@dataclass(frozen=True)
class Linear:
    """One weight matrix of a decoder layer (fan_in x fan_out), tagged with its LoRA module name."""

    module: str  # q k v o gate up down
    fan_in: int
    fan_out: int
    count: int = 1  # routed experts: one per expert


def layer_linears(spec: ModelSpec, layer: LayerSpec) -> tuple[Linear, ...]:
    """The linear layers of one decoder layer (Transformers modeling code), routers excluded."""
    return _mixer_linears(spec, layer) + _ffn_linears(spec, layer)


def _mixer_linears(spec: ModelSpec, layer: LayerSpec) -> tuple[Linear, ...]:
    """Attention (GQA, optional output gate), MLA (low-rank q, shared kv latent), Gated DeltaNet and
    Mamba-2 projections, with the shapes params.py counts."""
    h = spec.hidden_size
    if layer.mixer == "attention" and spec.mla:
        m, heads = spec.mla, layer.num_attention_heads
        qk = heads * (m.qk_nope_head_dim + m.qk_rope_head_dim)
        q = (
            (Linear("q", h, m.q_lora_rank), Linear("q", m.q_lora_rank, qk))
            if m.q_lora_rank
            else (Linear("q", h, qk),)
        )
        return q + (
            Linear("k", h, m.kv_lora_rank + m.qk_rope_head_dim),
            Linear("v", m.kv_lora_rank, heads * (m.qk_nope_head_dim + m.v_head_dim)),
            Linear("o", heads * m.v_head_dim, h),
        )
    if layer.mixer == "attention":
        q_dim, kv_dim = layer.num_attention_heads * spec.head_dim, layer.num_key_value_heads * spec.head_dim
        q_out = 2 * q_dim if spec.attention_output_gate else q_dim
        return (Linear("q", h, q_out), Linear("k", h, kv_dim), Linear("v", h, kv_dim), Linear("o", q_dim, h))
    if layer.mixer == "linear_attention" and spec.linear_attention:
        la = spec.linear_attention
        key, value = la.num_key_heads * la.key_head_dim, la.num_value_heads * la.value_head_dim
        return (
            Linear("q", h, 2 * key + 2 * value),
            Linear("k", h, 2 * la.num_value_heads),
            Linear("o", value, h),
        )
    if layer.mixer == "mamba" and spec.mamba:
        mb = spec.mamba
        inner = mb.num_heads * mb.head_dim
        return (
            Linear("q", h, 2 * inner + 2 * mb.n_groups * mb.state_size + mb.num_heads),
            Linear("o", inner, h),
        )
    return ()


def _mlp(spec: ModelSpec, width: int, count: int = 1) -> tuple[Linear, ...]:
    h = spec.hidden_size
    if spec.gated_mlp:
        return (
            Linear("gate", h, width, count),
            Linear("up", h, width, count),
            Linear("down", width, h, count),
        )
    return (Linear("up", h, width, count), Linear("down", width, h, count))


def _ffn_linears(spec: ModelSpec, layer: LayerSpec) -> tuple[Linear, ...]:
    if layer.ffn == "dense":
        return _mlp(spec, layer.intermediate_size)
    if layer.ffn == "moe" and spec.moe:
        shared = _mlp(spec, spec.moe.shared_intermediate_size) if spec.moe.shared_intermediate_size else ()
        return _mlp(spec, spec.moe.moe_intermediate_size, spec.moe.num_experts) + shared
    return ()


def lora_params(spec: ModelSpec, rank: int, modules: tuple[str, ...] = ALL_LINEAR) -> int:
    """Adapter parameters: rank x (fan_in + fan_out) for every targeted linear (A: r x in, B: out x r;
    Hu et al. 2021, LoRA, section 4.1). Llama-3.1-8B, rank 16, all-linear: 41,943,040."""
    return sum(
        rank * (lin.fan_in + lin.fan_out) * lin.count * times
        for layer, times in Counter(spec.layers).items()
        for lin in layer_linears(spec, layer)
        if lin.module in modules
    )


def trainable_params(spec: ModelSpec, counts: ParamCounts, setup: TrainSetup) -> int:
    """Parameters that receive gradients: all of them (full), or the LoRA adapters."""
    if setup.method == "full":
        return counts.total
    return lora_params(spec, setup.lora_rank, setup.lora_modules)


def _layer_params(spec: ModelSpec, layer: LayerSpec) -> int:
    return sum(lin.fan_in * lin.fan_out * lin.count for lin in layer_linears(spec, layer))


def largest_layer_params(spec: ModelSpec) -> int:
    """Linear weights of the biggest decoder layer: the unit FSDP / ZeRO-3 gathers at once."""
    return max((_layer_params(spec, layer) for layer in set(spec.layers)), default=0)


def largest_linear_params(spec: ModelSpec) -> int:
    """The biggest single weight matrix of the decoder (what a 4-bit kernel dequantizes at once)."""
    return max(
        (lin.fan_in * lin.fan_out for layer in set(spec.layers) for lin in layer_linears(spec, layer)),
        default=0,
    )


# --------------------------------------------------------------------------- model states


def frozen_base_bytes(counts: ParamCounts, setup: TrainSetup) -> int:
    """Frozen base weights of LoRA/QLoRA. LoRA: every weight in the 16-bit checkpoint dtype (fp32 under
    --precision fp32). QLoRA: decoder linear layers in NF4 with double-quantized constants
    (NF4_BYTES_PER_PARAM, 0.5159 B); embeddings, lm_head, norms, routers and vision stay bf16, as
    bitsandbytes Linear4bit and torchao NF4Tensor leave them."""
    sb = state_bytes(setup.precision, setup.method)
    if setup.method == "qlora":
        other = 4 if setup.kernels.upcast_unquantized else 2
        return int(counts.linear * NF4_BYTES_PER_PARAM + (counts.total - counts.linear) * other)
    return int(counts.total * sb.frozen)


def dequant_buffer_bytes(spec: ModelSpec, setup: TrainSetup) -> int:
    """QLoRA's bf16 compute copy: bitsandbytes (MatMul4Bit) and torchao dequantize one NF4 matrix at a
    time to bf16 for the matmul, in forward and again in backward: the largest matrix x 2 bytes."""
    return largest_linear_params(spec) * 2 if setup.method == "qlora" else 0


def weights_bytes(spec: ModelSpec, counts: ParamCounts, setup: TrainSetup) -> int:
    """Compute weights, unsharded: full = every parameter in the working dtype (bf16, or fp32);
    LoRA/QLoRA = frozen base + adapters (fp32 under bf16-mixed) + QLoRA's dequantization buffer.
    The fp32 master copy is separate (master_weights_bytes)."""
    sb = state_bytes(setup.precision, setup.method)
    if setup.method == "full":
        return int(counts.total * sb.weight)
    adapters = trainable_params(spec, counts, setup)
    return frozen_base_bytes(counts, setup) + int(adapters * sb.weight) + dequant_buffer_bytes(spec, setup)


def master_weights_bytes(spec: ModelSpec, counts: ParamCounts, setup: TrainSetup) -> int:
    """fp32 master copy of the trainable weights in bf16-mixed full training: 4 bytes per parameter
    (ZeRO paper 3.1; DeepSpeed bf16/fp16 optimizers, Megatron's main params)."""
    return int(trainable_params(spec, counts, setup) * state_bytes(setup.precision, setup.method).master)


def gradients_bytes(spec: ModelSpec, counts: ParamCounts, setup: TrainSetup) -> int:
    """One gradient per trainable parameter in the parameter dtype (bf16 under bf16-mixed and bf16,
    fp32 for fp32 weights and for LoRA adapters under bf16-mixed)."""
    return int(trainable_params(spec, counts, setup) * state_bytes(setup.precision, setup.method).grad)


def adafactor_state_elements(spec: ModelSpec, counts: ParamCounts, setup: TrainSetup) -> int:
    """Adafactor's factored second moment: rows + columns per matrix, the full size for vectors.
    Full: decoder linears, embedding and lm_head (vocab + hidden each), norms/biases/routers whole,
    the vision tower's matrices taken as square. LoRA: A (r x in) and B (out x r) per adapter."""
    if setup.method != "full":
        r = setup.lora_rank
        return sum(
            (r + lin.fan_in + lin.fan_out + r) * lin.count * times
            for layer, times in Counter(spec.layers).items()
            for lin in layer_linears(spec, layer)
            if lin.module in setup.lora_modules
        )
    h, v = spec.hidden_size, spec.vocab_size
    linears = sum(
        (lin.fan_in + lin.fan_out) * lin.count * times
        for layer, times in Counter(spec.layers).items()
        for lin in layer_linears(spec, layer)
    )
    tables = (v + h) * (1 + (counts.lm_head > 0))
    vision = 2 * counts.vision // spec.vision.hidden_size if spec.vision else 0
    return linears + tables + counts.small + counts.router + vision


def optimizer_bytes(spec: ModelSpec, counts: ParamCounts, setup: TrainSetup) -> int:
    """Optimizer states for the trainable parameters, unsharded.
    adamw: 2 moments (exp_avg, exp_avg_sq) in the moment dtype (fp32 under bf16-mixed);
    adamw-8bit: 2 x (1 + 4/2048) bytes (bitsandbytes blockwise); adafactor: factored fp32 second
    moment, no first moment; sgd: one momentum buffer; sgd-nomomentum: nothing."""
    n = trainable_params(spec, counts, setup)
    moment = state_bytes(setup.precision, setup.method).moment
    if setup.optimizer == "adamw":
        return int(2 * moment * n)
    if setup.optimizer == "adamw-8bit":
        return int(2 * ADAM8BIT_BYTES_PER_MOMENT * n)
    if setup.optimizer == "adafactor":
        return ADAFACTOR_STATE_BYTES * adafactor_state_elements(spec, counts, setup)
    if setup.optimizer == "sgd":
        return int(SGD_MOMENTUM_BUFFERS * moment * n)
    return 0


# --------------------------------------------------------------------------- activations


def _keeps_input(setup: TrainSetup, module: str) -> bool:
    """A linear keeps its input for backward only to form a weight gradient: every linear in full
    training, adapted ones under LoRA (the adapter's A needs it); frozen, un-adapted ones do not."""
    return setup.method == "full" or module in setup.lora_modules


def _norm_units(setup: TrainSetup) -> float:
    """Elements kept per RMSNorm per token, in hidden-size units of the activation dtype. Eager: the
    fp32 upcast of its input (2) + the normalized bf16 output when the norm weight trains (1, full
    only). Compiled or fused kernels: the bf16 input alone (1), the rest is recomputed."""
    if setup.kernels.saved != "eager":
        return 1
    return 2 + (setup.method == "full")


def _linear_inputs(setup: TrainSetup, modules: tuple[str, ...], width: int) -> float:
    """The shared input of a group of linears, kept once if any of them forms a weight gradient."""
    return width if any(_keeps_input(setup, m) for m in modules) else 0


def attention_activation_units(spec: ModelSpec, layer: LayerSpec, setup: TrainSetup) -> float:
    """Mixer block, per token, in activation-dtype units (Korthikanti et al. 2022 section 4.1,
    attention part, with FlashAttention: no s x s scores or dropout masks, instead q, k, v, the
    output and the fp32 log-sum-exp per head). GQA: k and v are kv_heads x head_dim wide.
    MLA keeps the latent and the up-projected q/k/v; linear attention / Mamba keep their
    projection outputs (an approximation: their recurrent scan states are not kept per token)."""
    if layer.mixer == "none":
        return 0
    h = spec.hidden_size
    units = _norm_units(setup) * h + _linear_inputs(setup, ("q", "k", "v"), h)
    lins = _mixer_linears(spec, layer)
    if layer.mixer == "attention":
        q_out = sum(lin.fan_out for lin in lins if lin.module == "q")
        kv_out = sum(lin.fan_out for lin in lins if lin.module in ("k", "v"))
        o_in = next(lin.fan_in for lin in lins if lin.module == "o")
        lse = layer.num_attention_heads * LSE_BYTES / state_bytes(setup.precision, setup.method).activation
        units += q_out + kv_out + o_in + lse
    else:
        units += sum(lin.fan_out for lin in lins if lin.module != "o") + sum(
            lin.fan_in for lin in lins if lin.module == "o"
        )
    return units + _lora_units(setup, lins)


def _lora_units(setup: TrainSetup, lins: tuple[Linear, ...]) -> float:
    """Each adapted linear keeps its rank-wide intermediate x A (the input of B); lora_dropout 0."""
    if setup.method == "full":
        return 0
    return sum(setup.lora_rank * lin.count for lin in lins if lin.module in setup.lora_modules)


def _mlp_units(spec: ModelSpec, setup: TrainSetup, width: int) -> float:
    """One MLP on one token. Gated (SwiGLU): gate and up outputs (silu and product backward), and
    unless the kernels are fused (Unsloth's SwiGLU recomputes them) the silu output and the product
    (down's input, when down forms a weight gradient); non-gated: fc1 output (+ the activation output
    when fc2 keeps its input)."""
    eager = setup.kernels.saved != "fused"
    units = _linear_inputs(setup, ("gate", "up"), spec.hidden_size)
    if spec.gated_mlp:
        units += 2 * width + eager * width + (eager and _keeps_input(setup, "down")) * width
    else:
        units += width + (eager and _keeps_input(setup, "down")) * width
    return units + _lora_units(setup, _mlp(spec, width))


def ffn_activation_units(spec: ModelSpec, layer: LayerSpec, setup: TrainSetup) -> float:
    """Feed-forward block per token. MoE routing: the router's input (full training) and its fp32
    softmax over num_experts; for each of the top-k experts its MLP (whose input is the dispatched
    copy of the token) and its output (hidden, for the routing weight's gradient); shared experts as
    a dense MLP."""
    if layer.ffn == "none":
        return 0
    h = spec.hidden_size
    units = _norm_units(setup) * h
    if layer.ffn == "dense" or spec.moe is None:
        return units + _mlp_units(spec, setup, layer.intermediate_size)
    moe = spec.moe
    act = state_bytes(setup.precision, setup.method).activation
    units += (setup.method == "full") * h + moe.num_experts * 4 / act
    units += moe.num_experts_per_tok * (h + _mlp_units(spec, setup, moe.moe_intermediate_size))
    if moe.shared_intermediate_size:
        units += _mlp_units(spec, setup, moe.shared_intermediate_size)
    return units


def layer_activation_bytes_per_token(spec: ModelSpec, layer: LayerSpec, setup: TrainSetup) -> int:
    """Everything one decoder layer keeps for backward, per token (Llama-3.1-8B, full, eager:
    attention 26,688 + MLP 73,728 units = 200,832 bytes in bf16)."""
    act = state_bytes(setup.precision, setup.method).activation
    units = attention_activation_units(spec, layer, setup) + ffn_activation_units(spec, layer, setup)
    return int(units * act)


def checkpoint_bytes_per_token(spec: ModelSpec, setup: TrainSetup) -> int:
    """With activation checkpointing every decoder layer keeps only its input (hidden x dtype)."""
    return len(spec.layers) * spec.hidden_size * int(state_bytes(setup.precision, setup.method).activation)


def logits_bytes(spec: ModelSpec, setup: TrainSetup) -> int:
    """The loss peak: tokens x vocab x the framework's bytes per element (14 for Transformers' fp32
    cross-entropy, 16 when QLoRA's upcast lm_head already emits fp32 logits). Large for 150k-256k
    vocabularies: Qwen3 (151,936) at 8k tokens is 17 GB."""
    per_element = setup.kernels.logits_bytes_per_element
    if setup.method == "qlora" and setup.kernels.upcast_unquantized:
        per_element += 2
    return int(setup.tokens_per_gpu * spec.vocab_size * per_element)


def held_activations_bytes(spec: ModelSpec, setup: TrainSetup) -> int:
    """What the forward pass leaves on the GPU for backward, logits aside. No checkpointing: every
    layer's saved set. Checkpointing (one checkpoint per decoder layer, as Transformers and torchtune
    wrap them): each layer's input, or nothing when the framework offloads checkpoints to host RAM.
    Plus the final norm and, in full training, the lm_head input."""
    act = state_bytes(setup.precision, setup.method).activation
    head = (_norm_units(setup) + (setup.method == "full")) * act * spec.hidden_size
    if not setup.grad_ckpt:
        layers = sum(
            layer_activation_bytes_per_token(spec, layer, setup) * times
            for layer, times in Counter(spec.layers).items()
        )
    elif setup.kernels.offload_checkpoints:
        layers = 0
    else:
        layers = checkpoint_bytes_per_token(spec, setup)
    return int((head + layers) * setup.tokens_per_gpu)


def _largest_layer_bytes_per_token(spec: ModelSpec, setup: TrainSetup) -> int:
    return max((layer_activation_bytes_per_token(spec, la, setup) for la in set(spec.layers)), default=0)


def backward_working_bytes(spec: ModelSpec, setup: TrainSetup) -> int:
    """Transient memory while one layer is differentiated: its recomputed activations under
    checkpointing, plus BACKWARD_WORKSPACE_LAYERS x its saved set for the gradient temporaries."""
    per_token = (setup.grad_ckpt + setup.kernels.workspace_layers) * _largest_layer_bytes_per_token(
        spec, setup
    )
    return int(per_token * setup.tokens_per_gpu)


def last_layer_bytes(spec: ModelSpec, setup: TrainSetup) -> int:
    """What remains at the end of backward: one layer's activations (kept or recomputed) and its
    workspace, (1 + BACKWARD_WORKSPACE_LAYERS) x the largest layer, with or without checkpointing."""
    per_token = (1 + setup.kernels.workspace_layers) * _largest_layer_bytes_per_token(spec, setup)
    return int(per_token * setup.tokens_per_gpu)


def activations_bytes(spec: ModelSpec, setup: TrainSetup) -> int:
    """Activation peak of one micro-batch on one GPU, logits included: the held activations plus the
    larger of the loss peak (logits, at the end of forward) and one layer's backward working set;
    the logits are freed before the first decoder layer is differentiated, so the two never add."""
    working = max(logits_bytes(spec, setup), backward_working_bytes(spec, setup))
    return held_activations_bytes(spec, setup) + working


# --------------------------------------------------------------------------- per GPU


@dataclass(frozen=True)
class TrainMemory:
    """Bytes on one GPU (and in the server's host RAM). weights includes the fp32 master copy and any
    gathered / dequantized working copies; activations includes the logits."""

    weights_bytes: int
    master_weights_bytes: int
    gradients_bytes: int
    optimizer_bytes: int
    activations_bytes: int
    logits_bytes: int
    overhead_bytes: int
    host_ram_bytes: int
    #: Gradient memory not live at the activation peak (replicated grads built during backward).
    overlap_bytes: int = 0

    @property
    def total_bytes(self) -> int:
        return (
            self.weights_bytes
            + self.gradients_bytes
            + self.optimizer_bytes
            + self.activations_bytes
            + self.overhead_bytes
            - self.overlap_bytes
        )


def gathered_bytes(spec: ModelSpec, counts: ParamCounts, setup: TrainSetup) -> int:
    """Weights ZeRO-3 / FSDP hold unsharded at once: the layer being computed, the next one
    prefetched (FSDP forward/backward prefetch) and the larger of embedding and lm_head (gathered at
    the ends of the pass), in their stored format (NF4 decoder layers under QLoRA)."""
    sb = state_bytes(setup.precision, setup.method)
    layer = (
        NF4_BYTES_PER_PARAM
        if setup.method == "qlora"
        else (sb.weight if setup.method == "full" else sb.frozen)
    )
    table = sb.weight if setup.method == "full" else (2 if setup.method == "qlora" else sb.frozen)
    return int(2 * largest_layer_params(spec) * layer + max(counts.embedding, counts.lm_head) * table)


def overhead_bytes(num_gpus: int) -> int:
    """Per-GPU memory outside PyTorch: the CUDA context, and with 2+ GPUs the NCCL communicators
    (memory.CUDA_CONTEXT_TP1 / CUDA_CONTEXT_TPN, measured in the vLLM 0.19 H100 logs)."""
    return memory.cuda_context_bytes(num_gpus)


def fresh_gradients(setup: TrainSetup, num_gpus: int) -> bool:
    """True when gradients are allocated during backward, as activations are freed, and released by
    zero_grad(set_to_none=True): PyTorch on one GPU and FSDP without accumulation. DDP's buckets,
    DeepSpeed's partition buffers and accumulated gradients persist through the next forward."""
    plain = setup.grad_accum == 1 and not setup.optimizer_in_backward
    return plain and (num_gpus == 1 or setup.sharding == "fsdp")


def train_memory(spec: ModelSpec, counts: ParamCounts, setup: TrainSetup, num_gpus: int = 1) -> TrainMemory:
    """Peak memory of one GPU among `num_gpus` data-parallel ranks (num_gpus=1: the whole job).

    Sharding divides master + optimizer (stage 1), gradients (2) and weights (3) by the rank count,
    keeping one layer's full gradients (the reduce bucket) and the gathered parameters
    (gathered_bytes) unsharded. Offload moves master + optimizer (+ the gradient shard from stage 2,
    ZeRO-Offload) or also the weight and gradient shards (ZeRO-Infinity, FSDP CPUOffload) to host RAM.
    """
    n = max(num_gpus, 1)
    stage = SHARD_STAGE[setup.sharding] if n > 1 else 0
    sb = state_bytes(setup.precision, setup.method)
    weights, grads = weights_bytes(spec, counts, setup), gradients_bytes(spec, counts, setup)
    master, optim = master_weights_bytes(spec, counts, setup), optimizer_bytes(spec, counts, setup)
    layer_grads = int(grads * largest_layer_params(spec) / max(counts.linear, 1))
    gathered = min(gathered_bytes(spec, counts, setup), weights)
    if stage >= 1:
        master, optim = master // n, optim // n
    if stage >= 2:
        grads = grads // n + min(layer_grads, grads - grads // n)
    if stage >= 3:
        weights = weights // n + min(gathered, weights - weights // n)
    if setup.optimizer_in_backward:
        grads = min(grads, int(max(counts.embedding, counts.lm_head, largest_linear_params(spec)) * sb.grad))
    host = 0
    if setup.offload != "none":
        host, master, optim = master + optim, 0, 0
    if setup.offload == "optimizer" and stage >= 2:
        host, grads = host + grads - layer_grads, min(grads, layer_grads)
    if setup.offload == "params":
        host += (weights_bytes(spec, counts, setup) + gradients_bytes(spec, counts, setup)) // n
        weights, grads = gathered, min(grads, layer_grads)
    if setup.grad_ckpt and setup.kernels.offload_checkpoints:
        host += checkpoint_bytes_per_token(spec, setup) * setup.tokens_per_gpu
    acts = activations_bytes(spec, setup)
    overlap = 0
    if fresh_gradients(setup, n):
        # Backward starts with all activations and the lm_head's gradient, ends with all gradients and
        # the first layer's activations and workspace: the peak is the larger end, not the sum.
        head = int(max(counts.lm_head, counts.embedding * spec.tie_word_embeddings) * sb.grad)
        head = min(head if setup.method == "full" else 0, grads)
        overlap = min(grads - head, acts - last_layer_bytes(spec, setup))
    return TrainMemory(
        weights_bytes=weights + master,
        master_weights_bytes=master,
        gradients_bytes=grads,
        optimizer_bytes=optim,
        activations_bytes=acts,
        logits_bytes=logits_bytes(spec, setup),
        overhead_bytes=overhead_bytes(n),
        host_ram_bytes=host * n,
        overlap_bytes=max(overlap, 0),
    )


def largest_seq(
    spec: ModelSpec, counts: ParamCounts, setup: TrainSetup, num_gpus: int, budget_bytes: int, limit: int
) -> int:
    """The longest sequence (tokens, at this batch) whose per-GPU peak fits in budget_bytes, up to
    `limit`; 0 when not even one token fits. Memory never falls with length, so bisection is exact."""
    lo, hi = 0, limit
    while lo < hi:
        mid = (lo + hi + 1) // 2
        fits = train_memory(spec, counts, replace(setup, seq=mid), num_gpus).total_bytes <= budget_bytes
        lo, hi = (mid, hi) if fits else (lo, mid - 1)
    return lo


# --------------------------------------------------------------------------- time and cost

#: Utilization assumed for time estimates, applied to the FLOPs executed (recompute included): 0.40,
#: the low end of Llama 3 405B pre-training on 16k H100s (38-43% BF16 MFU; Meta, "The Llama 3 Herd of
#: Models", 2024, table 4). A planning figure for well-tuned bf16 training, not a measurement.
ASSUMED_MFU = 0.40
#: Throughput kept per doubling of data-parallel GPUs, by interconnect. PCIe: 80% at 4 GPUs, seed 003's
#: worked example (3.2x on 4 GPUs), i.e. sqrt(0.8) per doubling; NVLink/NVSwitch "almost linear"
#: (seed 004: 4x A100 with NVLink scale almost linearly): 0.97 per doubling, 91% at 8. NVLink bridges
#: join pairs only, so beyond 2 GPUs the pairs talk over PCIe. Assumptions, not measurements.
SCALING_PER_DOUBLING: dict[str, float] = {"nvswitch": 0.97, "pcie": 0.8**0.5}


def scaling_efficiency(interconnect: str, num_gpus: int) -> float:
    """Fraction of linear speed-up kept on num_gpus GPUs (seed 003: measured speed-up / GPU count)."""
    doublings = math.log2(max(num_gpus, 1))
    pcie = SCALING_PER_DOUBLING["pcie"]
    if interconnect == "nvswitch":
        return float(SCALING_PER_DOUBLING["nvswitch"] ** doublings)
    if interconnect == "bridge-pairs" and doublings >= 1:
        return float(SCALING_PER_DOUBLING["nvswitch"] * pcie ** (doublings - 1))
    return float(pcie**doublings)


def attention_flops_per_token(spec: ModelSpec, seq: int) -> float:
    """Forward attention-score FLOPs per token: QK^T and AV, 2 x 2 x q_dim x the average causal
    context (seq / 2, capped by a sliding window) per attention layer (PaLM appendix B, halved for the
    causal mask that FlashAttention skips)."""
    total = 0.0
    for layer in spec.attention_layers:
        context = min(seq / 2, layer.window or seq)
        total += 4 * layer.num_attention_heads * spec.head_dim * context
    return total


def flops_per_token(spec: ModelSpec, counts: ParamCounts, setup: TrainSetup) -> float:
    """FLOPs executed per trained token. Forward F = 2 N + attention (N = weights multiplied per token:
    active parameters, without input lookup tables or the vision tower). Full: F + 2F backward = 6N
    (Kaplan et al. 2020); LoRA/QLoRA skip the frozen weights' gradients: F + 2N + 2 x attention.
    Checkpointing runs the forward once more (+F)."""
    n = counts.active - counts.vision
    attn = attention_flops_per_token(spec, setup.seq)
    forward = 2 * n + attn
    backward = 2 * forward if setup.method == "full" else 2 * n + 2 * attn
    return forward + backward + setup.grad_ckpt * forward


def training_hours(total_flops: float, peak_tflops: float, num_gpus: int, interconnect: str) -> float:
    """Wall-clock hours: FLOPs / (GPUs x peak x ASSUMED_MFU x scaling_efficiency)."""
    rate = num_gpus * peak_tflops * 1e12 * ASSUMED_MFU * scaling_efficiency(interconnect, num_gpus)
    return total_flops / rate / 3600


def training_cost_usd(hours: float, price_usd_per_gpu_hour: float, num_gpus: int) -> float:
    """Seed 003: cost = hourly rate x hours, the rate being price per GPU x GPUs."""
    return hours * price_usd_per_gpu_hour * num_gpus
