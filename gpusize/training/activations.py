"""Activations of one training micro-batch on one GPU (pure).

What autograd keeps, tensor by tensor, as the modeling code saves it (Korthikanti et al. 2022,
"Reducing Activation Recomputation in Large Transformer Models", section 4.1, re-derived for gated
MLPs, GQA, MoE routing and FlashAttention/SDPA, which keep q, k, v, the output and the fp32
log-sum-exp instead of the s x s score matrices), with what the precision regime adds
(transformers 5.17 modeling_llama.py, peft 0.21 tuners/lora/layer.py, torch 2.11 autocast):

- RMSNorm (eager) keeps the fp32 upcast of its input and, when its weight trains, the normalized
  output; compiled or fused kernels keep the input only;
- a linear keeps its input to form its weight gradient: every linear in full training (one copy
  shared by q/k/v and by gate/up; under autocast with fp32 weights each linear keeps its own bf16
  cast of its input); under LoRA only the adapter keeps it: PEFT's fp32 adapters cast the input to
  fp32 per adapted module, and autocast casts that to bf16 again (kept by lora_A);
- SDPA keeps q, k, v and its output; the output's `.transpose(1, 2).contiguous()` is a new tensor,
  kept by o_proj (full) or by its adapter;
- under autocast with fp32 weights the fp32 norm weight promotes the residual stream to fp32.

The backward workspace and torchtune's loss peak are fitted constants (`training.setup`);
bench/train_calibration.md records the fit.
"""

from __future__ import annotations

import functools

from gpusize.core.kinds import mixer_kind, mixer_parts
from gpusize.core.spec import LayerSpec, ModelSpec
from gpusize.dataclass import replace
from gpusize.training.anatomy import Linear, mixer_linears, mlp_linears
from gpusize.training.quantized import bnb_saved_input_bytes, fp32_stream, linear_output_bytes
from gpusize.training.setup import LSE_BYTES, TrainSetup, autocast_amp, state_bytes

__all__ = [
    "activations_bytes",
    "attention_activation_bytes",
    "autocast_cache_bytes",
    "backward_working_bytes",
    "checkpoint_bytes_per_token",
    "ffn_activation_bytes",
    "held_activations_bytes",
    "last_layer_bytes",
    "layer_activation_bytes_per_token",
    "logits_bytes",
    "loss_forward_bytes",
    "residual_bytes",
]


def _act(setup: TrainSetup) -> float:
    return state_bytes(setup.precision, setup.method, setup).activation


def residual_bytes(setup: TrainSetup) -> float:
    """Bytes per element of the residual stream: fp32 under autocast with fp32 weights (the fp32 norm
    weight promotes `weight * x`) and on QLoRA's fp32 stream (`training.quantized`), else the
    activation dtype."""
    return 4.0 if autocast_amp(setup) or fp32_stream(setup) else _act(setup)


def _norm(setup: TrainSetup, width: int) -> float:
    """One RMSNorm, per token. Eager: the fp32 upcast of its input (4 B) + the normalized output
    before the weight, in the residual dtype, when the weight trains (full). Compiled or fused
    kernels: the input alone."""
    if setup.kernels.saved != "eager":
        return residual_bytes(setup) * width
    return 4 * width + (setup.method == "full") * residual_bytes(setup) * width


def _inputs(setup: TrainSetup, lins: tuple[Linear, ...], modules: tuple[str, ...], width: int) -> float:
    """What the linears of `modules` (sharing one input of `width`) keep of it, per token, plus the
    rank-wide LoRA intermediates (x A, the input of B)."""
    group = [lin for lin in lins if lin.module in modules]
    if not group:
        return 0.0
    act = _act(setup)
    if setup.method == "full":
        return len(group) * width * 2 if autocast_amp(setup) else width * act
    adapted = [lin for lin in group if lin.module in setup.lora_modules]
    if not adapted:
        return 0.0
    lora = sum(setup.lora_rank * lin.count for lin in adapted)
    if state_bytes(setup.precision, setup.method, setup).weight == 4 and setup.kernels.fp32_adapters:
        # PEFT: x.to(fp32) per adapted module; under autocast lora_A keeps a bf16 cast of it
        per = 2 if setup.precision == "bf16-mixed" else 4
        return len(adapted) * width * per + lora * per
    return width * act + lora * act


