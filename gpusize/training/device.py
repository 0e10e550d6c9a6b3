"""What the device shows for a training job (pure): PyTorch's allocated peak (`training.peak`), the
caching allocator's reserved peak from a replay of two training steps (`training.trace` through
`core.allocator`), near a full GPU the allocator's release-and-retry, and the searches for the longest
sequence and the largest micro-batch that fit.
"""

from __future__ import annotations

import functools
from typing import TypeVar

from gpusize.core import allocator
from gpusize.core.spec import ModelSpec
from gpusize.dataclass import replace
from gpusize.training.activations import (
    autocast_cache_bytes,
    backward_working_bytes,
    checkpoint_bytes_per_token,
    ffn_activation_bytes,
    held_activations_bytes,
    layer_activation_bytes_per_token,
    logits_bytes,
    loss_forward_bytes,
)
from gpusize.training.peak import (
    TrainMemory,
    allocated_memory,
    fresh_gradients,
    gathered_bytes,
    overhead_bytes,
    peak_terms,
    per_gpu_setup,
)
from gpusize.training.quantized import linear_output_bytes
from gpusize.training.setup import SHARD_STAGE, TrainSetup
from gpusize.training.trace import StepSizes, train_trace

__all__ = ["fits_within", "fragmentation_bytes", "largest_batch", "largest_seq", "train_memory"]


#: Most capacity-limited replays kept (each a few hundred bytes); the cache is emptied past it.
_MAX_TIGHT = 4096
#: What the caches below are keyed by: a trace (model, step sizes, allocator mode).
_TraceKey = tuple[ModelSpec, StepSizes, bool]
_Kept = TypeVar("_Kept")
#: Capacity-limited replays per (model, step, allocator mode): each holds for a range of capacities
#: (AllocatorPeaks.capacity_low/high), so GPU types whose limits fall in one range share a replay.
_TIGHT: dict[_TraceKey, list[allocator.AllocatorPeaks]] = {}
#: Unlimited replays' peaks per (model, step, allocator mode): a Replayer's, or those of a
#: capacity-limited replay that never met its capacity (`fits_within`: the unlimited path, so the
#: same peaks); emptied past _MAX_TIGHT entries.
_FREE: dict[_TraceKey, allocator.AllocatorPeaks] = {}


@functools.lru_cache(maxsize=2048)
def _sizes(spec: ModelSpec, setup: TrainSetup, num_gpus: int) -> StepSizes:
    return _step_sizes(spec, setup, num_gpus)


#: Replayers kept: each holds its trace and a snapshot of the allocator per SNAPSHOT_BYTES of growth (MBs
#: for a long sequence), so a process that plans many jobs (a test run, `gpusize batch`, the library)
#: keeps at most this many; one `train` command replays about 26 (bench: 32 -> 160 MB peak RSS for
#: `train Qwen3-8B --seq 128k`, 2.7 s; 256 let a test process grow to 7 GB).
_REPLAYERS_KEPT = 32


@functools.lru_cache(maxsize=_REPLAYERS_KEPT)
def _replayer(spec: ModelSpec, sizes: StepSizes, expandable: bool) -> allocator.Replayer:
    return allocator.Replayer(train_trace(spec, sizes), expandable_segments=expandable)


def _replay(
    spec: ModelSpec, setup: TrainSetup, num_gpus: int, capacity: int | None = None
) -> allocator.AllocatorPeaks:
    """The replay of two steps, unlimited or with `capacity`; a capacity-limited one is replayed only
    when no earlier replay of the same trace took the same path (the result is then identical), and
    then from the unlimited replay's last snapshot before its path can differ (`allocator.Replayer`)."""
    sizes, expandable = _sizes(spec, setup, num_gpus), setup.expandable_segments
    key = (spec, sizes, expandable)
    if capacity is None:
        free = _FREE.get(key)
        return free if free is not None else _keep(_FREE, key, _replayer(*key).free)
    for peaks in _TIGHT.get(key, ()):
        if _holds(peaks, capacity, capacity):
            return peaks
    peaks = _replayer(*key).at(capacity)  # from the unlimited replay's snapshots
    _remember_tight(key, peaks)
    return peaks


