"""Model states of a training job, unsharded (pure): weights, the fp32 master copy, gradients and
optimizer states, in integer bytes.
"""

from __future__ import annotations

from gpusize.core.spec import ModelSpec
from gpusize.training.anatomy import largest_linear_params, layer_linears, trainable_params
from gpusize.training.setup import (
    ADAFACTOR_STATE_BYTES,
    ADAM8BIT_BYTES_PER_MOMENT,
    NF4_BYTES_PER_PARAM,
    SGD_MOMENTUM_BUFFERS,
    TrainSetup,
    state_bytes,
)

__all__ = [
    "STEP_TEMPORARIES",
    "adafactor_state_elements",
    "dequant_buffer_bytes",
    "frozen_base_bytes",
    "gradients_bytes",
    "master_weights_bytes",
    "optimizer_bytes",
    "step_temporary_bytes",
    "weights_bytes",
]

# --------------------------------------------------------------------------- model states


def frozen_base_bytes(spec: ModelSpec, setup: TrainSetup) -> int:
    """Frozen base weights of LoRA/QLoRA. LoRA: every weight in the 16-bit checkpoint dtype (fp32 under
    --precision fp32). QLoRA: decoder linear layers in NF4 with double-quantized constants
    (NF4_BYTES_PER_PARAM, 0.5159 B); embeddings, lm_head, norms, routers and vision stay bf16, as
    bitsandbytes Linear4bit and torchao NF4Tensor leave them."""
    sb = state_bytes(setup.precision, setup.method, setup)
    if setup.method == "qlora":
        other = 4 if setup.kernels.upcast_unquantized else 2
        return int(
            spec.params.linear * NF4_BYTES_PER_PARAM + (spec.params.total - spec.params.linear) * other
        )
    return int(spec.params.total * sb.frozen)


def dequant_buffer_bytes(spec: ModelSpec, setup: TrainSetup) -> int:
    """QLoRA's bf16 compute copy: bitsandbytes (MatMul4Bit) and torchao dequantize one NF4 matrix at a
    time to bf16 for the matmul, in forward and again in backward: the largest matrix x 2 bytes."""
    return largest_linear_params(spec) * 2 if setup.method == "qlora" else 0


def weights_bytes(spec: ModelSpec, setup: TrainSetup) -> int:
    """Compute weights, unsharded: full = every parameter in the working dtype (bf16, or fp32);
    LoRA/QLoRA = frozen base + adapters (fp32 under bf16-mixed) + QLoRA's dequantization buffer.
    The fp32 master copy is separate (master_weights_bytes)."""
    sb = state_bytes(setup.precision, setup.method, setup)
    if setup.method == "full":
        return int(spec.params.total * sb.weight)
    adapters = trainable_params(spec, setup)
    return frozen_base_bytes(spec, setup) + int(adapters * sb.weight) + dequant_buffer_bytes(spec, setup)


def master_weights_bytes(spec: ModelSpec, setup: TrainSetup) -> int:
    """fp32 master copy of the trainable weights in bf16-mixed full training: 4 bytes per parameter
    (ZeRO paper 3.1; DeepSpeed bf16/fp16 optimizers, Megatron's main params)."""
    return int(trainable_params(spec, setup) * state_bytes(setup.precision, setup.method, setup).master)


def gradients_bytes(spec: ModelSpec, setup: TrainSetup) -> int:
    """One gradient per trainable parameter in the parameter dtype (bf16 under bf16-mixed and bf16,
    fp32 for fp32 weights and for LoRA adapters under bf16-mixed)."""
    return int(trainable_params(spec, setup) * state_bytes(setup.precision, setup.method, setup).grad)


def adafactor_state_elements(spec: ModelSpec, setup: TrainSetup) -> int:
    """Adafactor's factored second moment: rows + columns per matrix, the full size for vectors.
    Full: decoder linears, embedding and lm_head (vocab + hidden each), norms/biases/routers whole,
    the vision tower's matrices taken as square. LoRA: A (r x in) and B (out x r) per adapter."""
    if setup.method != "full":
        r = setup.lora_rank
        return sum(
            (r + lin.fan_in + lin.fan_out + r) * lin.count * times
            for layer, times in spec.layer_counts
            for lin in layer_linears(spec, layer)
            if lin.module in setup.lora_modules
        )
    h, v = spec.hidden_size, spec.vocab_size
    linears = sum(
        (lin.fan_in + lin.fan_out) * lin.count * times
        for layer, times in spec.layer_counts
        for lin in layer_linears(spec, layer)
    )
    tables = (v + h) * (1 + (spec.params.lm_head > 0))
    vision = 2 * spec.params.vision // spec.vision.hidden_size if spec.vision else 0
    return linears + tables + spec.params.small + spec.params.router + vision