def attention_activation_bytes(spec: ModelSpec, layer: LayerSpec, setup: TrainSetup) -> float:
    """Mixer block, per token. Attention: norm + what q/k/v keep of their input + q, k, v, the
    output and the fp32 LSE per head kept by the kernel + the contiguous output kept for o_proj
    (+ QK-norm upcasts). MLA keeps the latent and the up-projected q/k/v; linear attention and Mamba
    keep their projection outputs (their recurrent scan states are not kept per token); a parallel
    hybrid layer (Falcon-H1) keeps both mixers' behind its one input norm."""
    if layer.mixer == "none":
        return 0.0
    h, act = spec.hidden_size, _act(setup)
    parts = mixer_parts(spec, layer)
    if len(parts) > 1:  # Falcon-H1: each mixer's own, behind the layer's one input norm
        halves = sum(attention_activation_bytes(spec, part, setup) for part in parts)
        return halves - (len(parts) - 1) * _norm(setup, h)
    lins = mixer_linears(spec, layer)
    total = _norm(setup, h) + _inputs(setup, lins, ("q", "k", "v"), h)
    o_in = next((lin.fan_in for lin in lins if lin.module == "o"), 0)
    softmax = mixer_kind(spec, layer).per_token_kv  # an attention kernel (GQA, MLA) over a KV cache
    if softmax:
        q_out = sum(lin.fan_out for lin in lins if lin.module == "q")
        kv_out = sum(lin.fan_out for lin in lins if lin.module in ("k", "v"))
        total += (q_out + kv_out + o_in) * act + layer.num_attention_heads * LSE_BYTES
        if spec.qk_norm != "none":
            k_out = sum(lin.fan_out for lin in lins if lin.module == "k")
            total += _norm(setup, q_out) + _norm(setup, k_out)
    else:
        total += sum(lin.fan_out for lin in lins if lin.module != "o") * act
    keeps_o = _inputs(setup, lins, ("o",), o_in)
    if softmax and not setup.kernels.attention_copy and keeps_o:
        keeps_o -= o_in * act  # the kernel's own output is o_proj's input: kept once
    return total + keeps_o


def _mlp(spec: ModelSpec, setup: TrainSetup, width: int) -> float:
    """One MLP on one token. Gated (SwiGLU): the gate output (act's input), and unless the kernels are
    fused (Unsloth's SwiGLU recomputes them) act's output and the up output (the product's inputs);
    what down keeps of the product; non-gated: fc1 output (+ the activation output for fc2)."""
    lins = mlp_linears(spec, width)
    act, out = _act(setup), linear_output_bytes(setup)
    total = _inputs(setup, lins, ("gate", "up"), spec.hidden_size)
    fused = setup.kernels.saved == "fused"
    if spec.gated_mlp:
        total += (2 * width if fused else 3 * width) * out
    else:
        total += width * out
    if not fused:
        total += _inputs(setup, lins, ("down",), width)
    elif setup.method != "full":
        total += sum(
            setup.lora_rank * act for lin in lins if lin.module == "down" and "down" in setup.lora_modules
        )
    return total


def ffn_activation_bytes(spec: ModelSpec, layer: LayerSpec, setup: TrainSetup) -> float:
    """Feed-forward block per token. MoE routing: the router's input (full training) and its fp32
    softmax over num_experts; for each of the top-k experts its MLP (whose input is the dispatched
    copy of the token) and its output (hidden, for the routing weight's gradient); shared experts as
    a dense MLP."""
    if layer.ffn == "none":
        return 0.0
    h, act = spec.hidden_size, _act(setup)
    total = _norm(setup, h)
    if layer.ffn == "dense" or spec.moe is None:
        return total + _mlp(spec, setup, layer.intermediate_size)
    moe = spec.moe
    total += (setup.method == "full") * h * act + moe.num_experts * 4 + _routed_bytes(spec, layer, setup)
    if moe.shared_intermediate_size:
        total += _mlp(spec, setup, moe.shared_intermediate_size)
    return total


