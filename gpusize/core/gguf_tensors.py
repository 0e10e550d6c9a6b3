"""A GGUF file of a model, tensor by tensor (pure): the weights convert_hf_to_gguf.py writes for each
block, each typed by the file type's mixture (`core.gguf_quant.tensor_type`), and the bytes they take,
as sources/gguf.py sums a real file's tensor table."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

from gpusize.core.gguf_quant import (
    ATTN_V_CATEGORIES,
    GGML_TYPES,
    SMALL_TYPE,
    quant_facts,
    quant_index,
    tensor_type,
)
from gpusize.core.kinds import has_attention_projections, mixer_kind, mixer_parts
from gpusize.core.params import layer_params
from gpusize.core.spec import LayerSpec, ModelSpec
from gpusize.dataclass import dataclass

__all__ = ["GgufTensor", "gguf_file_bytes", "gguf_layer_bytes", "gguf_tensors"]

#: Families whose Gated DeltaNet layers llama.cpp writes with a separate blk.N.attn_qkv (in_proj_qkv)
#: beside attn_gate, ssm_alpha, ssm_beta and ssm_out (convert_hf_to_gguf.py Qwen3.5 / Qwen3.6, arch
#: qwen35 / qwen35moe); Qwen3-Next's fused in_proj_qkvz is ssm_in, no attn_v-like tensor.
_DELTANET_ATTN_QKV = ("qwen3_5_text", "qwen3_5_moe_text")


@dataclass(frozen=True)
class GgufTensor:
    """One quantizable weight: its category, elements, row length and whether it is an expert stack."""

    category: str
    elements: int
    ncols: int
    experts: bool = False


def gguf_tensors(spec: ModelSpec, layer: LayerSpec) -> Iterator[GgufTensor]:
    """The 2-D/3-D weights of one block as convert_hf_to_gguf.py names them (attn_q/k/v/output,
    ffn_gate/up/down, the *_exps expert stacks and *_shexp shared experts). Attention projections are
    those the layer's kind has (Falcon-H1's attention half too); other mixers (MLA, DeltaNet, Mamba)
    are one tensor of the default type."""
    h = spec.hidden_size
    for part in mixer_parts(spec, layer):  # Falcon-H1: attn_* and then its ssm_* tensors
        if has_attention_projections(spec, part):
            d = spec.head_dim
            q, kv = part.num_attention_heads * d, part.num_key_value_heads * d
            q_out = 2 * q if spec.attention_output_gate else q
            yield GgufTensor("attn_q", h * q_out, h)
            yield GgufTensor("attn_k", h * kv, h)
            yield GgufTensor("attn_v", h * kv, h)
            yield GgufTensor("attn_output", q * h, q)
        elif part.mixer != "none":
            weights = mixer_kind(spec, part).params(spec, part).attention
            qkv = _deltanet_qkv(spec, part)
            if qkv:  # an attn_v-like tensor (llama-quant.cpp category_is_attn_v)
                yield GgufTensor("attn_qkv", qkv, h)
            yield GgufTensor("other", weights - qkv, h)
    yield from _ffn_tensors(spec, layer)


def _deltanet_qkv(spec: ModelSpec, layer: LayerSpec) -> int:
    """Elements of a Qwen3.5 Gated DeltaNet layer's attn_qkv (hidden x (2 key_dim + value_dim)); 0
    for other mixers and families."""
    la = spec.linear_attention
    if layer.mixer != "linear_attention" or la is None or spec.family not in _DELTANET_ATTN_QKV:
        return 0
    return spec.hidden_size * (
        2 * la.num_key_heads * la.key_head_dim + la.num_value_heads * la.value_head_dim
    )


def _ffn_tensors(spec: ModelSpec, layer: LayerSpec) -> Iterator[GgufTensor]:
    h = spec.hidden_size
    if layer.ffn == "dense":
        width = layer.intermediate_size
        if spec.gated_mlp:
            yield GgufTensor("ffn_gate", h * width, h)
        yield GgufTensor("ffn_up", h * width, h)
        yield GgufTensor("ffn_down", h * width, width)
    elif layer.ffn != "none" and spec.moe is not None:
        # llama.cpp nemotron_h / kimi_k3: the experts read and write the latent (ffn_up_exps
        # {moe_n_embd, n_ff_exp, n_expert}) between ffn_latent_down {n_embd, moe_n_embd} and
        # ffn_latent_up; relu2 experts (and shared expert) have no gate.
        moe = spec.moe
        width_in = moe.latent_size or h
        per = width_in * moe.moe_intermediate_size * moe.num_experts
        if moe.gated:
            yield GgufTensor("ffn_gate", per, width_in, experts=True)
        yield GgufTensor("ffn_up", per, width_in, experts=True)
        yield GgufTensor("ffn_down", per, moe.moe_intermediate_size, experts=True)
        if moe.latent_size:
            yield GgufTensor("other", h * moe.latent_size, h)  # ffn_latent_down
            yield GgufTensor("other", h * moe.latent_size, moe.latent_size)  # ffn_latent_up
        if moe.shared_intermediate_size:
            shared = h * moe.shared_intermediate_size
            if moe.gated:
                yield GgufTensor("ffn_gate", shared, h)
            yield GgufTensor("ffn_up", shared, h)
            yield GgufTensor("ffn_down", shared, moe.shared_intermediate_size)


def _bytes(kind: str, elements: int) -> int:
    per, size = GGML_TYPES[kind]
    return -(-elements // per) * size


def gguf_layer_bytes(spec: ModelSpec, ftype: str) -> tuple[tuple[int, ...], int, int]:
    """(bytes of each block, token embedding bytes, output.weight bytes) of a `ftype` file of this
    model, as sources/gguf.py sums a file's tensor table: the output is 0 with tied embeddings (the
    engines then place a copy of the token embedding there, llama.cpp's TENSOR_DUPLICATED), and the
    16 KiB of output_norm are left out with the other small tensors."""
    tensors = [tuple(gguf_tensors(spec, layer)) for layer in spec.layers]
    m = quant_facts(spec, sum(t.category in ATTN_V_CATEGORIES for block in tensors for t in block))
    seen: Counter[str] = Counter()  # tensors of each category so far (llama-quant's i_attention_wv, ...)
    blocks = []
    for i, (layer, block) in enumerate(zip(spec.layers, tensors, strict=True)):
        small = layer_params(spec, layer)
        size = (small.small + small.router) * GGML_TYPES[SMALL_TYPE][1]
        for t in block:
            key = "attn_v" if t.category in ATTN_V_CATEGORIES else t.category
            index = quant_index(ftype, t.category, i, seen[key], m)
            seen[key] += 1
            size += _bytes(tensor_type(ftype, t.category, index, m, t.ncols, t.experts), t.elements)
        blocks.append(size)
    h = spec.hidden_size
    embd = spec.vocab_size * h
    embd_bytes = _bytes(tensor_type(ftype, "token_embd", 0, m, h), embd)
    output = 0 if m.tied else _bytes(tensor_type(ftype, "output", 0, m, h), embd)
    return tuple(blocks), embd_bytes, output


def gguf_file_bytes(spec: ModelSpec, ftype: str) -> int:
    """Tensor bytes of a `ftype` file of this model: the blocks, the token embedding once, the output
    head when untied, output_norm, and a vision tower in F16 (as Ollama's gemma3 files hold it)."""
    blocks, embd, output = gguf_layer_bytes(spec, ftype)
    norm = (2 if spec.norm == "layer" else 1) * spec.hidden_size * GGML_TYPES[SMALL_TYPE][1]
    vision = spec.vision.params * GGML_TYPES["F16"][1] if spec.vision else 0
    return sum(blocks) + embd + output + norm + vision
