"""Exact parameter counts from a ModelSpec (pure).

The count is the sum of every weight tensor the architecture's Transformers modeling code
creates, grouped by role so that quantization rules and tensor-parallel sharding can treat each
group as the engine does: linear weights of attention, MLP and experts (quantizable); embeddings
and lm_head (kept in the activation dtype by quantized checkpoints); norms, biases and routers
(small, never quantized); the vision tower; and MTP layers (stored, loaded only for speculative
decoding). Checked against the published counts of the reference configs in
tests/data/reference/configs (tests/core/test_params.py).
"""

from __future__ import annotations

from collections import Counter

from gpusize.core.spec import LayerSpec, ModelSpec, ParamCounts

__all__ = ["count_params", "layer_params"]


def count_params(spec: ModelSpec) -> ParamCounts:
    """Parameter counts by role for the whole model (vision tower included, MTP separate)."""
    h = spec.hidden_size
    embedding = spec.vocab_size * h + spec.learned_position_embeddings * h
    lm_head = 0 if spec.tie_word_embeddings else spec.vocab_size * h
    lookup = spec.learned_position_embeddings * h + (0 if spec.tie_word_embeddings else spec.vocab_size * h)
    counts = ParamCounts(
        embedding=embedding,
        lm_head=lm_head,
        small=_norm_size(spec),
        lookup_only=lookup,
        vision=spec.vision.params if spec.vision else 0,
    )
    for layer, times in Counter(spec.layers).items():  # identical layers counted once
        counts = counts + layer_params(spec, layer) * times
    if spec.num_nextn_predict_layers:
        counts = counts + ParamCounts(mtp=spec.num_nextn_predict_layers * _mtp_params(spec))
    return counts


def layer_params(spec: ModelSpec, layer: LayerSpec) -> ParamCounts:
    mixer = _mixer_params(spec, layer)
    ffn = _ffn_params(spec, layer)
    present = (layer.mixer != "none") + (layer.ffn != "none")
    norms = _norm_size(spec) * spec.norms_per_layer * present // 2
    return mixer + ffn + ParamCounts(small=norms)


def _norm_size(spec: ModelSpec) -> int:
    return 2 * spec.hidden_size if spec.norm == "layer" else spec.hidden_size


# --------------------------------------------------------------------------- mixers


def _mixer_params(spec: ModelSpec, layer: LayerSpec) -> ParamCounts:
    if layer.mixer == "attention":
        return _mla_params(spec) if spec.mla else _attention_params(spec, layer)
    if layer.mixer == "linear_attention":
        return _gated_deltanet_params(spec)
    if layer.mixer == "mamba":
        return _mamba2_params(spec)
    return ParamCounts()


def _attention_params(spec: ModelSpec, layer: LayerSpec) -> ParamCounts:
    h, d = spec.hidden_size, spec.head_dim
    q, kv = layer.num_attention_heads * d, layer.num_key_value_heads * d
    q_out = 2 * q if spec.attention_output_gate else q
    weights = h * (q_out + 2 * kv) + q * h
    small = (q_out + 2 * kv) * spec.qkv_bias + h * spec.o_bias
    small += {"none": 0, "head": 2 * d, "full": q + kv, "per_head_full": q + kv}[spec.qk_norm]
    small += layer.num_attention_heads * spec.attention_sinks
    return ParamCounts(attention=weights, small=small)


def _mla_params(spec: ModelSpec) -> ParamCounts:
    """DeepSeek MLA: low-rank q (optional) and a shared latent for k/v (deepseek_v3 modeling)."""
    assert spec.mla is not None
    m, h, heads = spec.mla, spec.hidden_size, spec.num_attention_heads
    qk_head = m.qk_nope_head_dim + m.qk_rope_head_dim
    if m.q_lora_rank:
        q_down, q_up, q_norm = h * m.q_lora_rank, m.q_lora_rank * heads * qk_head, m.q_lora_rank
    else:
        q_down, q_up, q_norm = 0, h * heads * qk_head, 0
    kv_down = h * (m.kv_lora_rank + m.qk_rope_head_dim)
    kv_up = m.kv_lora_rank * heads * (m.qk_nope_head_dim + m.v_head_dim)
    out = heads * m.v_head_dim * h
    return ParamCounts(
        attention=q_down + q_up + kv_down + kv_up + out,
        small=q_norm + m.kv_lora_rank,
        replicated_attention=q_down + kv_down,
    )