def _routed_bytes(spec: ModelSpec, layer: LayerSpec, setup: TrainSetup) -> float:
    """The routed experts' part of a MoE layer's saved set, per token: for each of the top-k experts
    the dispatched copy of the token and the expert MLP's tensors."""
    if layer.ffn != "moe" or spec.moe is None:
        return 0.0
    moe = spec.moe
    dispatched = spec.hidden_size * max(_act(setup), linear_output_bytes(setup))
    return moe.num_experts_per_tok * (dispatched + _mlp(spec, setup, moe.moe_intermediate_size))


def layer_activation_bytes_per_token(spec: ModelSpec, layer: LayerSpec, setup: TrainSetup) -> int:
    """Everything one decoder layer keeps for backward, per token (Llama-3.1-8B, full, bf16, eager:
    attention 94,336 + MLP 114,688 = 209,024 bytes)."""
    kept = attention_activation_bytes(spec, layer, setup) + ffn_activation_bytes(spec, layer, setup)
    return int(kept + bnb_saved_input_bytes(spec, layer, setup))


def checkpoint_bytes_per_token(spec: ModelSpec, setup: TrainSetup) -> int:
    """With activation checkpointing every decoder layer keeps only its input (hidden x the residual
    dtype: fp32 under autocast with fp32 weights)."""
    return int(len(spec.layers) * spec.hidden_size * residual_bytes(setup))


def _logits_dtype_bytes(setup: TrainSetup) -> float:
    """The lm_head's output dtype: fp32 for an fp32 model, or QLoRA's fp32 lm_head outside autocast."""
    upcast = setup.method == "qlora" and setup.kernels.upcast_unquantized and setup.precision == "bf16"
    return 4.0 if setup.precision == "fp32" or upcast else 2.0


def logits_bytes(spec: ModelSpec, setup: TrainSetup) -> int:
    """The loss peak in backward: tokens x vocab x the framework's bytes per element (transformers
    5.x: 12; 4.x: 14, 16 when QLoRA's upcast lm_head emits fp32; torchtune chunked: 2.2; Unsloth 0).
    Large for 150k-256k vocabularies: Qwen3 (151,936) at 8k tokens is 15 GB."""
    per_element = setup.kernels.logits_bytes_per_element
    legacy = setup.kernels.loss_forward_bytes_per_element is None
    if legacy and setup.method == "qlora" and setup.kernels.upcast_unquantized:
        per_element += 2
    return int(setup.tokens_per_gpu * spec.vocab_size * per_element)


def loss_forward_bytes(spec: ModelSpec, setup: TrainSetup) -> int:
    """The loss peak in the forward pass: logits + their fp32 copy + the saved log-softmax
    (transformers 5.x: 10 bytes per element, 8 when the logits are fp32 already)."""
    per_element = setup.kernels.loss_forward_bytes_per_element
    if per_element is None:
        return logits_bytes(spec, setup)
    if _logits_dtype_bytes(setup) == 4:
        per_element -= 2
    return int(setup.tokens_per_gpu * spec.vocab_size * per_element)


def autocast_cache_bytes(spec: ModelSpec, setup: TrainSetup) -> int:
    """torch.autocast caches the bf16 copy of every fp32 leaf weight it casts until the autocast
    context exits (after the loss): the decoder linears and the lm_head, 2 bytes each."""
    if not autocast_amp(setup):
        return 0
    head = spec.params.lm_head or spec.params.embedding
    return int((spec.params.linear + head) * 2)


