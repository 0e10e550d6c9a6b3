"""MoE, MLA and recurrent mixers (linear attention, Mamba) read from a config.

Part of `core.parse`; the package assembles the ModelSpec from these readers."""

from __future__ import annotations

from gpusize.core.fields import Fields
from gpusize.core.spec import (
    CompressedAttentionSpec,
    IndexerSpec,
    KimiDeltaSpec,
    LinearAttentionSpec,
    MambaSpec,
    MLASpec,
    MoESpec,
)
from gpusize.errors import ConfigError

__all__ = ["_moe", "_mla", "_compressed", "_linear_attention", "_mamba", "_kimi_delta"]


def _moe(f: Fields, model_type: str) -> MoESpec | None:
    experts = f.optional_integer(
        "num_experts", "num_local_experts", "n_routed_experts", "moe_num_experts", kind="experts", minimum=0
    )
    if not experts:
        return None
    top_k = f.integer(
        "num_experts_per_tok",
        "num_experts_per_token",
        "experts_per_token",
        "moe_top_k",
        "top_k",
        "top_k_experts",
        kind="experts",
    )
    if top_k > experts:
        raise ConfigError(f"{f.where}: num_experts_per_tok ({top_k}) exceeds the {experts} experts")
    width = f.integer("moe_intermediate_size", "intermediate_size", kind="width")
    shared_n = f.integer("n_shared_experts", "num_shared_experts", kind="experts", default=0, minimum=0)
    shared_width = f.integer("shared_expert_intermediate_size", kind="width", default=0, minimum=0)
    nemotron = model_type == "nemotron_h"
    latent = f.integer(
        "moe_latent_size" if nemotron else "routed_expert_hidden_size", kind="width", default=0, minimum=0
    )
    step_shared = f.integer("share_expert_dim", kind="width", default=0, minimum=0)  # Step-3.x, ungated
    if nemotron:  # NemotronHMoE: one MLP of moe_shared_expert_intermediate_size x n_shared_experts
        shared = shared_n * f.integer(
            "moe_shared_expert_intermediate_size", kind="width", default=0, minimum=0
        )
    elif step_shared:
        shared_width, shared = 0, step_shared
    elif shared_n:
        shared = shared_n * width
    elif shared_width:
        shared = shared_width
    elif model_type == "granitemoehybrid":  # GraniteMoeSharedMLP beside the experts, in every layer
        shared = f.integer("shared_intermediate_size", kind="width", default=0, minimum=0)
    elif model_type == "gemma4_text":  # Gemma 4: the dense MLP runs beside the routed experts
        shared = f.integer("intermediate_size", kind="width")
    else:
        shared = width if model_type == "llama4_text" else 0  # Llama-4: one shared expert per MoE layer
    return MoESpec(
        num_experts=experts,
        num_experts_per_tok=top_k,
        moe_intermediate_size=width,
        shared_intermediate_size=shared,
        shared_expert_gate=bool(shared_width),
        # gpt-oss: a router bias; Gemma 4: Gemma4MoE.per_expert_scale, one value per expert.
        router_bias=model_type in ("gpt_oss", "gemma4_text"),
        score_correction_bias=f.string("topk_method") == "noaux_tc"
        or f.boolean("use_moe_router_bias", default=False)  # Step-3.x router_bias per expert
        or model_type in ("glm4_moe", "nemotron_h", "kimi_linear")
        or (model_type in ("minimax_m2", "minimax_m3") and f.boolean("use_routing_bias", default=True)),
        expert_bias=model_type == "gpt_oss",
        gated=not nemotron,
        # Nemotron-3 `moe_latent_size`; Kimi-K3 `routed_expert_hidden_size` (KimiLinearConfig), with
        # `latent_moe_use_norm` (default false there) for the norm over the latent
        latent_size=latent,
        latent_norm=bool(latent) and f.boolean("latent_moe_use_norm", default=False),
    )


def _mla(f: Fields) -> MLASpec | None:
    if not f.optional_integer("kv_lora_rank", kind="width", minimum=0):
        return None
    return MLASpec(
        q_lora_rank=f.optional_integer("q_lora_rank", kind="width", minimum=0) or None,
        kv_lora_rank=f.integer("kv_lora_rank", kind="width"),
        qk_nope_head_dim=f.integer("qk_nope_head_dim", kind="width"),
        qk_rope_head_dim=f.integer("qk_rope_head_dim", kind="width"),
        v_head_dim=f.integer("v_head_dim", kind="width"),
        indexer=_indexer(f),
        output_gate=f.boolean("mla_use_output_gate", default=False),
    )


