"""Attention and a Mamba-2 mixer side by side in one layer (Falcon-H1: FalconH1DecoderLayer runs
`self_attn` and `mamba` on the same input and adds both outputs).

Each half answers as its own kind (`core.kinds.attention`, `core.kinds.mamba2`): the layer's weights
are both mixers' weights, its KV per token the attention half's, its per-sequence state the Mamba
half's, and TP must split both. vLLM registers one Attention layer and one MambaMixer2 layer per
decoder layer (vllm/model_executor/models/falcon_h1.py FalconH1ParallelHybrid), so the hybrid KV-cache
manager sees as many attention layers as recurrent ones.
"""

from __future__ import annotations

from gpusize.core.kinds import attention, mamba2
from gpusize.core.spec import LayerSpec, Mixer, ModelSpec, ParamCounts

__all__ = ["KIND"]


class _AttentionMamba:
    #: A class constant: a kind is a stateless singleton (no dataclass machinery at start-up).
    per_token_kv = True
    attention_projections = True
    #: The single-mixer kinds this layer runs side by side (`kinds.mixer_parts`).
    parts: tuple[Mixer, ...] = ("attention", "mamba")

    def params(self, spec: ModelSpec, layer: LayerSpec) -> ParamCounts:
        return attention.KIND.params(spec, layer) + mamba2.KIND.params(spec, layer)

    def kv_width(self, spec: ModelSpec, layer: LayerSpec, kv_heads: int) -> int:
        return attention.KIND.kv_width(spec, layer, kv_heads)

    def state_elements(self, spec: ModelSpec, layer: LayerSpec) -> int:
        return mamba2.KIND.state_elements(spec, layer)

    def tp_problem(self, spec: ModelSpec, layer: LayerSpec, tp: int) -> str | None:
        return attention.KIND.tp_problem(spec, layer, tp) or mamba2.KIND.tp_problem(spec, layer, tp)

    def state_bytes(
        self, spec: ModelSpec, layer: LayerSpec, tp: int, conv_bytes: float, ssm_bytes: float
    ) -> int:
        return mamba2.KIND.state_bytes(spec, layer, tp, conv_bytes, ssm_bytes)


KIND = _AttentionMamba()
