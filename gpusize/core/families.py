"""Architecture families: what a config of each `model_type` means when a key is absent.

Each entry mirrors the defaults of the matching Transformers config and modeling classes (norm
type, which projections carry biases, gated or plain MLP, tied embeddings, extra norms). These are
semantics of the architecture, not facts about one model, so they live in code beside the parser.
A key present in config.json always wins over these defaults.
"""

from __future__ import annotations

from dataclasses import field
from typing import Any, Literal

from gpusize.dataclass import dataclass
from gpusize.errors import ConfigError

__all__ = ["FAMILIES", "TEXT_FAMILY_OF", "Bias", "Family", "family_for"]

Norm = Literal["rms", "layer", "layer_nobias"]
QkNorm = Literal["none", "head", "full", "per_head_full"]


@dataclass(frozen=True)
class Bias:
    """A bias switch: the config key that controls it and its default when the key is absent."""

    key: str | None
    default: bool

    def resolve(self, cfg: dict[str, Any]) -> bool:
        if self.key is not None and cfg.get(self.key) is not None:
            return bool(cfg[self.key])
        return self.default


NO_BIAS = Bias(None, False)
ATTN_BIAS = Bias("attention_bias", False)


@dataclass(frozen=True)
class Family:
    """How a model family lays out its parameters beyond the config's numbers: norms, biases, tied
    embeddings, MLP shape and the other per-family rules core/params.py reads."""

    norm: Norm = "rms"
    #: Norms inside one decoder layer (2 = pre-attention + pre-MLP; Gemma 2/3 have 4).
    norms_per_layer: int = 2
    qkv_bias: Bias = ATTN_BIAS
    o_bias: Bias = ATTN_BIAS
    mlp_bias: Bias = Bias("mlp_bias", False)
    gated_mlp: bool = True
    tie_default: bool = False
    #: head = one weight vector of head_dim for q and for k (Qwen3, Gemma 3);
    #: full = weights over all q heads and all kv heads (OLMo-2);
    #: per_head_full = one weight vector per head (Cohere, StableLM qk_layernorm).
    qk_norm: QkNorm = "none"
    qk_norm_key: str | None = None
    #: Learned absolute position embeddings (GPT-2 / gpt_bigcode `wpe`).
    learned_positions: bool = False
    #: gpt-oss: one learned attention-sink logit per head per layer.
    attention_sinks: bool = False
    default_mlp_ratio: int = 4
    #: Config defaults of the Transformers config class for keys a hub file may omit.
    defaults: dict[str, Any] = field(default_factory=dict)


_GEMMA_DEFAULTS = {"hidden_activation": "gelu_pytorch_tanh"}

