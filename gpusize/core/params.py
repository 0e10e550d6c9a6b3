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
from dataclasses import replace

from gpusize.core.kinds import mixer_kind
from gpusize.core.spec import LayerSpec, ModelSpec, ParamCounts

__all__ = [
    "ATTN_RES_LAYER_VECTORS",
    "ATTN_RES_MODEL_VECTORS",
    "count_params",
    "layer_params",
    "moe_layers",
    "routed_expert_params",
]

#: Kimi-K3 attention residuals (vLLM vllm/models/kimi_k3/nvidia/model.py `KimiDecoderLayer`, read at
#: vllm-project/vllm commit 006193b5 and in every wheel from 0.27.0 to 0.33.0): per layer two RMSNorms
#: (self_attention_res_norm, mlp_res_norm) and two pseudo-queries (self_attention_res_proj, mlp_res_proj:
#: ReplicatedLinear(hidden, 1), no quantization), four vectors of hidden_size beside the input and
#: post-attention norms it keeps.
ATTN_RES_LAYER_VECTORS = 4
#: `KimiLinearModel`: output_attn_res_norm and output_attn_res_proj mix the blocks once more before
#: the final norm (two vectors of hidden_size).
ATTN_RES_MODEL_VECTORS = 2


def count_params(spec: ModelSpec) -> ParamCounts:
    """Parameter counts by role for the whole model (vision tower included, MTP separate)."""
    h = spec.hidden_size
    embedding = spec.vocab_size * h + spec.learned_position_embeddings * h
    lm_head = 0 if spec.tie_word_embeddings else spec.vocab_size * h
    lookup = spec.learned_position_embeddings * h + (0 if spec.tie_word_embeddings else spec.vocab_size * h)
    counts = ParamCounts(
        embedding=embedding,
        lm_head=lm_head,
        small=_norm_size(spec) + h * ATTN_RES_MODEL_VECTORS * bool(spec.attn_res_block_size),
        lookup_only=lookup,
        vision=spec.vision.params if spec.vision else 0,
    )
    for layer, times in Counter(spec.layers).items():  # identical layers counted once
        counts = counts + layer_params(spec, layer) * times
    if spec.num_nextn_predict_layers:
        counts = counts + ParamCounts(mtp=spec.num_nextn_predict_layers * _mtp_params(spec))
    return counts


def layer_params(spec: ModelSpec, layer: LayerSpec) -> ParamCounts:
    mixer = mixer_kind(spec, layer).params(spec, layer)
    ffn = _ffn_params(spec, layer)
    present = (layer.mixer != "none") + (layer.ffn != "none")
    vectors = layer.extra_vectors + ATTN_RES_LAYER_VECTORS * bool(spec.attn_res_block_size)
    norms = _norm_size(spec) * spec.norms_per_layer * present // 2 + spec.hidden_size * vectors
    return mixer + ffn + ParamCounts(small=norms)


def _norm_size(spec: ModelSpec) -> int:
    return 2 * spec.hidden_size if spec.norm == "layer" else spec.hidden_size


# --------------------------------------------------------------------------- feed-forward


def _mlp_weights(spec: ModelSpec, width: int) -> tuple[int, int]:
    """(linear weights, biases) of one MLP of this width."""
    h = spec.hidden_size
    if spec.gated_mlp:
        return 3 * h * width, (2 * width + h) * spec.mlp_bias
    return 2 * h * width, (width + h) * spec.mlp_bias


def moe_layers(spec: ModelSpec) -> int:
    """Layers whose feed-forward is routed experts (0 for a dense model)."""
    if spec.moe is None:
        return 0
    return sum(n for layer, n in spec.layer_counts if layer.ffn == "moe")


def routed_expert_params(spec: ModelSpec) -> int:
    """Linear weights of one routed expert, whole (every TP rank's slice together): gate, up and down
    (no gate for Nemotron-H's relu2 experts) between the width it reads and writes (the hidden size,
    or the latent one of a latent MoE) and moe_intermediate_size. 0 for a dense model."""
    moe = spec.moe
    if moe is None:
        return 0
    return (3 if moe.gated else 2) * (moe.latent_size or spec.hidden_size) * moe.moe_intermediate_size


def _ffn_params(spec: ModelSpec, layer: LayerSpec) -> ParamCounts:
    if layer.ffn == "dense":
        weights, bias = _mlp_weights(spec, layer.intermediate_size)
        return ParamCounts(mlp=weights, small=bias)
    if layer.ffn == "none":
        return ParamCounts()
    assert spec.moe is not None
    moe, h = spec.moe, spec.hidden_size
    mats = 3 if moe.gated else 2  # gate, up, down; Nemotron-H's relu2 experts have no gate
    per_expert = routed_expert_params(spec)
    expert_bias = (2 * moe.moe_intermediate_size + h) * moe.expert_bias
    router = h * moe.num_experts + moe.num_experts * (moe.router_bias + moe.score_correction_bias)
    router += h * moe.shared_expert_gate
    # The shared expert works on the hidden state; the latent projections (Nemotron-3
    # fc1/fc2_latent_proj, Kimi-K3 routed_expert_down_proj/up_proj: vLLM ReplicatedLinear) are always
    # on, counted with it; Kimi-K3's routed_expert_norm over the latent is a norm.
    shared = mats * h * moe.shared_intermediate_size + 2 * h * moe.latent_size
    return ParamCounts(
        experts=moe.num_experts * per_expert,
        experts_active=moe.num_experts_per_tok * per_expert,
        shared_experts=shared,
        router=router,
        small=moe.num_experts * expert_bias + moe.latent_size * moe.latent_norm,
        expert_biases=moe.num_experts * expert_bias,
        expert_biases_active=moe.num_experts_per_tok * expert_bias,
    )


def _mtp_params(spec: ModelSpec) -> int:
    """One DeepSeek-style MTP module: a decoder layer like the last one (with its own indexer where
    the model has one), two norms, the 2h -> h projection and its output norm (embeddings and head
    are shared with the model). Nemotron-3 names its step's layers (`spec.mtp_layers`, vLLM
    nemotron_h_mtp.py NemotronHMultiTokenPredictor: e.g. '*E', an attention then an MoE decoder
    layer, each with its norm; enorm, hnorm and eh_proj on the first, final_layernorm on the last)."""
    h = spec.hidden_size
    step = spec.mtp_layers or (replace(spec.layers[-1], shares_indexer=False),)  # MTP owns its indexer
    layers = [layer_params(spec, layer) for layer in step]
    return sum(c.total + c.mtp for c in layers) + 3 * _norm_size(spec) + 2 * h * h
