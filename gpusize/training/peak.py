"""The per-GPU peak of a training job (pure): model states sharded by ZeRO stage / FSDP, offload,
activations, the CUDA context, and the longest sequence that fits.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from gpusize.core import runtime
from gpusize.core.spec import ModelSpec
from gpusize.training.activations import (
    activations_bytes,
    checkpoint_bytes_per_token,
    last_layer_bytes,
    logits_bytes,
)
from gpusize.training.anatomy import largest_layer_params, largest_linear_params
from gpusize.training.setup import NF4_BYTES_PER_PARAM, SHARD_STAGE, TrainSetup, state_bytes
from gpusize.training.states import gradients_bytes, master_weights_bytes, optimizer_bytes, weights_bytes

__all__ = [
    "TrainMemory",
    "fresh_gradients",
    "gathered_bytes",
    "largest_seq",
    "overhead_bytes",
    "train_memory",
]

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

    __json_properties__ = ("total_bytes",)

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


def gathered_bytes(spec: ModelSpec, setup: TrainSetup) -> int:
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
    return int(
        2 * largest_layer_params(spec) * layer + max(spec.params.embedding, spec.params.lm_head) * table
    )


def overhead_bytes(num_gpus: int) -> int:
    """Per-GPU memory outside PyTorch: the CUDA context, and with 2+ GPUs the NCCL communicators
    (runtime.CUDA_CONTEXT_TP1 / CUDA_CONTEXT_TPN, measured in the vLLM 0.19 H100 logs)."""
    return runtime.cuda_context_bytes(num_gpus)


def fresh_gradients(setup: TrainSetup, num_gpus: int) -> bool:
    """True when gradients are allocated during backward, as activations are freed, and released by
    zero_grad(set_to_none=True): PyTorch on one GPU and FSDP without accumulation. DDP's buckets,
    DeepSpeed's partition buffers and accumulated gradients persist through the next forward."""
    plain = setup.grad_accum == 1 and not setup.optimizer_in_backward
    return plain and (num_gpus == 1 or setup.sharding == "fsdp")


def train_memory(spec: ModelSpec, setup: TrainSetup, num_gpus: int = 1) -> TrainMemory:
    """Peak memory of one GPU among `num_gpus` data-parallel ranks (num_gpus=1: the whole job).

    Sharding divides master + optimizer (stage 1), gradients (2) and weights (3) by the rank count,
    keeping one layer's full gradients (the reduce bucket) and the gathered parameters
    (gathered_bytes) unsharded. Offload moves master + optimizer (+ the gradient shard from stage 2,
    ZeRO-Offload) or also the weight and gradient shards (ZeRO-Infinity, FSDP CPUOffload) to host RAM.
    """
    n = max(num_gpus, 1)
    stage = SHARD_STAGE[setup.sharding] if n > 1 else 0
    sb = state_bytes(setup.precision, setup.method)
    weights, grads = weights_bytes(spec, setup), gradients_bytes(spec, setup)
    master, optim = master_weights_bytes(spec, setup), optimizer_bytes(spec, setup)
    layer_grads = int(grads * largest_layer_params(spec) / max(spec.params.linear, 1))
    gathered = min(gathered_bytes(spec, setup), weights)
    if stage >= 1:
        master, optim = master // n, optim // n
    if stage >= 2:
        grads = grads // n + min(layer_grads, grads - grads // n)
    if stage >= 3:
        weights = weights // n + min(gathered, weights - weights // n)
    if setup.optimizer_in_backward:
        grads = min(
            grads, int(max(spec.params.embedding, spec.params.lm_head, largest_linear_params(spec)) * sb.grad)
        )
    host = 0
    if setup.offload != "none":
        host, master, optim = master + optim, 0, 0
    if setup.offload == "optimizer" and stage >= 2:
        host, grads = host + grads - layer_grads, min(grads, layer_grads)
    if setup.offload == "params":
        host += (weights_bytes(spec, setup) + gradients_bytes(spec, setup)) // n
        weights, grads = gathered, min(grads, layer_grads)
    if setup.grad_ckpt and setup.kernels.offload_checkpoints:
        host += checkpoint_bytes_per_token(spec, setup) * setup.tokens_per_gpu
    acts = activations_bytes(spec, setup)
    overlap = 0
    if fresh_gradients(setup, n):
        # Backward starts with all activations and the lm_head's gradient, ends with all gradients and
        # the first layer's activations and workspace: the peak is the larger end, not the sum.
        head = int(max(spec.params.lm_head, spec.params.embedding * spec.tie_word_embeddings) * sb.grad)
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


def largest_seq(spec: ModelSpec, setup: TrainSetup, num_gpus: int, budget_bytes: int, limit: int) -> int:
    """The longest sequence (tokens, at this batch) whose per-GPU peak fits in budget_bytes, up to
    `limit`; 0 when not even one token fits. Memory never falls with length, so bisection is exact."""
    lo, hi = 0, limit
    while lo < hi:
        mid = (lo + hi + 1) // 2
        fits = train_memory(spec, replace(setup, seq_tokens=mid), num_gpus).total_bytes <= budget_bytes
        lo, hi = (mid, hi) if fits else (lo, mid - 1)
    return lo