def _keep(cache: dict[_TraceKey, _Kept], key: _TraceKey, value: _Kept) -> _Kept:
    """`value`, kept under `key` in one of this module's caches, emptied first past _MAX_TIGHT."""
    if len(cache) > _MAX_TIGHT:
        cache.clear()
    cache[key] = value
    return value


def _remember_tight(key: _TraceKey, peaks: allocator.AllocatorPeaks) -> None:
    """A capacity-limited replay kept beside the others of its trace (each holds for its range)."""
    _keep(_TIGHT, key, [*_TIGHT.get(key, ()), peaks])


#: `allocator.allocated_bounds` of each trace `fits_within` has tested (emptied past _MAX_TIGHT).
_BOUNDS: dict[_TraceKey, tuple[int, int]] = {}


def _bounds(key: _TraceKey, trace: allocator.Trace | None) -> tuple[int, int]:
    return _keep(_BOUNDS, key, allocator.allocated_bounds(trace or train_trace(key[0], key[1]), key[2]))


def _holds(peaks: allocator.AllocatorPeaks, low: int, high: int) -> bool:
    """Whether a capacity-limited replay takes its path at every capacity from low to high."""
    return peaks.capacity_low <= low and (peaks.capacity_high is None or high < peaks.capacity_high)


def fits_within(
    spec: ModelSpec, setup: TrainSetup, num_gpus: int, interconnect: str, visible_bytes: int
) -> bool:
    """`train_memory(..., visible_bytes).device_bytes <= visible_bytes`, most often without the
    unlimited replay: the fit test of a job no replay has seen yet (most suggestions' candidates).

    train_memory's verdict is that of one capacity-limited replay, at the capacity C = room + the
    unlimited replay's allocated peak (room: the GPU less the context and the model's allocated
    peak): a replay that never meets C takes the unlimited path (its reserved peak <= C: fits),
    else it is train_memory's tight replay (fits unless out of memory or its cache is above room).
    The allocated peak lies within `allocator.allocated_bounds`, and a replay at the lower bound's
    capacity states the range of capacities that take its path: when both bounds' capacities are in
    it, that replay is the one at C, and it stops where it runs out of memory. Else (or once the
    unlimited replay is known) train_memory decides."""
    n = max(num_gpus, 1)
    job = per_gpu_setup(setup, n)
    key = (spec, _sizes(spec, job, n), job.expandable_segments)
    if key not in _FREE:
        m = allocated_memory(spec, job, n, interconnect)
        room = visible_bytes - m.overhead_bytes - m.allocated_peak_bytes
        if room < 0:  # the cache only adds to the allocated peak
            return False
        trace = None if key in _BOUNDS else train_trace(spec, key[1])
        low, high = _BOUNDS.get(key) or _bounds(key, trace)
        tight = next((p for p in _TIGHT.get(key, ()) if _holds(p, room + low, room + high)), None)
        if tight is None:
            trace = trace or train_trace(spec, key[1])
            tight = allocator.replay(trace, job.expandable_segments, room + low)
            if not _holds(tight, room + low, room + high):
                return (
                    train_memory(spec, setup, num_gpus, interconnect, visible_bytes).device_bytes
                    <= visible_bytes
                )
            _remember_tight(key, tight)  # holds for its whole range, as _replay's
        if tight.capacity_high is None:  # never met the capacity: the unlimited replay's path
            _keep(_FREE, key, allocator.AllocatorPeaks(tight.allocated_bytes, tight.reserved_bytes))
            return True
        return not tight.out_of_memory and tight.fragmentation_bytes <= room
    return train_memory(spec, setup, num_gpus, interconnect, visible_bytes).device_bytes <= visible_bytes


def fragmentation_bytes(
    spec: ModelSpec, setup: TrainSetup, num_gpus: int, capacity: int | None = None
) -> int:
    """Reserved minus allocated peak of two training steps replayed through the caching allocator
    (default or expandable segments), with unlimited memory or with `capacity` bytes for the
    allocator (measured against the memory model's allocated peak). -1 when the replay runs out of
    memory even after the allocator frees its cache."""
    free = _replay(spec, setup, num_gpus)
    if capacity is None:
        return free.fragmentation_bytes
    # the trace's own allocated peak differs a little from the model's: shift the capacity by it
    model = peak_terms(spec, setup, num_gpus).allocated_peak_bytes
    tight = _replay(spec, setup, num_gpus, capacity - model + free.allocated_bytes)
    return -1 if tight.out_of_memory else tight.fragmentation_bytes


