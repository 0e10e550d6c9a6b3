"""PyTorch's allocated peak of a training job on one GPU (pure): model states sharded by ZeRO stage /
FSDP, offload, communication buffers, activations, the optimizer step and the load, each a phase whose
largest is the peak; and the memory outside PyTorch (CUDA context, NCCL). `training.device` adds the
caching allocator's cache to make what nvidia-smi shows.
"""

from __future__ import annotations

import functools
from dataclasses import field
from typing import NamedTuple

from gpusize.core import allocator, runtime
from gpusize.core.spec import ModelSpec
from gpusize.dataclass import dataclass, replace
from gpusize.training.activations import (
    activations_bytes,
    autocast_cache_bytes,
    backward_working_bytes,
    checkpoint_bytes_per_token,
    held_activations_bytes,
    last_layer_bytes,
    logits_bytes,
    loss_forward_bytes,
)
from gpusize.training.anatomy import largest_layer_params, largest_linear_params
from gpusize.training.reshard_hook import input_grads_kept_bytes
from gpusize.training.setup import (
    NF4_BYTES_PER_PARAM,
    PAGED_OPTIMIZERS,
    SHARD_STAGE,
    TrainSetup,
    state_bytes,
)
from gpusize.training.states import (
    gradients_bytes,
    master_weights_bytes,
    optimizer_bytes,
    step_temporary_bytes,
    weights_bytes,
)

__all__ = [
    "DEEPSPEED_BUCKET_ELEMENTS",
    "NCCL_CHANNELS",
    "NVLS_BYTES_PER_RANK",
    "TrainMemory",
    "allocated_memory",
    "buffers_bytes",
    "fresh_gradients",
    "gathered_bytes",
    "load_peak_bytes",
    "nccl_bytes",
    "overhead_bytes",
    "peak_terms",
    "per_gpu_setup",
]

#: DeepSpeed ZeRO's reduce bucket (deepspeed/runtime/zero/config.py: reduce_bucket_size = 5e8
#: elements; stage_1_and_2.py allocates `torch.empty(int(self.reduce_bucket_size))` in the gradient
#: dtype with contiguous_gradients, the default), capped at the model's gradients.
DEEPSPEED_BUCKET_ELEMENTS = 500_000_000
#: NCCL channels per communicator by interconnect (NCCL allows up to 64, MAXCHANNELS; NVSwitch systems
#: log 16-32 collective channels, PCIe ones a handful) x 3 connections each (ring send/receive and a tree
#: peer), NCCL_CONNECTION_BYTES each. Estimates, within the 0.3-1.6 GB per communicator reported in
#: NVIDIA/nccl#864 and the vLLM 0.19 logs.
NCCL_CHANNELS = {"nvswitch": 32, "bridge-pairs": 16, "pcie": 8, "infinity-fabric": 16, "unknown": 16}
NCCL_PEERS = 3
#: NVLink SHARP buffers per rank on NVSwitch systems of more than two GPUs (vLLM #9699, 8x H200:
#: `nvlsPerRankSize 301989888`, 288 MiB).
NVLS_BYTES_PER_RANK = 301_989_888