def optimizer_bytes(spec: ModelSpec, setup: TrainSetup) -> int:
    """Optimizer states for the trainable parameters, unsharded.
    adamw (foreach, fused, for-loop, paged): 2 moments (exp_avg, exp_avg_sq) in the moment dtype
    (fp32 under bf16-mixed); adamw-8bit: 2 x (1 + 4/256) bytes (bitsandbytes blockwise);
    adafactor: factored fp32 second moment, no first moment; sgd: one momentum buffer;
    sgd-nomomentum: nothing. Paged optimizers keep these in CUDA unified memory (peak.paged)."""
    n = trainable_params(spec, setup)
    moment = state_bytes(setup.precision, setup.method, setup).moment
    if setup.optimizer in ("adamw", "adamw-fused", "adamw-forloop", "paged-adamw"):
        return int(2 * moment * n)
    if setup.optimizer in ("adamw-8bit", "paged-adamw-8bit"):
        return int(2 * ADAM8BIT_BYTES_PER_MOMENT * n)
    if setup.optimizer == "adafactor":
        return ADAFACTOR_STATE_BYTES * adafactor_state_elements(spec, setup)
    if setup.optimizer == "sgd":
        return int(SGD_MOMENTUM_BUFFERS * moment * n)
    return 0


#: What each optimizer's step allocates beyond its states, as read in torch 2.11 / transformers 5.17:
#: foreach AdamW `exp_avg_sq_sqrt = torch._foreach_sqrt(device_exp_avg_sqs)` holds a copy of the
#: second moment of a whole (device, dtype) group (optim/adam.py _multi_tensor_adam); fused AdamW
#: none; for-loop AdamW `(exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)` two copies of one
#: parameter's moment; transformers Adafactor upcasts grad and parameter to fp32 and builds
#: `grad**2 + eps` and the factored estimate (four fp32 copies of one parameter, two when it is fp32
#: already); bitsandbytes 8-bit and paged kernels and SGD (weight_decay 0) update in place.
STEP_TEMPORARIES = {
    "adamw": "foreach: one second-moment copy of the whole group",
    "adamw-fused": "none",
    "adamw-forloop": "two moment copies of the largest parameter",
    "adafactor": "four fp32 copies of the largest parameter",
}


def step_temporary_bytes(spec: ModelSpec, setup: TrainSetup, shard: int = 1) -> int:
    """Optimizer-step temporaries on one GPU whose states are `1 / shard` of the whole (see
    STEP_TEMPORARIES). With optimizer_in_backward each parameter is stepped alone: one parameter's
    worth at most."""
    sb = state_bytes(setup.precision, setup.method, setup)
    largest = _largest_trainable(spec, setup)
    if setup.optimizer == "adamw":
        whole = largest if setup.optimizer_in_backward else trainable_params(spec, setup) // shard
        return int(whole * sb.moment)
    if setup.optimizer == "adamw-forloop":
        return int(2 * largest * sb.moment)
    if setup.optimizer == "adafactor":
        return int(largest * (16 if sb.grad < 4 else 8))
    return 0


def _largest_trainable(spec: ModelSpec, setup: TrainSetup) -> int:
    """The largest trainable tensor: the embedding / lm_head or the largest decoder matrix (full), or
    the largest adapter pair's A (LoRA)."""
    if setup.method == "full":
        return max(spec.params.embedding, spec.params.lm_head, largest_linear_params(spec))
    return max(
        (
            setup.lora_rank * max(lin.fan_in, lin.fan_out) * lin.count
            for la, _ in spec.layer_counts
            for lin in layer_linears(spec, la)
            if lin.module in setup.lora_modules
        ),
        default=0,
    )
