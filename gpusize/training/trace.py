"""Two training steps as the caching allocator sees them (pure): the tensors of one GPU's forward,
loss, backward and optimizer step in the order PyTorch creates and drops them, sized by the memory
model (`training.peak`), for the replay in `core.allocator` that turns the allocated peak into the
reserved one.

Followed (torch 2.11, transformers 5.17): weights and master copies load first, layer by layer;
optimizer states are created lazily in the first `step()` (`torch.zeros_like` per parameter) and the
step's temporaries (foreach AdamW's square roots) come right after; `zero_grad(set_to_none=True)`
frees the gradients; in the forward each layer leaves its checkpoint (or its saved tensors) and drops
its transients; the loss allocates the logits, their fp32 copy and the log-softmax, then frees the
copy, autocast's weight cache and the logits; the backward allocates the fp32 gradients of the
log-softmax, then per layer (last first) recomputes it, works, and creates its weight gradients.
Two steps, because the second forward meets the cache that the first step's states and gradients
split.
"""

from __future__ import annotations

import functools
import operator
from dataclasses import fields

from gpusize.core.allocator import Trace
from gpusize.core.spec import ModelSpec
from gpusize.dataclass import dataclass, kept_hash
from gpusize.training.anatomy import layer_linears

__all__ = ["StepSizes", "train_trace"]

#: DDP's gradient buckets (torch.nn.parallel.DistributedDataParallel bucket_cap_mb=25).
DDP_BUCKET_BYTES = 25 * 1024 * 1024


@dataclass(frozen=True)
class StepSizes:
    """Byte sizes of one GPU's tensors, from the memory model."""

    weights: int
    master: int
    #: Weights gathered per layer and freed after it (ZeRO-3 / FSDP), not part of `weights`.
    gathered_layer: int
    grads: int
    #: Gradients created in backward and freed by zero_grad (else they persist, as DDP buckets do).
    fresh_grads: bool
    states: int
    step_temp: int
    buffers: int
    ddp_buckets: bool
    autocast_cache: int
    #: Per layer: what it keeps for backward (no checkpointing) or recomputes (checkpointing), as
    #: hidden-wide and intermediate-wide tensors.
    layer_saved: int
    hidden_piece: int
    wide_piece: int
    #: The part of layer_saved in wide (MLP) tensors.
    layer_wide: int
    checkpoint: int
    working: int
    head: int
    #: The loss: tensors allocated in the forward, in order; how many of the first survive into
    #: backward; tensors allocated in backward.
    loss_forward: tuple[int, ...]
    loss_backward: tuple[int, ...]
    trainable_full: bool

    def __hash__(self) -> int:
        """The compared fields' hash, kept (`kept_hash`): the replays' caches are keyed by it."""
        known: int | None = self.__dict__.get("_hash")  # kept: no call
        return kept_hash(self, _SIZES_VALUES) if known is None else known


#: The fields StepSizes' equality compares, which its kept hash covers.
_SIZES_VALUES = operator.attrgetter(*(f.name for f in fields(StepSizes) if f.compare))


def _pieces(spec: ModelSpec, total: int, full: bool) -> list[int]:
    """`total` split as the model's tensors: embedding, each layer's linears, lm_head (full), or one
    adapter block per layer (LoRA)."""
    if total <= 0:
        return []
    if not full:
        per = total // max(len(spec.layers), 1)
        return [per] * len(spec.layers)
    raw, whole = _raw_pieces(spec)
    scale = total / whole
    return [int(r * scale) for r in raw if r > 0]


@functools.lru_cache(maxsize=64)
def _raw_pieces(spec: ModelSpec) -> tuple[tuple[int, ...], int]:
    """The model's tensors in parameters (embedding, each layer's linears, lm_head) and their sum (at
    least 1): `_pieces` scales them, many times per trace."""
    raw = [spec.params.embedding]
    for layer in spec.layers:
        raw += [lin.fan_in * lin.fan_out * lin.count for lin in layer_linears(spec, layer)]
    raw.append(spec.params.lm_head)
    return tuple(raw), max(sum(raw), 1)