def train_memory(
    spec: ModelSpec,
    setup: TrainSetup,
    num_gpus: int = 1,
    interconnect: str = "nvswitch",
    visible_bytes: int | None = None,
) -> TrainMemory:
    """Peak memory of one GPU among `num_gpus` data-parallel ranks (num_gpus=1: the whole job).

    Sharding divides master + optimizer (stage 1), gradients (2) and weights (3) by the rank count,
    keeping one layer's full gradients (the reduce bucket) and the gathered parameters
    (gathered_bytes) unsharded. Offload moves master + optimizer (+ the gradient shard from stage 2,
    ZeRO-Offload) or also the weight and gradient shards (ZeRO-Infinity, FSDP CPUOffload) to host RAM.

    With `visible_bytes` (the GPU's CUDA-visible memory), a job whose cache would outgrow the GPU is
    replayed again with that limit: PyTorch frees its cached segments before it gives up, so the job
    may still run, with a smaller reserved peak.
    """
    n = max(num_gpus, 1)
    setup = per_gpu_setup(setup, n)
    m = allocated_memory(spec, setup, n, interconnect)
    m = replace(m, fragmentation_bytes=fragmentation_bytes(spec, setup, n))
    # a tight replay's cache is >= 0, so it cannot bring a job whose allocated peak + context is
    # already above the GPU under it: replayed only when it can (the same answer, without the replay)
    if (
        visible_bytes is not None
        and m.device_bytes > visible_bytes >= m.allocated_peak_bytes + m.overhead_bytes
    ):
        tight = fragmentation_bytes(spec, setup, n, visible_bytes - m.overhead_bytes)
        if tight >= 0 and m.allocated_peak_bytes + tight + m.overhead_bytes <= visible_bytes:
            m = replace(m, fragmentation_bytes=tight)
    return m