def _indexer(f: Fields) -> IndexerSpec | None:
    """DeepSeek Sparse Attention's indexer (DeepseekV32Config / GlmMoeDsaConfig index_* fields)."""
    if not f.has("index_n_heads"):
        return None
    return IndexerSpec(
        n_heads=f.integer("index_n_heads", kind="heads"),
        head_dim=f.integer("index_head_dim", kind="width"),
        topk=f.integer("index_topk", kind="positions"),
    )


def _compressed(f: Fields) -> CompressedAttentionSpec | None:
    """DeepSeek-V4 attention (DeepseekV4Config): `compress_ratios` names it."""
    if not f.has("compress_ratios"):
        return None
    return CompressedAttentionSpec(
        head_dim=f.integer("head_dim", kind="width"),
        rope_head_dim=f.integer("qk_rope_head_dim", kind="width"),
        q_lora_rank=f.integer("q_lora_rank", kind="width"),
        o_lora_rank=f.integer("o_lora_rank", kind="width"),
        o_groups=f.integer("o_groups", kind="heads"),
        window=f.integer("sliding_window", kind="positions"),
        index_n_heads=f.integer("index_n_heads", kind="heads"),
        index_head_dim=f.integer("index_head_dim", kind="width"),
        hc_mult=f.integer("hc_mult", kind="small", default=1),
        index_topk=f.integer("index_topk", kind="positions", default=0),
    )


def _linear_attention(f: Fields) -> LinearAttentionSpec | None:
    if not f.has("linear_num_value_heads"):
        return None
    return LinearAttentionSpec(
        num_key_heads=f.integer("linear_num_key_heads", kind="heads"),
        num_value_heads=f.integer("linear_num_value_heads", kind="heads"),
        key_head_dim=f.integer("linear_key_head_dim", kind="width"),
        value_head_dim=f.integer("linear_value_head_dim", kind="width"),
        conv_kernel=f.integer("linear_conv_kernel_dim", kind="small", default=4),
    )


def _mamba(f: Fields) -> MambaSpec | None:
    """Mamba-2 dimensions: NemotronHConfig names (mamba_num_heads, ssm_state_size, n_groups,
    conv_kernel, use_conv_bias), else GraniteMoeHybridConfig / FalconH1Config names (mamba_n_heads,
    mamba_d_head, mamba_d_state, mamba_n_groups, mamba_d_conv, mamba_conv_bias)."""
    if not f.has("mamba_num_heads") and not f.has("mamba_n_heads"):
        return None
    heads = f.integer("mamba_num_heads", "mamba_n_heads", kind="heads")
    if f.raw.get("mamba_d_head") == "auto":  # FalconH1Config: d_ssm split over the heads
        head_dim = f.integer("mamba_d_ssm", kind="width") // heads
    else:
        head_dim = f.integer("mamba_head_dim", "mamba_d_head", kind="width")
    inner = f.optional_integer("mamba_d_ssm", kind="width")
    if inner is not None and inner != heads * head_dim:
        raise f.fail("mamba_d_ssm", f"must equal mamba_n_heads x mamba_d_head ({heads * head_dim})", inner)
    return MambaSpec(
        num_heads=heads,
        head_dim=head_dim,
        state_size=f.integer("ssm_state_size", "mamba_d_state", kind="width"),
        n_groups=f.integer("n_groups", "mamba_n_groups", kind="heads", default=1),
        conv_kernel=f.integer("conv_kernel", "mamba_d_conv", kind="small", default=4),
        proj_bias=f.boolean("mamba_proj_bias", default=False),
        conv_bias=f.boolean("use_conv_bias", "mamba_conv_bias", default=True),
        gated_norm=f.boolean("mamba_rms_norm", default=True),
    )


def _kimi_delta(f: Fields) -> KimiDeltaSpec | None:
    """Kimi-Linear `linear_attn_config` (num_heads, head_dim, short_conv_kernel_size; Kimi-K3's
    use_full_rank_gate)."""
    la = f.sub("linear_attn_config")
    if not la.raw or not la.has("kda_layers"):
        return None
    return KimiDeltaSpec(
        num_heads=la.integer("num_heads", kind="heads"),
        head_dim=la.integer("head_dim", kind="width"),
        conv_kernel=la.integer("short_conv_kernel_size", kind="small", default=4),
        full_rank_gate=la.boolean("use_full_rank_gate", default=False),
    )
