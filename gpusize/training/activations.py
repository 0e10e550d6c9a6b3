"""Activations of one training micro-batch on one GPU (pure).

Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large Transformer Models", section
4.1), re-derived for gated MLPs, GQA, MoE routing and FlashAttention (which keeps the attention output
and its log-sum-exp instead of the s x s score matrices). The backward workspace and torchtune's loss
peak are fitted constants (`training.setup`); bench/train_calibration.md records the fit.
"""

from __future__ import annotations

from collections import Counter

from gpusize.core.spec import LayerSpec, ModelSpec
from gpusize.training.anatomy import Linear, mixer_linears, mlp_linears
from gpusize.training.setup import LSE_BYTES, TrainSetup, state_bytes

__all__ = [
    "activations_bytes",
    "attention_activation_units",
    "backward_working_bytes",
    "checkpoint_bytes_per_token",
    "ffn_activation_units",
    "held_activations_bytes",
    "last_layer_bytes",
    "layer_activation_bytes_per_token",
    "logits_bytes",
]

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
    lins = mixer_linears(spec, layer)
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
    return units + _lora_units(setup, mlp_linears(spec, width))


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
