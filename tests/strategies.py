"""Synthetic config.json dicts and a hypothesis strategy over them, beside the catalog one of
tests/core/test_properties.py.

The catalog's models all have heads that divide 8 and hybrid ratios never between 1 and 1.5, so a
property drawn from it never reaches the branches of the rules that refuse a split or pick the
largest group. Every spec here is built by the real parser (`parse_config`), so a synthetic model is
a config a user could hand to `gpusize fit --config`.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from gpusize.core.parse import parse_config
from gpusize.core.spec import ModelSpec

__all__ = [
    "dense",
    "hybrid_mamba",
    "hybrid_windows",
    "linear_attention",
    "mla",
    "moe",
    "spec_of",
    "synthetic_configs",
]


def spec_of(config: dict[str, Any]) -> ModelSpec:
    return parse_config(config)


def dense(
    heads: int = 8,
    kv_heads: int = 8,
    head_dim: int = 64,
    layers: int = 4,
    hidden: int = 512,
    dtype: str = "bfloat16",
    **extra: Any,
) -> dict[str, Any]:
    """A Llama-style decoder: no biases, gated MLP, untied embeddings, RoPE."""
    return {
        "model_type": "llama",
        "hidden_size": hidden,
        "num_hidden_layers": layers,
        "num_attention_heads": heads,
        "num_key_value_heads": kv_heads,
        "head_dim": head_dim,
        "intermediate_size": 2 * hidden,
        "vocab_size": 1000,
        "max_position_embeddings": 4096,
        "tie_word_embeddings": False,
        "torch_dtype": dtype,
        **extra,
    }


def hybrid_windows(full: int, local: int, window: int, chunked: bool = False, **extra: Any) -> dict[str, Any]:
    """`full` global layers then `local` sliding (or chunked) layers, through `layer_types`."""
    kind = "chunked_attention" if chunked else "sliding_attention"
    types = ["full_attention"] * full + [kind] * local
    size: dict[str, Any] = {"attention_chunk_size": window} if chunked else {"sliding_window": window}
    return dense(layers=full + local, layer_types=types, **size, **extra)


def linear_attention(
    key_heads: int = 4, value_heads: int = 8, attention_every: int = 4, layers: int = 8, **extra: Any
) -> dict[str, Any]:
    """Qwen3-Next-style Gated DeltaNet layers with full attention every `attention_every` layers."""
    return dense(
        layers=layers,
        model_type="qwen3_next",
        full_attention_interval=attention_every,
        linear_num_key_heads=key_heads,
        linear_num_value_heads=value_heads,
        linear_key_head_dim=32,
        linear_value_head_dim=64,
        linear_conv_kernel_dim=4,
        **extra,
    )


def hybrid_mamba(mamba_heads: int = 8, pattern: str = "M-M*-M-*", **extra: Any) -> dict[str, Any]:
    """Nemotron-H-style Mamba-2 / attention / MLP blocks."""
    return dense(
        layers=len(pattern),
        model_type="nemotron_h",
        hybrid_override_pattern=pattern,
        mamba_num_heads=mamba_heads,
        mamba_head_dim=32,
        ssm_state_size=64,
        n_groups=2,
        conv_kernel=4,
        **extra,
    )


def mla(heads: int = 16, **extra: Any) -> dict[str, Any]:
    """DeepSeek-V3-style multi-head latent attention."""
    return dense(
        heads=heads,
        kv_heads=heads,
        model_type="deepseek_v3",
        q_lora_rank=96,
        kv_lora_rank=128,
        qk_nope_head_dim=32,
        qk_rope_head_dim=16,
        v_head_dim=32,
        **extra,
    )


def moe(experts: int = 8, width: int = 256, **extra: Any) -> dict[str, Any]:
    """Qwen3-MoE-style routed experts on every layer, no shared expert."""
    return dense(
        model_type="qwen3_moe",
        num_experts=experts,
        num_experts_per_tok=min(2, experts),
        moe_intermediate_size=width,
        **extra,
    )


# --------------------------------------------------------------------------- hypothesis

#: Heads that do not all divide 8 (12, 20, 28 are real: Qwen2.5-7B has 28 heads and 4 KV heads).
_HEADS = (4, 6, 8, 12, 20, 24, 28, 32, 40)


@st.composite
def _attention(draw: st.DrawFn) -> dict[str, Any]:
    heads = draw(st.sampled_from(_HEADS))
    kv = draw(st.sampled_from([k for k in range(1, heads + 1) if heads % k == 0]))
    dtype = draw(st.sampled_from(("bfloat16", "float16", "float32")))
    return dense(heads, kv, head_dim=draw(st.sampled_from((32, 64, 128))), dtype=dtype)


@st.composite
def _windows(draw: st.DrawFn) -> dict[str, Any]:
    """Hybrid window layouts, half of them with a layer ratio in [1, 1.5) (the 'largest' branch)."""
    small = draw(st.integers(1, 8))
    large = draw(st.integers(small, small + small // 2) | st.integers(small, 3 * small))
    full, local = draw(st.permutations((small, large)))
    window = draw(st.integers(16, 8192))
    return hybrid_windows(full, local, window, chunked=draw(st.booleans()))


@st.composite
def _recurrent(draw: st.DrawFn) -> dict[str, Any]:
    if draw(st.booleans()):
        return linear_attention(key_heads=draw(st.sampled_from((2, 4, 8))), value_heads=8)
    return hybrid_mamba(mamba_heads=draw(st.sampled_from((4, 8, 16))))


def synthetic_configs() -> st.SearchStrategy[dict[str, Any]]:
    """Dense (heads and KV heads that need not divide 8, fp32 checkpoints), hybrid windows and chunks
    (ratios between 1 and 1.5), recurrent (Gated DeltaNet, Mamba-2), MLA and MoE configs."""
    return st.one_of(
        _attention(),
        _windows(),
        _recurrent(),
        st.sampled_from((8, 16, 32)).map(lambda h: mla(heads=h)),
        st.sampled_from((2, 4, 6, 8, 16)).map(lambda n: moe(experts=n)),
    )