def _gated_deltanet_params(spec: ModelSpec) -> ParamCounts:
    """Qwen3-Next Gated DeltaNet: fused qkvz and (beta, alpha) projections, causal conv, out proj."""
    assert spec.linear_attention is not None
    la, h = spec.linear_attention, spec.hidden_size
    key_dim, value_dim = la.num_key_heads * la.key_head_dim, la.num_value_heads * la.value_head_dim
    weights = h * (2 * key_dim + 2 * value_dim) + h * 2 * la.num_value_heads + value_dim * h
    conv = (2 * key_dim + value_dim) * la.conv_kernel
    small = conv + 2 * la.num_value_heads + la.value_head_dim  # conv, dt_bias + A_log, gated norm
    return ParamCounts(attention=weights, small=small)


def _mamba2_params(spec: ModelSpec) -> ParamCounts:
    """Mamba-2 mixer (Nemotron-H): in_proj -> (z, x, B, C, dt), conv1d, SSM vectors, out_proj."""
    assert spec.mamba is not None
    mb, h = spec.mamba, spec.hidden_size
    inner = mb.num_heads * mb.head_dim
    conv_dim = inner + 2 * mb.n_groups * mb.state_size
    in_out = inner + conv_dim + mb.num_heads
    weights = h * in_out + inner * h
    small = conv_dim * mb.conv_kernel + conv_dim * mb.conv_bias + 3 * mb.num_heads + inner
    small += (in_out + h) * mb.proj_bias
    return ParamCounts(attention=weights, small=small)


# --------------------------------------------------------------------------- feed-forward


def _mlp_weights(spec: ModelSpec, width: int) -> tuple[int, int]:
    """(linear weights, biases) of one MLP of this width."""
    h = spec.hidden_size
    if spec.gated_mlp:
        return 3 * h * width, (2 * width + h) * spec.mlp_bias
    return 2 * h * width, (width + h) * spec.mlp_bias


def _ffn_params(spec: ModelSpec, layer: LayerSpec) -> ParamCounts:
    if layer.ffn == "dense":
        weights, bias = _mlp_weights(spec, layer.intermediate_size)
        return ParamCounts(mlp=weights, small=bias)
    if layer.ffn == "none":
        return ParamCounts()
    assert spec.moe is not None
    moe, h = spec.moe, spec.hidden_size
    per_expert = 3 * h * moe.moe_intermediate_size
    expert_bias = (2 * moe.moe_intermediate_size + h) * moe.expert_bias
    router = h * moe.num_experts + moe.num_experts * (moe.router_bias + moe.score_correction_bias)
    router += h * moe.shared_expert_gate
    shared = 3 * h * moe.shared_intermediate_size
    return ParamCounts(
        experts=moe.num_experts * per_expert,
        experts_active=moe.num_experts_per_tok * per_expert,
        shared_experts=shared,
        router=router,
        small=moe.num_experts * expert_bias,
        expert_biases=moe.num_experts * expert_bias,
        expert_biases_active=moe.num_experts_per_tok * expert_bias,
    )


def _mtp_params(spec: ModelSpec) -> int:
    """One DeepSeek-style MTP module: a decoder layer like the last one, two norms, the
    2h -> h projection and its output norm (embeddings and head are shared with the model)."""
    h = spec.hidden_size
    last = layer_params(spec, spec.layers[-1])
    return last.total + last.mtp + 3 * _norm_size(spec) + 2 * h * h