@dataclass(frozen=True)
class TrainMemory:
    """Bytes on one GPU (and in the server's host RAM). weights includes the fp32 master copy and any
    gathered / dequantized working copies; activations includes the logits and, under autocast with
    fp32 weights, their bf16 copies of the forward pass.

    allocated_peak_bytes is PyTorch's `max_memory_allocated`: the largest of the forward/backward
    peak (weights + gradients + optimizer + buffers + activations - overlap), the optimizer step
    (weights + gradients + optimizer + buffers + step temporaries) and the load, plus the cuBLAS
    workspaces. reserved_peak_bytes adds the allocator's cache at its worst (fragmentation_bytes,
    replayed); device_bytes adds the CUDA context and NCCL (overhead_bytes): what nvidia-smi shows,
    and `total_bytes`, the figure a fit is decided on."""

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
    #: Temporaries of optimizer.step() (foreach AdamW's square roots, Adafactor's fp32 copies).
    step_bytes: int = 0
    #: DDP gradient buckets, DeepSpeed reduce buckets.
    buffers_bytes: int = 0
    #: Paged optimizer states in CUDA unified memory (bitsandbytes): outside PyTorch's count and not
    #: part of the fit (they move to host RAM under pressure); nvidia-smi shows them while resident.
    paged_bytes: int = 0
    #: Peak while loading (QLoRA quantizing layer by layer; PEFT's fp32 upcast of embeddings).
    load_peak_bytes: int = 0
    allocated_peak_bytes: int = 0
    fragmentation_bytes: int = 0
    #: Where the allocated peak falls: forward/backward, optimizer step or load (on the candidate in JSON).
    peak_phase: str = field(default="", metadata={"json": False})

    __json_properties__ = ("reserved_peak_bytes", "device_bytes", "total_bytes")

    @property
    def reserved_peak_bytes(self) -> int:
        return self.allocated_peak_bytes + self.fragmentation_bytes

    @property
    def device_bytes(self) -> int:
        return self.reserved_peak_bytes + self.overhead_bytes

    @property
    def total_bytes(self) -> int:
        """The device figure (reserved peak + CUDA context + NCCL)."""
        return self.device_bytes


def gathered_bytes(spec: ModelSpec, setup: TrainSetup, layers: int = 2, tables: int = 1) -> int:
    """Weights ZeRO-3 / FSDP hold unsharded at once: the layer being computed, the next one
    prefetched (FSDP limit_all_gathers keeps two units in flight; BACKWARD_PRE prefetch) and the
    larger of embedding and lm_head (gathered at the ends of the pass), in their stored format (NF4
    decoder layers under QLoRA). `layers=1, tables=2`: at the first decoder layer's backward, the last,
    nothing is left to prefetch but the FSDP1 root, whose embedding and lm_head stay unsharded from its
    forward (torch 2.4.1 fsdp/_runtime_utils.py:490-496, the root is not resharded after forward)."""
    sb = state_bytes(setup.precision, setup.method, setup)
    layer = (
        NF4_BYTES_PER_PARAM
        if setup.method == "qlora"
        else (sb.weight if setup.method == "full" else sb.frozen)
    )
    table = sb.weight if setup.method == "full" else (2 if setup.method == "qlora" else sb.frozen)
    ends = (
        max(spec.params.embedding, spec.params.lm_head)
        if tables == 1
        else spec.params.embedding + spec.params.lm_head
    )
    return int(layers * largest_layer_params(spec) * layer + ends * table)


def nccl_bytes(num_gpus: int, interconnect: str = "nvswitch") -> int:
    """NCCL device buffers of one data-parallel communicator on each GPU (0 on one GPU): channels x
    connections x 9.19 MiB, + NVLS buffers on NVSwitch systems of more than two GPUs."""
    if num_gpus <= 1:
        return 0
    channels = NCCL_CHANNELS.get(interconnect, NCCL_CHANNELS["unknown"])
    nvls = NVLS_BYTES_PER_RANK if interconnect == "nvswitch" and num_gpus > 2 else 0
    return allocator.nccl_buffer_bytes(num_gpus, channels, NCCL_PEERS) + nvls


def overhead_bytes(num_gpus: int, interconnect: str = "nvswitch") -> int:
    """Per-GPU memory outside PyTorch's allocator: the CUDA context as measured with torch 2.11 on
    the H200 (runtime.TORCH_CUDA_CONTEXT_BYTES) and, with 2+ GPUs, the NCCL communicator."""
    return runtime.TORCH_CUDA_CONTEXT_BYTES + nccl_bytes(num_gpus, interconnect)