def held_activations_bytes(spec: ModelSpec, setup: TrainSetup) -> int:
    """What the forward pass leaves on the GPU for backward, logits aside. No checkpointing: every
    layer's saved set. Checkpointing (one checkpoint per decoder layer, as Transformers and torchtune
    wrap them): each layer's input, or nothing when the framework offloads checkpoints to host RAM.
    Plus the final norm and, in full training, what the lm_head keeps of its input."""
    head = _norm(setup, spec.hidden_size)
    if setup.method == "full":
        head += spec.hidden_size * (2 if autocast_amp(setup) else _act(setup))
    if not setup.grad_ckpt:
        layers = sum(
            layer_activation_bytes_per_token(spec, layer, setup) * times for layer, times in spec.layer_counts
        )
    elif setup.kernels.offload_checkpoints:
        layers = 0
    else:
        layers = checkpoint_bytes_per_token(spec, setup)
    return int((head + layers) * setup.tokens_per_gpu)


def _workspace_bytes_per_token(spec: ModelSpec, layer: LayerSpec, setup: TrainSetup) -> float:
    """The part of a layer's saved set whose gradient temporaries exist at once, per token. The
    inputs MatMul4Bit kept for a frozen 4-bit weight make none. A MoE layer's experts are separate
    branches of the graph, and autograd runs the later-created node first (its sequence number): one
    expert's backward at a time, on its share of the routed tokens (top-k / num_experts of them)."""
    routed = _routed_bytes(spec, layer, setup)
    share = spec.moe.num_experts_per_tok / spec.moe.num_experts if routed and spec.moe else 1.0
    layer_bytes = layer_activation_bytes_per_token(spec, layer, setup)
    return layer_bytes - bnb_saved_input_bytes(spec, layer, setup) - routed * (1 - share)


def _working_per_token(spec: ModelSpec, setup: TrainSetup, resident: float) -> float:
    """The largest layer's `resident` x its saved set + its gradient temporaries
    (BACKWARD_WORKSPACE_LAYERS x `_workspace_bytes_per_token`). Per token: cached by the job without
    its sequence length, micro-batch and accumulation (`_per_token`), which the searches vary."""
    return _working_cached(spec, _per_token(setup), resident)


@functools.lru_cache(maxsize=4096)  # replace() costs more than the lookup (a search asks per probe)
def _per_token(setup: TrainSetup) -> TrainSetup:
    """`setup` with the fields no per-token figure reads (sequence length, micro-batch, accumulation:
    only the totals multiply by `tokens_per_gpu`) fixed, as the key of the per-token cache."""
    return replace(setup, seq_tokens=1, batch=1, grad_accum=1)


@functools.lru_cache(maxsize=4096)
def _working_cached(spec: ModelSpec, setup: TrainSetup, resident: float) -> float:
    ws = setup.kernels.workspace_layers
    return max(
        (
            resident * layer_activation_bytes_per_token(spec, la, setup)
            + ws * _workspace_bytes_per_token(spec, la, setup)
            for la, _ in spec.layer_counts
        ),
        default=0.0,
    )


def backward_working_bytes(spec: ModelSpec, setup: TrainSetup) -> int:
    """Transient memory while one layer is differentiated: its recomputed activations under
    checkpointing, plus its gradient temporaries (BACKWARD_WORKSPACE_LAYERS x its saved set, as
    `_workspace_bytes_per_token` counts it)."""
    return int(_working_per_token(spec, setup, float(setup.grad_ckpt)) * setup.tokens_per_gpu)


def last_layer_bytes(spec: ModelSpec, setup: TrainSetup) -> int:
    """What remains at the end of backward: one layer's activations (kept or recomputed) and its
    gradient temporaries, with or without checkpointing."""
    return int(_working_per_token(spec, setup, 1.0) * setup.tokens_per_gpu)


def activations_bytes(spec: ModelSpec, setup: TrainSetup) -> int:
    """Activation peak of one micro-batch on one GPU, logits included: the held activations plus the
    largest of the forward loss peak (with autocast's bf16 weight copies, alive until the autocast
    context exits), the backward loss peak and one layer's backward working set; the logits are freed
    before the first decoder layer is differentiated, so those never add."""
    forward = loss_forward_bytes(spec, setup) + autocast_cache_bytes(spec, setup)
    working = max(forward, logits_bytes(spec, setup), backward_working_bytes(spec, setup))
    return held_activations_bytes(spec, setup) + working
