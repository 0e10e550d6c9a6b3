"""Mamba-2 selective state-space mixer (Nemotron-H, Granite-4 hybrids, Falcon-H1).

Parameters: in_proj -> (z, x, B, C, dt), the depthwise conv1d over x, B and C, A_log / D / dt_bias
per head, the gated norm over the inner width, out_proj (transformers NemotronHMamba2Mixer).
State per sequence: heads x head_dim x state_size SSM state + the conv window of
(inner + 2 x groups x state) channels x (kernel - 1) (vLLM mamba_utils mamba2_state_shape). vLLM
shards the heads over TP (and the groups, replicated when TP does not divide them).
"""

from __future__ import annotations

from gpusize.core.spec import LayerSpec, Mixer, ModelSpec, ParamCounts

__all__ = ["KIND"]


class _Mamba2:
    #: A class constant: a kind is a stateless singleton (no dataclass machinery at start-up).
    per_token_kv = False
    attention_projections = False
    parts: tuple[Mixer, ...] = ()

    def params(self, spec: ModelSpec, layer: LayerSpec) -> ParamCounts:
        assert spec.mamba is not None
        mb, h = spec.mamba, spec.hidden_size
        inner = mb.num_heads * mb.head_dim
        conv_dim = inner + 2 * mb.n_groups * mb.state_size
        in_out = inner + conv_dim + mb.num_heads
        weights = h * in_out + inner * h
        small = conv_dim * mb.conv_kernel + conv_dim * mb.conv_bias + 3 * mb.num_heads + inner * mb.gated_norm
        small += (in_out + h) * mb.proj_bias
        return ParamCounts(attention=weights, small=small)

    def kv_width(self, spec: ModelSpec, layer: LayerSpec, kv_heads: int) -> int:
        return 0

    def state_elements(self, spec: ModelSpec, layer: LayerSpec) -> int:
        return sum(_state_shape(spec, 1))

    def tp_problem(self, spec: ModelSpec, layer: LayerSpec, tp: int) -> str | None:
        if spec.mamba and spec.mamba.num_heads % tp:
            return f"TP={tp} does not divide the {spec.mamba.num_heads} Mamba heads"
        return None

    def state_bytes(
        self, spec: ModelSpec, layer: LayerSpec, tp: int, conv_bytes: float, ssm_bytes: float
    ) -> int:
        conv, ssm = _state_shape(spec, tp)
        return int(conv * conv_bytes + ssm * ssm_bytes)


def _state_shape(spec: ModelSpec, tp: int) -> tuple[int, int]:
    """(conv, SSM) state elements of one layer on one of `tp` GPUs, vLLM `mamba2_state_shape`: groups
    that tp does not divide are replicated up to tp (`extra_groups_for_head_shards`), the conv state is
    (kernel - 1, (inner + 2 x groups x state) / tp) and the SSM state (heads / tp, head_dim,
    state_size)."""
    assert spec.mamba is not None
    mb = spec.mamba
    groups = mb.n_groups + (0 if mb.n_groups % tp == 0 else tp - mb.n_groups)
    conv = (mb.conv_kernel - 1) * ((mb.num_heads * mb.head_dim + 2 * groups * mb.state_size) // tp)
    return conv, mb.num_heads // tp * mb.head_dim * mb.state_size


KIND = _Mamba2()