def _routed_tokens(spec: ModelSpec, tokens: int) -> int:
    """Rows of one MLP tensor: the micro-batch's tokens, or for a MoE model one expert's share of the
    routed tokens (top-k / num_experts of them; the experts run one after another)."""
    if spec.moe is None:
        return tokens
    return max(1, tokens * spec.moe.num_experts_per_tok // spec.moe.num_experts)


def _step_sizes(spec: ModelSpec, setup: TrainSetup, n: int) -> StepSizes:
    """The tensors of one GPU's training step, from the memory model's terms."""
    m = peak_terms(spec, setup, n)
    stage = SHARD_STAGE[setup.sharding] if n > 1 else 0
    tokens = setup.tokens_per_gpu
    biggest = max(set(spec.layers), key=lambda la: layer_activation_bytes_per_token(spec, la, setup))
    layer = layer_activation_bytes_per_token(spec, biggest, setup)
    wide = int(ffn_activation_bytes(spec, biggest, setup))
    ckpt = checkpoint_bytes_per_token(spec, setup) // max(len(spec.layers), 1) * tokens
    offloaded = setup.kernels.offload_checkpoints
    gathered_layer = gathered_bytes(spec, setup) // 3 if stage >= 3 or setup.offload == "params" else 0
    vocab = tokens * spec.vocab_size
    if setup.kernels.loss_forward_bytes_per_element is not None:
        fwd = loss_forward_bytes(spec, setup) // max(vocab, 1)
        low = 2 if fwd >= 10 else 4
        loss_forward: tuple[int, ...] = (vocab * low, vocab * 4 if fwd >= 10 else 0, vocab * 4)
        loss_backward: tuple[int, ...] = (vocab * 4, vocab * 4, vocab * 2 if low == 2 else 0)
    else:  # the loss peak as the tensors it is made of: the logits, then fp32 ones (4 B per element)
        total = logits_bytes(spec, setup)
        first = min(total, vocab * 2)
        loss_forward = (first, *([vocab * 4] * ((total - first) // max(vocab * 4, 1))))
        loss_backward = ()
    head = held_activations_bytes(
        spec, replace(setup, grad_ckpt=True, kernels=replace(setup.kernels, offload_checkpoints=True))
    )
    return StepSizes(
        weights=m.weights_bytes
        - m.master_weights_bytes
        - (gathered_layer and min(gathered_bytes(spec, setup), m.weights_bytes)),
        master=m.master_weights_bytes,
        gathered_layer=gathered_layer,
        grads=m.gradients_bytes,
        fresh_grads=fresh_gradients(setup, n),
        states=m.optimizer_bytes,
        step_temp=m.step_bytes,
        buffers=m.buffers_bytes,
        ddp_buckets=setup.sharding == "ddp" and n > 1,
        autocast_cache=autocast_cache_bytes(spec, setup),
        layer_saved=layer * tokens,
        hidden_piece=int(spec.hidden_size * tokens * max(2, linear_output_bytes(setup))),
        wide_piece=int(
            max(spec.intermediate_size, spec.hidden_size)
            * _routed_tokens(spec, tokens)
            * max(2, linear_output_bytes(setup))
        ),
        layer_wide=int(wide * tokens),
        checkpoint=0 if not setup.grad_ckpt or offloaded else ckpt,
        working=backward_working_bytes(spec, setup) - (setup.grad_ckpt * layer * tokens),
        head=head,
        loss_forward=loss_forward,
        loss_backward=loss_backward,
        trainable_full=setup.method == "full",
    )


def _device(spec: ModelSpec, setup: TrainSetup, n: int, interconnect: str, anchor: TrainSetup) -> int:
    """The device figure for searches: the allocated peak exactly, the allocator cache replayed at the
    asked-for job (`anchor`) and scaled with the tokens per GPU (the cache is left by transients that
    grow with them: activations and logits). Exact at the anchor, monotone in tokens."""
    alloc = peak_terms(spec, setup, n).allocated_peak_bytes
    frag = fragmentation_bytes(spec, anchor, n) * setup.tokens_per_gpu // max(anchor.tokens_per_gpu, 1)
    return alloc + max(frag, 0) + overhead_bytes(n, interconnect)


@functools.lru_cache(maxsize=1024)
def _probes(spec: ModelSpec, job: TrainSetup, n: int, interconnect: str, lever: str) -> dict[int, int]:
    """The figures a search has probed for this job, by the lever's value (`lever`: "seq device", "seq
    allocated" or "batch device"): the searches of every GPU type at one count probe the same
    function of it (only the budget differs), their first probes alike, so each is computed once."""
    return {}


def largest_seq(
    spec: ModelSpec,
    setup: TrainSetup,
    num_gpus: int,
    budget_bytes: int,
    limit: int,
    figure: str = "device",
    interconnect: str = "nvswitch",
) -> int:
    """The longest sequence (tokens, at this batch) whose per-GPU figure fits in budget_bytes, up to
    `limit`; 0 when not even one token fits. figure "device": what nvidia-smi shows (the allocator
    cache scaled from the replay of the asked-for job, see _device); "allocated": PyTorch's allocated
    peak + the memory outside PyTorch. The allocated peak never falls with length; the cache nearly so."""
    n = max(num_gpus, 1)
    job = per_gpu_setup(setup, n)
    probed = _probes(spec, job, n, interconnect, f"seq {figure}")

    def need(seq: int) -> int:
        got = probed.get(seq)
        if got is None:
            trial = replace(job, seq_tokens=seq)
            if figure == "allocated":
                got = peak_terms(spec, trial, n).allocated_peak_bytes + overhead_bytes(n, interconnect)
            else:
                got = _device(spec, trial, n, interconnect, job)
            probed[seq] = got
        return got

    lo, hi = 0, limit
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if need(mid) <= budget_bytes else (lo, mid - 1)
    return lo


def largest_batch(
    spec: ModelSpec, setup: TrainSetup, num_gpus: int, budget_bytes: int, interconnect: str = "nvswitch"
) -> int:
    """The largest micro-batch (at this sequence length) whose device figure fits, up to 4096; 0 when
    one sequence does not."""
    n = max(num_gpus, 1)
    job = per_gpu_setup(setup, n)
    probed = _probes(spec, job, n, interconnect, "batch device")
    lo, hi = 0, 4096
    while lo < hi:
        mid = (lo + hi + 1) // 2
        need = probed.get(mid)
        if need is None:
            need = probed[mid] = _device(spec, replace(job, batch=mid), n, interconnect, job)
        lo, hi = (mid, hi) if need <= budget_bytes else (lo, mid - 1)
    return lo
