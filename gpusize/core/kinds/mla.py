"""DeepSeek multi-head latent attention (V2, V3, R1, Kimi-K2): a low-rank q (optional) and one
shared latent for K and V.

Parameters: deepseek_v3 modeling (q_a/q_b or q_proj, kv_a_proj_with_mqa, kv_b_proj, o_proj, the
two latent norms); the down-projections are replicated on every TP rank by vLLM. Kimi-K3 adds an
output gate, g_proj hidden -> heads x v_head_dim (vLLM vllm/models/kimi_k3/nvidia/mla.py
`MultiHeadLatentAttention`, read at vllm-project/vllm commit 01b867e8 and in the 0.27.0-0.33.0
wheels: a ColumnParallelLinear up to 0.28.0, the tensor-parallel shard 2 of `fused_qkv_a_g_proj`
from 0.29.0, the same bytes per GPU), and keeps the same latent
cache: head_size = kv_lora_rank + qk_rope_head_dim in `get_kv_cache_spec` (its layers are NoPE, the
rope part is still stored). KV per token: the
latent, kv_lora_rank + qk_rope_head_dim, whatever the heads and the TP size: every rank holds the
whole latent (vLLM MLAAttentionSpec; Kimi-VL logs 31,104 B/token at TP=1 and TP=2).
"""

from __future__ import annotations

from gpusize.core.spec import LayerSpec, Mixer, ModelSpec, ParamCounts

__all__ = ["KIND"]


class _MLA:
    #: A class constant: a kind is a stateless singleton (no dataclass machinery at start-up).
    per_token_kv = True
    attention_projections = False
    parts: tuple[Mixer, ...] = ()

    def params(self, spec: ModelSpec, layer: LayerSpec) -> ParamCounts:
        assert spec.mla is not None
        m, h, heads = spec.mla, spec.hidden_size, layer.num_attention_heads
        qk_head = m.qk_nope_head_dim + m.qk_rope_head_dim
        if m.q_lora_rank:
            q_down, q_up, q_norm = h * m.q_lora_rank, m.q_lora_rank * heads * qk_head, m.q_lora_rank
        else:
            q_down, q_up, q_norm = 0, h * heads * qk_head, 0
        kv_down = h * (m.kv_lora_rank + m.qk_rope_head_dim)
        kv_up = m.kv_lora_rank * heads * (m.qk_nope_head_dim + m.v_head_dim)
        out = heads * m.v_head_dim * h
        gate = h * heads * m.v_head_dim * m.output_gate  # Kimi-K3 g_proj, sharded over the heads
        return ParamCounts(
            attention=q_down + q_up + kv_down + kv_up + out + gate,
            small=q_norm + m.kv_lora_rank,
            replicated_attention=q_down + kv_down,
        )

    def kv_width(self, spec: ModelSpec, layer: LayerSpec, kv_heads: int) -> int:
        assert spec.mla is not None
        return spec.mla.kv_lora_rank + spec.mla.qk_rope_head_dim

    def state_elements(self, spec: ModelSpec, layer: LayerSpec) -> int:
        return 0

    def tp_problem(self, spec: ModelSpec, layer: LayerSpec, tp: int) -> str | None:
        """Query heads are sharded; the latent is replicated, so only the heads must divide."""
        if layer.num_attention_heads % tp:
            return f"TP={tp} does not divide the {layer.num_attention_heads} attention heads"
        return None

    def state_bytes(
        self, spec: ModelSpec, layer: LayerSpec, tp: int, conv_bytes: float, ssm_bytes: float
    ) -> int:
        return 0


KIND = _MLA()
