"""A GGUF file of a model, tensor by tensor (pure): the weights convert_hf_to_gguf.py writes for each
block, each typed by the file type's mixture (`core.gguf_quant.tensor_type`), and the bytes they take,
as sources/gguf.py sums a real file's tensor table."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from gpusize.core.gguf_quant import GGML_TYPES, SMALL_TYPE, quant_facts, tensor_type
from gpusize.core.kinds import has_attention_projections, mixer_kind, mixer_parts
from gpusize.core.params import layer_params
from gpusize.core.spec import LayerSpec, ModelSpec

__all__ = ["GgufTensor", "gguf_file_bytes", "gguf_layer_bytes", "gguf_tensors"]


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
            yield GgufTensor("other", mixer_kind(spec, part).params(spec, part).attention, h)
    yield from _ffn_tensors(spec, layer)


def _ffn_tensors(spec: ModelSpec, layer: LayerSpec) -> Iterator[GgufTensor]:
    h = spec.hidden_size
    if layer.ffn == "dense":
        width = layer.intermediate_size
        if spec.gated_mlp:
            yield GgufTensor("ffn_gate", h * width, h)
        yield GgufTensor("ffn_up", h * width, h)
        yield GgufTensor("ffn_down", h * width, width)
    elif layer.ffn != "none" and spec.moe is not None:
        moe = spec.moe
        per = h * moe.moe_intermediate_size * moe.num_experts
        yield GgufTensor("ffn_gate", per, h, experts=True)
        yield GgufTensor("ffn_up", per, h, experts=True)
        yield GgufTensor("ffn_down", per, moe.moe_intermediate_size, experts=True)
        if moe.shared_intermediate_size:
            shared = h * moe.shared_intermediate_size
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
    m = quant_facts(spec)
    blocks = []
    for i, layer in enumerate(spec.layers):
        small = layer_params(spec, layer)
        size = (small.small + small.router) * GGML_TYPES[SMALL_TYPE][1]
        for t in gguf_tensors(spec, layer):
            size += _bytes(tensor_type(ftype, t.category, i, m, t.ncols, t.experts), t.elements)
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
