"""llama-quantize's per-tensor mixture on hybrid models (ggml-org/llama.cpp src/llama-quant.cpp at
007dbbf3f): the attn_v rules read `use_more_bits(qs.i_attention_wv, qs.n_attention_wv)`, where
n_attention_wv counts the file's attn_v-like tensors (`category_is_attn_v`: attn_v, attn_qkv,
attn_kv_b; `init_quantize_state_counters`) and i_attention_wv is the running count in the loader's
layer order, so a hybrid's attention layers are numbered among themselves; the ffn rules read
`layer_info`: the block index from the name when n_expert > 1, else the running count of that
category's tensors over n_layer_all blocks."""

from __future__ import annotations

import pytest

from gpusize.core.gguf_quant import GGML_TYPES
from gpusize.core.gguf_tensors import gguf_layer_bytes, gguf_tensors
from gpusize.core.params import layer_params
from tests.helpers import catalog_spec


def _more_bits(i: int, n: int) -> bool:
    """llama-quant.cpp use_more_bits, restated for the expected values."""
    return i < n // 8 or i >= 7 * n // 8 or (i - n // 8) % 3 == 2


def _bigger_attention_blocks(name: str) -> tuple[list[int], list[int]]:
    """(attention-only blocks whose Q4_K_M bytes exceed the smallest, the blocks llama.cpp gives the
    more-bits attn_v: the attention layers numbered among themselves)."""
    spec = catalog_spec(name)
    blocks, _, _ = gguf_layer_bytes(spec, "Q4_K_M")
    attention = [i for i, layer in enumerate(spec.layers) if layer.mixer == "attention"]
    low = min(blocks[i] for i in attention)
    expected = [b for j, b in enumerate(attention) if _more_bits(j, len(attention))]
    return [i for i in attention if blocks[i] > low], expected


def test_nemotron_nano_attn_v_counts_its_six_attention_layers() -> None:
    """Six attention layers (blocks 5, 12, 19, 26, 33, 42): use_more_bits(i, 6) picks the 3rd and
    6th, blocks 19 and 42, not the blocks 5 and 26 that use_more_bits(block, 52) picks."""
    bigger, expected = _bigger_attention_blocks("NVIDIA-Nemotron-3-Nano-30B-A3B-BF16")
    assert bigger == expected == [19, 42]


def test_nemotron_super_attn_v_counts_its_eight_attention_layers() -> None:
    bigger, expected = _bigger_attention_blocks("NVIDIA-Nemotron-3-Super-120B-A12B")
    assert bigger == expected == [7, 36, 69, 78]


def test_dense_hybrid_ffn_down_counts_its_mlp_blocks() -> None:
    """Nemotron-H-56B (no experts): ffn_down's index is the running count of ffn_down tensors (one per
    MLP block) over n_layer_all = 118 blocks."""
    spec = catalog_spec("Nemotron-H-56B-Base-8K")
    blocks, _, _ = gguf_layer_bytes(spec, "Q4_K_M")
    mlp = [i for i, layer in enumerate(spec.layers) if layer.ffn == "dense"]
    low = min(blocks[i] for i in mlp)
    n = spec.num_hidden_layers
    assert [i for i in mlp if blocks[i] > low] == [b for j, b in enumerate(mlp) if _more_bits(j, n)]


def test_qwen3_5_deltanet_attn_qkv_takes_the_attn_v_rules() -> None:
    """Qwen3.5's Gated DeltaNet layers write blk.N.attn_qkv (in_proj_qkv) beside attn_gate, ssm_alpha,
    ssm_beta and ssm_out: an attn_v-like tensor, so every one of the 64 layers counts for attn_v and
    layer 0's attn_qkv is Q6_K in a Q4_K_M file while layer 9's is Q4_K (ffn_down likewise)."""
    spec = catalog_spec("Qwen3.5-27B")
    la, h = spec.linear_attention, spec.hidden_size
    assert la is not None
    qkv = h * (2 * la.num_key_heads * la.key_head_dim + la.num_value_heads * la.value_head_dim)
    assert [t.elements for t in gguf_tensors(spec, spec.layers[0]) if t.category == "attn_qkv"] == [qkv]
    blocks, _, _ = gguf_layer_bytes(spec, "Q4_K_M")
    assert spec.layers[0] == spec.layers[9]  # two Gated DeltaNet blocks of the same shape

    def more(elements: int) -> int:  # bytes of Q6_K over Q4_K
        return elements // 256 * (GGML_TYPES["Q6_K"][1] - GGML_TYPES["Q4_K"][1])

    assert blocks[0] - blocks[9] == more(qkv) + more(h * spec.layers[0].intermediate_size)


@pytest.mark.parametrize(
    "name",
    [
        "NVIDIA-Nemotron-3-Nano-30B-A3B-BF16",  # relu2 experts: up and down only
        "NVIDIA-Nemotron-3-Super-120B-A12B",  # + latent MoE (experts over 1,024, ffn_latent_down/up)
        "NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16",
        "Kimi-K3",  # gated latent experts
    ],
)
def test_gguf_expert_tensors_are_the_checkpoints(name: str) -> None:
    """The file's 2-D/3-D weights of each block hold the block's linear weights, no more: llama.cpp's
    nemotron_h / kimi_k3 tensors (ffn_up_exps {moe_n_embd, n_ff_exp, n_expert}, no ffn_gate_exps
    for relu2 experts; ffn_latent_down {n_embd, moe_n_embd} and ffn_latent_up)."""
    spec = catalog_spec(name)
    for layer in set(spec.layers):
        counts = layer_params(spec, layer)
        linear = counts.attention + counts.mlp + counts.experts + counts.shared_experts
        assert sum(t.elements for t in gguf_tensors(spec, layer)) == linear