def _chunks(total: int, count: int) -> list[int]:
    return [total // count] * count if total > 0 else []


def _tensors(s: StepSizes, total: int) -> list[int]:
    """`total` bytes of a layer's activations as its tensors: the MLP share in intermediate-wide
    pieces, the rest hidden-wide, in the order a layer makes them (attention first)."""
    if total <= 0:
        return []
    wide = s.layer_wide * total // max(s.layer_saved, 1)
    count = wide // max(s.wide_piece, 1)
    narrow = total - count * s.wide_piece
    out = _chunks(narrow, max(1, round(narrow / max(s.hidden_piece, 1))))
    return out + [s.wide_piece] * count


def _head(spec: ModelSpec) -> int:
    """Where the output head's gradient sits in `_pieces`: the tied embedding (first) or the lm_head
    (last); it is made first in backward."""
    return 0 if not spec.params.lm_head else -1


def train_trace(spec: ModelSpec, s: StepSizes, steps: int = 2) -> Trace:
    """Load, then `steps` training steps of one micro-batch each."""
    t = Trace()
    t.allocs(_pieces(spec, s.weights, True) + _pieces(spec, s.master, True))
    if s.ddp_buckets:
        t.allocs(_chunks(s.buffers, max(1, s.buffers // DDP_BUCKET_BYTES)))
    else:
        t.alloc(s.buffers)
    grads = _pieces(spec, s.grads, s.trainable_full)
    held_grads = [] if s.fresh_grads else t.allocs(grads)
    have_states = False
    layers = len(spec.layers)
    saved_tensors, working_tensors = _tensors(s, s.layer_saved), _tensors(s, s.working)  # every layer's
    for _ in range(steps):
        copies = _pieces(spec, s.autocast_cache, True)
        head_copy = copies.pop(_head(spec)) if copies else 0
        per_copy = max(1, len(copies) // max(layers, 1))
        cache: list[int] = []
        kept: list[list[int]] = []
        for i in range(layers):
            gathered = t.alloc(s.gathered_layer)
            cache += t.allocs(copies[i * per_copy : (i + 1) * per_copy])
            if s.checkpoint:
                kept.append([t.alloc(s.checkpoint)])
                t.frees(t.allocs(saved_tensors))
            else:
                kept.append(t.allocs(saved_tensors))
            t.free(gathered)
        head = t.alloc(s.head)
        cache.append(t.alloc(head_copy))
        loss = t.allocs(s.loss_forward)
        if len(loss) == 3:  # logits, their fp32 copy (dies after log_softmax), the log-softmax
            t.free(loss[1])
        t.frees(cache)  # autocast's weight cache dies when the autocast context exits
        if loss:  # the model output goes before backward
            t.free(loss[0])
        new_grads = [] if not s.fresh_grads else list(grads)
        head_grads: list[int] = []
        if len(loss) == 3 and len(s.loss_backward) >= 2:
            grad_out = t.alloc(s.loss_backward[0])
            grad_in = t.alloc(s.loss_backward[1])
            t.free(loss[2])
            t.free(grad_out)
            low = t.alloc(s.loss_backward[2]) if len(s.loss_backward) > 2 else 0
            t.free(grad_in)
            if new_grads and s.trainable_full:
                head_grads.append(t.alloc(new_grads.pop(_head(spec))))
            t.free(low)
        else:  # the logits' gradients reuse what the loss forward leaves
            t.frees(loss[1:])
            for size in s.loss_backward:
                t.temp(size)
            if new_grads and s.trainable_full:
                head_grads.append(t.alloc(new_grads.pop(_head(spec))))
        t.free(head)
        per_layer = max(1, len(new_grads) // max(layers, 1))
        made: list[int] = list(head_grads)
        for _layer in range(layers):
            gathered = t.alloc(s.gathered_layer)
            saved = kept.pop()
            recomputed = t.allocs(saved_tensors) if s.checkpoint else []
            work = t.allocs(working_tensors)
            made += t.allocs(new_grads[-per_layer:])
            del new_grads[-per_layer:]
            t.frees(work + recomputed + saved)
            t.free(gathered)
        made += t.allocs(new_grads)
        if not have_states:  # exp_avg, exp_avg_sq
            t.allocs([x for size in _pieces(spec, s.states // 2, s.trainable_full) for x in (size, size)])
            have_states = True
        temps = t.allocs(_pieces(spec, s.step_temp, s.trainable_full))
        t.frees(temps + made)
    del held_grads
    return t
