"""What vLLM reserves under its own flags, one term each (core/reserves.py); the pool takes them
before the KV cache. A new reserve: its function in a module of this package and one entry here."""

from __future__ import annotations

from gpusize.core.engines.vllm.deepseek_v4 import window_state
from gpusize.core.engines.vllm.lora import lora_buffers, lora_slots
from gpusize.core.engines.vllm.multimodal import encoder_profile, vision_replica
from gpusize.core.engines.vllm.speculative import draft_buffers, draft_weights
from gpusize.core.engines.vllm.value_slots import value_slots
from gpusize.core.reserves import ReserveTerm

__all__ = ["RESERVES"]

#: vLLM's reserve terms, in the order they are shown.
RESERVES: tuple[ReserveTerm, ...] = (
    lora_slots,
    lora_buffers,
    encoder_profile,
    vision_replica,
    draft_weights,
    draft_buffers,
    window_state,
    value_slots,
)
