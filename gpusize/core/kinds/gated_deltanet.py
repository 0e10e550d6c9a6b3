"""Gated DeltaNet linear attention (Qwen3-Next): a constant recurrent state per sequence, no KV.

Parameters: Qwen3NextGatedDeltaNet (fused in_proj_qkvz and in_proj_ba, the causal conv1d over q, k
and v channels, dt_bias and A_log per value head, the gated RMSNorm over one value head, out_proj).
State per sequence: value heads x key_dim x value_dim recurrent state + the conv window of
(2 x key_dim + value_dim) channels x (kernel - 1) (vLLM MambaSpec for GatedDeltaNetAttention,
vllm/model_executor/layers/mamba/mamba_utils.py gated_delta_net_state_shape). vLLM shards the heads
(and so the state) over TP.
"""

from __future__ import annotations

from gpusize.core.spec import LayerSpec, Mixer, ModelSpec, ParamCounts

__all__ = ["KIND"]


class _GatedDeltaNet:
    #: A class constant: a kind is a stateless singleton (no dataclass machinery at start-up).
    per_token_kv = False
    attention_projections = False
    parts: tuple[Mixer, ...] = ()

    def params(self, spec: ModelSpec, layer: LayerSpec) -> ParamCounts:
        assert spec.linear_attention is not None
        la, h = spec.linear_attention, spec.hidden_size
        key_dim, value_dim = la.num_key_heads * la.key_head_dim, la.num_value_heads * la.value_head_dim
        weights = h * (2 * key_dim + 2 * value_dim) + h * 2 * la.num_value_heads + value_dim * h
        conv = (2 * key_dim + value_dim) * la.conv_kernel
        small = conv + 2 * la.num_value_heads + la.value_head_dim  # conv, dt_bias + A_log, gated norm
        return ParamCounts(attention=weights, small=small)

    def kv_width(self, spec: ModelSpec, layer: LayerSpec, kv_heads: int) -> int:
        return 0

    def state_elements(self, spec: ModelSpec, layer: LayerSpec) -> int:
        return sum(_state_shape(spec, 1))

    def tp_problem(self, spec: ModelSpec, layer: LayerSpec, tp: int) -> str | None:
        la = spec.linear_attention
        if la and (la.num_value_heads % tp or la.num_key_heads % tp):
            return f"TP={tp} does not divide the linear-attention heads"
        return None

    def state_bytes(
        self, spec: ModelSpec, layer: LayerSpec, tp: int, conv_bytes: float, ssm_bytes: float
    ) -> int:
        conv, recurrent = _state_shape(spec, tp)
        return int(conv * conv_bytes + recurrent * ssm_bytes)


def _state_shape(spec: ModelSpec, tp: int) -> tuple[int, int]:
    """(conv, recurrent) state elements of one layer on one of `tp` GPUs, vLLM
    `gated_delta_net_state_shape`: conv (kernel - 1, (2 x key_dim + value_dim) / tp) and the recurrent
    state (value heads / tp, value_head_dim, key_head_dim)."""
    assert spec.linear_attention is not None
    la = spec.linear_attention
    channels = 2 * la.num_key_heads * la.key_head_dim + la.num_value_heads * la.value_head_dim
    return (la.conv_kernel - 1) * (
        channels // tp
    ), la.num_value_heads // tp * la.value_head_dim * la.key_head_dim


KIND = _GatedDeltaNet()