FAMILIES: dict[str, Family] = {
    "llama": Family(),
    "mistral": Family(),
    "mixtral": Family(),
    # Ministral3Config (Ministral 3 3B/8B/14B text towers, Devstral 2 as Ministral3ForCausalLM,
    # 2025-12): the Mistral decoder with YaRN rope_parameters and llama_4_scaling_beta (no tensor).
    "ministral3": Family(),
    "yi": Family(),
    "qwen2": Family(qkv_bias=Bias(None, True), o_bias=NO_BIAS),
    "qwen2_moe": Family(qkv_bias=Bias(None, True), o_bias=NO_BIAS),
    "qwen3": Family(qk_norm="head"),
    "qwen3_moe": Family(qk_norm="head"),
    "qwen3_next": Family(qk_norm="head"),
    # Qwen3.5 / Qwen3.6 (Qwen3_5TextConfig, Qwen3_5MoeTextConfig): the Qwen3-Next layers (gated full
    # attention with q/k norms + Gated DeltaNet), dense or MoE, written under a composite config.
    "qwen3_5_text": Family(qk_norm="head"),
    "qwen3_5_moe_text": Family(qk_norm="head"),
    # KimiLinearConfig (vllm/model_executor/models/kimi_linear.py): MLA + Kimi Delta Attention layers,
    # DeepSeek-style MoE with a score-correction bias; two pre-norms per layer.
    "kimi_linear": Family(),
    # Qwen2-VL / Qwen2.5-VL (Qwen2VLTextConfig, Qwen2_5_VLTextConfig): the Qwen2 decoder (q, k, v
    # biases, bias-free o_proj), written flat in the composite config by older checkpoints.
    "qwen2_vl": Family(qkv_bias=Bias(None, True), o_bias=NO_BIAS),
    "qwen2_5_vl": Family(qkv_bias=Bias(None, True), o_bias=NO_BIAS),
    "qwen2_vl_text": Family(qkv_bias=Bias(None, True), o_bias=NO_BIAS),
    "qwen2_5_vl_text": Family(qkv_bias=Bias(None, True), o_bias=NO_BIAS),
    "qwen3_vl_text": Family(qk_norm="head"),
    "qwen3_vl_moe_text": Family(qk_norm="head"),
    "phi3": Family(),
    "gemma": Family(tie_default=True, defaults={"vocab_size": 256000, **_GEMMA_DEFAULTS}),
    "gemma2": Family(norms_per_layer=4, tie_default=True, defaults={"vocab_size": 256000, **_GEMMA_DEFAULTS}),
    # Gemma3TextConfig defaults: vocab 262208, five local layers per global one.
    "gemma3_text": Family(
        norms_per_layer=4,
        tie_default=True,
        qk_norm="head",
        defaults={
            "vocab_size": 262208,
            "sliding_window_pattern": 6,
            "sliding_window": 4096,
            **_GEMMA_DEFAULTS,
        },
    ),
    # Gemma4TextConfig / vLLM gemma4.py: four norms per layer, q_norm and k_norm over one head (the
    # v_norm has no weight), tied embeddings; per-layer head widths are read in core.parse.variants.
    "gemma4_text": Family(norms_per_layer=4, tie_default=True, qk_norm="head", defaults=_GEMMA_DEFAULTS),
    # MiMo-V2-Flash (vLLM mimo_v2_flash.py): bias-free attention without q/k norms; sinks, K/V widths
    # and the sliding/full pattern are per layer (core.parse.variants).
    "mimo_v2_flash": Family(),
    # MiMo-7B (MiMoForCausalLM, vLLM mimo.py): the Qwen2 decoder (q, k, v biases, bias-free o_proj)
    # plus num_nextn_predict_layers MTP layers.
    "mimo": Family(qkv_bias=Bias("attention_bias", True), o_bias=NO_BIAS),
    # Step-3.5 / Step-3.7 Flash (vLLM step3p5.py Step3p5Attention): q_norm and k_norm over one head,
    # bias-free projections; sliding/full from layer_types, MoE with a shared expert and a router bias.
    "step3p5": Family(qk_norm="head"),
    "step3p7": Family(qk_norm="head"),
    "olmo2": Family(qk_norm="full"),
    "stablelm": Family(
        norm="layer",
        qkv_bias=Bias("use_qkv_bias", False),
        o_bias=NO_BIAS,
        mlp_bias=NO_BIAS,
        qk_norm="none",
        qk_norm_key="qk_layernorm",
    ),
    "gpt_neox": Family(
        norm="layer",
        qkv_bias=Bias("attention_bias", True),
        o_bias=Bias("attention_bias", True),
        mlp_bias=Bias(None, True),
        gated_mlp=False,
    ),
    "falcon": Family(
        norm="layer",
        qkv_bias=Bias("bias", False),
        o_bias=Bias("bias", False),
        mlp_bias=Bias("bias", False),
        gated_mlp=False,
        tie_default=True,
    ),
    "starcoder2": Family(
        norm="layer",
        qkv_bias=Bias("use_bias", True),
        o_bias=Bias("use_bias", True),
        mlp_bias=Bias("use_bias", True),
        gated_mlp=False,
        tie_default=True,
    ),
    "gpt_bigcode": Family(
        norm="layer",
        qkv_bias=Bias(None, True),
        o_bias=Bias(None, True),
        mlp_bias=Bias(None, True),
        gated_mlp=False,
        tie_default=True,
        learned_positions=True,
    ),
    "cohere": Family(norm="layer_nobias", norms_per_layer=1, tie_default=True, qk_norm_key="use_qk_norm"),
    "cohere2": Family(norm="layer_nobias", norms_per_layer=1, tie_default=True),
    "glm4_moe": Family(o_bias=NO_BIAS, qk_norm_key="use_qk_norm"),
    # Mistral4Config (Mistral-Small-4, 2026-03; transformers modular_mistral4.py): DeepSeek-V3's MLA
    # attention (q_lora + q_a/kv_a layernorms) and DeepseekV3MoE (n_shared_experts x
    # moe_intermediate_size shared expert) under a softmax Mistral4TopkRouter with no
    # e_score_correction_bias; first_k_dense_replace 0 makes every layer MoE. A composite mistral3
    # config names it in its text_config.
    "mistral4": Family(),
    "deepseek_v2": Family(),
    "deepseek_v3": Family(),
    "kimi_k2": Family(),
    # DeepseekV32Config and GlmMoeDsaConfig (GLM-5): the DeepSeek-V3 decoder (MLA, noaux_tc MoE) with
    # the sparse-attention indexer's index_* fields (`core.kinds.mla_indexer`).
    "deepseek_v32": Family(),
    "glm_moe_dsa": Family(),
    # DeepseekV4Config (DeepSeek-V4 Flash, Pro): compressed attention with hyper-connections
    # (`core.kinds.compressed_mla`), DeepSeekMoE routers with noaux_tc bias.
    "deepseek_v4": Family(),
    "gpt_oss": Family(qkv_bias=Bias(None, True), o_bias=Bias(None, True), attention_sinks=True),
    "llama4_text": Family(),
    "nemotron_h": Family(mlp_bias=Bias("mlp_bias", False), gated_mlp=False),
    "nemotron-nas": Family(),
    # GraniteMoeHybridConfig (Granite-4.0-H): `layer_types` of mamba / attention mixers (Mamba-2 as
    # in Bamba, GQA without rope when position_embedding_type is nope), every layer with a gated
    # shared MLP (shared_intermediate_size) and, when num_local_experts > 0, routed experts of
    # intermediate_size; scalar multipliers (embedding, attention, residual, logits) hold no tensor.
    "granitemoehybrid": Family(),
    # FalconH1Config / modeling_falcon_h1: Llama attention (head_dim) and a Mamba-2 mixer in every
    # layer, a gated MLP (mlp_bias), input and pre-FFN RMSNorms; the Mamba gated norm only with
    # mamba_rms_norm (default false). The mup multipliers (embedding, lm_head, attention in/out, key,
    # ssm in/out, ssm_multipliers, mlp_multipliers) are scalars and the `mup_vector` a non-persistent
    # buffer: no weights.
    "falcon_h1": Family(defaults={"mamba_rms_norm": False}),
    # SmolLM3Config: a Llama decoder (NoPE on every 4th layer changes no tensor), tied by default.
    "smollm3": Family(tie_default=True),
    # GraniteConfig: Llama shapes plus scalar multipliers (embedding, attention, residual, logits).
    "granite": Family(),
    # Glm4Config / modeling_glm4: q, k, v biases (attention_bias defaults to true), bias-free o_proj,
    # fused gate_up MLP, and post-attention / post-MLP norms besides the two pre-norms.
    "glm4": Family(norms_per_layer=4, qkv_bias=Bias("attention_bias", True), o_bias=NO_BIAS),
    # MiniMaxM2Config / modeling_minimax_m2: Mixtral-style experts (intermediate_size is the expert
    # width), one RMSNorm over all q heads and one over all k heads (qk_norm_type per_layer), and a
    # routing bias per expert (use_routing_bias).
    "minimax_m2": Family(qk_norm="full"),
    # MiniMax-M3 (MiniMaxM3ForCausalLM; baidu/vLLM-Kunlun minimax_m3.py): per-head q/k norms
    # (qk_norm_type per_head), dense layers of dense_intermediate_size, experts and one shared expert
    # of intermediate_size, a routing bias per expert, block-sparse attention with an indexer.
    "minimax_m3": Family(qk_norm="head"),
}

#: Composite (multimodal) model types whose text tower uses another family when the nested
#: text_config does not name its own model_type.
TEXT_FAMILY_OF: dict[str, str] = {
    "gemma3": "gemma3_text",
    "gemma4": "gemma4_text",
    # MiniMaxM3VLConfig: the multimodal wrapper of MiniMax-M3 (its LLM fields under text_config).
    "minimax_m3_vl": "minimax_m3",
    "llama4": "llama4_text",
    "mistral3": "mistral",
    "kimi_vl": "deepseek_v3",
    # sgl-project's FP8 DeepSeek-V4 checkpoints write model_type deepseek_ref over the V4 fields.
    "deepseek_ref": "deepseek_v4",
    "qwen2_vl": "qwen2_vl_text",
    "qwen2_5_vl": "qwen2_5_vl_text",
    "qwen3_vl": "qwen3_vl_text",
    "qwen3_vl_moe": "qwen3_vl_moe_text",
    "qwen3_5": "qwen3_5_text",
    "qwen3_5_moe": "qwen3_5_moe_text",
}


def family_for(name: str) -> Family:
    try:
        return FAMILIES[name]
    except KeyError:
        raise ConfigError(f"unsupported model_type '{name}'") from None