def fresh_gradients(setup: TrainSetup, num_gpus: int) -> bool:
    """True when gradients are allocated during backward, as activations are freed, and released by
    zero_grad(set_to_none=True): PyTorch on one GPU and FSDP without accumulation. DDP's buckets,
    DeepSpeed's partition buffers and accumulated gradients persist through the next forward."""
    plain = setup.grad_accum == 1 and not setup.optimizer_in_backward
    return plain and (num_gpus == 1 or setup.sharding == "fsdp")


def buffers_bytes(spec: ModelSpec, setup: TrainSetup, num_gpus: int) -> int:
    """Communication buffers kept for the whole run: DDP's gradient buckets, a copy of every gradient
    (torch 2.11 DistributedDataParallel, gradient_as_bucket_view=False: "the saved memory size will be
    equal to the total gradients size" when True); DeepSpeed ZeRO's reduce bucket (5e8 elements in
    the gradient dtype, at most the gradients). FSDP's reduce-scatter and all-gather buffers are in
    `gathered_bytes` and the per-layer gradients."""
    if num_gpus <= 1:
        return 0
    grads = gradients_bytes(spec, setup)
    if setup.sharding == "ddp":
        return grads
    if setup.sharding.startswith("zero"):
        per = state_bytes(setup.precision, setup.method, setup).grad
        return int(min(DEEPSPEED_BUCKET_ELEMENTS * per, grads))
    return 0


def load_peak_bytes(spec: ModelSpec, setup: TrainSetup, weights: int) -> int:
    """While loading. QLoRA (transformers 5 quantizes on the fly with synchronous loading,
    core_model_loading.py; torchtune's FrozenNF4Linear builds each bf16 linear then converts it): the
    loaded model + one bf16 linear being quantized, or + the bf16 original of the largest
    unquantized tensor that PEFT's prepare_model_for_kbit_training upcasts to fp32. Frameworks that
    quantize after loading (`quantize_after_load`) hold every linear in bf16 first. Else the weights."""
    if setup.method != "qlora":
        return weights
    if setup.kernels.quantize_after_load:
        return weights + int(spec.params.linear * (2 - NF4_BYTES_PER_PARAM))
    largest_other = max(spec.params.embedding, spec.params.lm_head)
    upcast = 2 * largest_other if setup.kernels.upcast_unquantized else 0
    return weights + max(2 * largest_linear_params(spec), upcast)


@functools.lru_cache(maxsize=4096)  # replace() costs more than the lookup; asked per candidate
def per_gpu_setup(setup: TrainSetup, num_gpus: int) -> TrainSetup:
    """One GPU needs no sharding engine."""
    return replace(setup, sharding="none") if num_gpus <= 1 and setup.sharding != "none" else setup


@functools.lru_cache(maxsize=4096)  # the fit test and the plan of each GPU type ask it again
def allocated_memory(
    spec: ModelSpec, setup: TrainSetup, num_gpus: int = 1, interconnect: str = "nvswitch"
) -> TrainMemory:
    """train_memory without the allocator replay (fragmentation_bytes 0): what calibrations against
    PyTorch's allocated peak and the searches read, cheaply."""
    n = max(num_gpus, 1)
    return replace(
        peak_terms(spec, per_gpu_setup(setup, n), n), overhead_bytes=overhead_bytes(n, interconnect)
    )


class _StateTerms(NamedTuple):
    """The terms of `peak_terms` that do not depend on the tokens per GPU (bytes per GPU)."""

    weights: int
    master: int
    grads: int
    optim: int
    #: Host RAM per GPU before any offloaded activation checkpoints.
    host: int
    paged: int
    step: int
    buffers: int
    #: The output head's gradient live at the first layer's backward (fresh gradients).
    head: int
    load: int


@functools.lru_cache(maxsize=4096)
def _without_tokens(setup: TrainSetup) -> TrainSetup:
    """`setup` with its sequence length and micro-batch fixed: the key of `_state_terms`, which
    read neither (the searches vary them; accumulation stays, fresh_gradients reads it)."""
    return replace(setup, seq_tokens=1, batch=1)


