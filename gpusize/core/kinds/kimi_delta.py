"""Kimi Delta Attention (Kimi-Linear): gated delta-rule linear attention, a constant state per sequence.

Parameters (vLLM vllm/model_executor/layers/kda.py `KimiDeltaAttention`, v0.19.0; the same tensors as
the Hugging Face checkpoint): q, k and v projections hidden -> P (P = heads x head_dim); the
low-rank forget gate f_a (hidden -> head_dim, replicated) and f_b (head_dim -> P) with a dt_bias of P;
b_proj hidden -> heads; three depthwise short convolutions over q, k and v (P x kernel each, no bias,
fp32); A_log per head; the output gate g_a (hidden -> head_dim, replicated) and g_b (head_dim -> P);
the gated RMSNorm o_norm over one head; o_proj P -> hidden. Kimi-K3 (`use_full_rank_gate`; vLLM
vllm/models/kimi_k3/nvidia/kda.py `KimiK3DeltaAttention`, read in the 0.27.0, 0.27.1, 0.28.0,
0.29.0, 0.30.0, 0.31.0, 0.32.0 and 0.33.0 wheels and at vllm-project/vllm commit 055e47c2: the same
tensors in each)
replaces g_a / g_b by one g_proj hidden -> P, packed into in_proj_qkvgfab with q, k, v, f_a and b
(f_a alone stays replicated); the state is the same `kda_state_shape`.

State per sequence (vLLM mamba_utils `kda_state_shape` / `kda_state_dtype`): three conv windows of
(kernel - 1) x P / tp in the model dtype (`--mamba-cache-dtype`), and a recurrent state of
heads / tp x head_dim x head_dim kept in fp32 (under `--mamba-ssm-cache-dtype auto`; from the 0.30.0
wheel float32 or bfloat16 there chooses it, a flag gpusize does not offer). vLLM shards the heads
over TP (`assert num_heads % tp_size == 0`).
"""

from __future__ import annotations

from gpusize.core.spec import LayerSpec, Mixer, ModelSpec, ParamCounts

__all__ = ["KIND", "RECURRENT_BYTES"]

#: vLLM keeps the KDA recurrent state in torch.float32 (`kda_state_dtype`: fixed in the 0.27.0-0.29.0
#: wheels, the `--mamba-ssm-cache-dtype auto` choice from 0.30.0).
RECURRENT_BYTES = 4


class _KimiDelta:
    #: A class constant: a kind is a stateless singleton (no dataclass machinery at start-up).
    per_token_kv = False
    attention_projections = False
    parts: tuple[Mixer, ...] = ()

    def params(self, spec: ModelSpec, layer: LayerSpec) -> ParamCounts:
        assert spec.kimi_delta is not None
        kd, h = spec.kimi_delta, spec.hidden_size
        d, heads = kd.head_dim, kd.num_heads
        p = heads * d
        forget = h * d + d * p  # f_a + f_b
        gate = h * p if kd.full_rank_gate else h * d + d * p  # g_proj, or g_a + g_b
        weights = 3 * h * p + forget + gate + h * heads + p * h
        small = p + 3 * p * kd.conv_kernel + heads + d  # dt_bias, convs, A_log, o_norm
        replicated = h * d * (1 if kd.full_rank_gate else 2)  # f_a (and g_a)
        return ParamCounts(attention=weights, small=small, replicated_attention=replicated)

    def kv_width(self, spec: ModelSpec, layer: LayerSpec, kv_heads: int) -> int:
        return 0

    def state_elements(self, spec: ModelSpec, layer: LayerSpec) -> int:
        return sum(_state_shape(spec, 1))

    def tp_problem(self, spec: ModelSpec, layer: LayerSpec, tp: int) -> str | None:
        if spec.kimi_delta and spec.kimi_delta.num_heads % tp:
            return f"TP={tp} does not divide the {spec.kimi_delta.num_heads} Kimi Delta Attention heads"
        return None

    def state_bytes(
        self, spec: ModelSpec, layer: LayerSpec, tp: int, conv_bytes: float, ssm_bytes: float
    ) -> int:
        """The conv windows in `conv_bytes`, the recurrent state in fp32 (`ssm_bytes` does not apply)."""
        conv, recurrent = _state_shape(spec, tp)
        return int(conv * conv_bytes + recurrent * RECURRENT_BYTES)


def _state_shape(spec: ModelSpec, tp: int) -> tuple[int, int]:
    """(conv, recurrent) state elements of one layer on one of `tp` GPUs: three conv windows
    (kernel - 1, P / tp) and the recurrent state (heads / tp, head_dim, head_dim)."""
    assert spec.kimi_delta is not None
    kd = spec.kimi_delta
    conv = 3 * (kd.conv_kernel - 1) * (kd.num_heads * kd.head_dim // tp)
    return conv, kd.num_heads // tp * kd.head_dim * kd.head_dim


KIND = _KimiDelta()