@functools.lru_cache(maxsize=4096)
def _state_terms(spec: ModelSpec, setup: TrainSetup, n: int) -> _StateTerms:
    """Model states, buffers, step temporaries and the load: the terms no token count moves."""
    stage = SHARD_STAGE[setup.sharding] if n > 1 else 0
    sb = state_bytes(setup.precision, setup.method, setup)
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
    paged = 0
    if setup.optimizer in PAGED_OPTIMIZERS and setup.offload == "none":
        paged, optim = optim, 0
    step = 0 if setup.offload != "none" else step_temporary_bytes(spec, setup, n if stage >= 1 else 1)
    head = int(max(spec.params.lm_head, spec.params.embedding * spec.tie_word_embeddings) * sb.grad)
    head = min(head if setup.method == "full" else 0, grads)
    load = load_peak_bytes(spec, setup, weights + master)
    return _StateTerms(
        weights, master, grads, optim, host, paged, step, buffers_bytes(spec, setup, n), head, load
    )


@functools.lru_cache(maxsize=4096)
def peak_terms(spec: ModelSpec, setup: TrainSetup, n: int) -> TrainMemory:
    """Every term of train_memory but the allocator cache and the memory outside PyTorch."""
    t = _state_terms(spec, _without_tokens(setup), n)
    weights, master, grads, optim, host, step, buffers = (
        t.weights, t.master, t.grads, t.optim, t.host, t.step, t.buffers
    )  # fmt: skip
    if setup.grad_ckpt and setup.kernels.offload_checkpoints:
        host += checkpoint_bytes_per_token(spec, setup) * setup.tokens_per_gpu
    acts = activations_bytes(spec, setup)
    held = held_activations_bytes(spec, setup)
    # FSDP1 + reentrant checkpoints + LoRA: every checkpoint and layer-input gradient is kept to the
    # end of backward (training.reshard_hook), on top of the first layer's working set
    kept = input_grads_kept_bytes(spec, setup, n)
    if kept:  # that moment is the first layer's backward: one layer and the root gathered
        whole = weights_bytes(spec, setup)
        kept += min(gathered_bytes(spec, setup, 1, 2), whole) - min(gathered_bytes(spec, setup), whole)
        acts = max(acts, held + kept + backward_working_bytes(spec, setup))
    if fresh_gradients(setup, n):
        # Gradients appear in backward as activations go: at the loss no gradient exists yet, at the
        # first layer's backward the output head's gradient, at the end all of them with one layer's
        # activations and workspace left (the peak is the largest moment, not the sum).
        loss = max(
            loss_forward_bytes(spec, setup) + autocast_cache_bytes(spec, setup), logits_bytes(spec, setup)
        )
        live = max(
            held + loss,
            held + kept + backward_working_bytes(spec, setup) + t.head,
            grads + last_layer_bytes(spec, setup) + (held + kept if kept else 0),
        )
    else:
        live = grads + acts
    overlap = max(grads + acts - live, 0)
    static = weights + master + optim + buffers
    phases = {
        "forward/backward": static + grads + acts - overlap,
        "optimizer step": static + grads + step,
        "load": t.load,
    }
    phase = max(phases, key=lambda k: phases[k])
    return TrainMemory(
        weights_bytes=weights + master,
        master_weights_bytes=master,
        gradients_bytes=grads,
        optimizer_bytes=optim,
        activations_bytes=acts,
        logits_bytes=logits_bytes(spec, setup),
        overhead_bytes=0,
        host_ram_bytes=host * n,
        overlap_bytes=overlap,
        step_bytes=step,
        buffers_bytes=buffers,
        paged_bytes=t.paged,
        load_peak_bytes=phases["load"],
        allocated_peak_bytes=phases[phase] + allocator.cublas_workspace_bytes("Hopper"),
        peak_phase=phase,
    )
