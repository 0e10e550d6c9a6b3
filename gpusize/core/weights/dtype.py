"""`--dtype` resolved into a WeightFormat (pure): auto (the checkpoint's own storage), a dtype name,
fp8/int8/int4 weight-only quantization, `bpwN` bits per weight, or a GGUF file type.
"""

from __future__ import annotations

import functools

from gpusize.core.gguf_quant import FTYPES, GGML_TYPES, SMALL_TYPE, bits_of, ftype_name
from gpusize.core.gguf_tensors import gguf_layer_bytes
from gpusize.core.params import layer_params
from gpusize.core.spec import ModelSpec
from gpusize.core.weights.checkpoint import checkpoint_format
from gpusize.core.weights.formats import (
    FP8_CHANNEL_SCALE_BYTES,
    INT4_GROUP_SIZE,
    WeightFormat,
    activation_dtype,
    bits_per_weight,
)
from gpusize.units import DTYPE_BYTES

__all__ = ["gguf_weight_format", "weight_format"]


#: Cached (a spec keeps its hash): every row of a batch resolves its dtype, and each lever that
#: changes the weights again; one value per model and dtype then keeps its hash for the evaluations.
@functools.lru_cache(maxsize=512)
def weight_format(spec: ModelSpec, dtype: str) -> WeightFormat:
    """Resolve `--dtype` (auto = the checkpoint's own storage; bpwN = N bits per linear weight) into a
    WeightFormat."""
    act = activation_dtype(spec)
    if ftype_name(dtype) is not None:
        return gguf_weight_format(spec, dtype)
    bits = bits_per_weight(dtype)
    if bits is not None:
        return WeightFormat(
            f"bpw{bits:g}",
            bits / 8,
            DTYPE_BYTES[act],
            note=f"linear layers at exactly {bits:g} bits per weight, scales included (EXL2 / GGUF "
            f"IQ-style); embeddings, lm_head, norms and routers stay {act}",
        )
    if dtype == "auto" and spec.quantization is not None:
        return checkpoint_format(spec, DTYPE_BYTES[act])
    if dtype == "auto":
        return WeightFormat(act, DTYPE_BYTES[act], DTYPE_BYTES[act])
    other = DTYPE_BYTES[act] if dtype in ("fp8", "int8", "int4") else DTYPE_BYTES[dtype]
    if dtype == "fp8":
        return WeightFormat(
            "fp8",
            1 + FP8_CHANNEL_SCALE_BYTES / spec.hidden_size,
            other,
            note="linear layers FP8 with per-channel scales (vLLM --quantization "
            "fp8); embeddings, lm_head, norms and routers stay " + act,
        )
    if dtype == "int8":
        return WeightFormat(
            "int8",
            1 + FP8_CHANNEL_SCALE_BYTES / spec.hidden_size,
            other,
            note="linear layers int8 with per-channel scales; embeddings, "
            "lm_head, norms and routers stay " + act,
        )
    if dtype == "int4":
        return WeightFormat(
            "int4",
            0.5 + 2 / INT4_GROUP_SIZE,
            other,
            note=f"linear layers int4 with one fp16 scale per {INT4_GROUP_SIZE} "
            f"weights (GPTQ/AWQ-style); embeddings, lm_head, norms and "
            f"routers stay {act}",
        )
    return WeightFormat(dtype, DTYPE_BYTES[dtype], DTYPE_BYTES[dtype])


def gguf_weight_format(spec: ModelSpec, dtype: str) -> WeightFormat:
    """A llama-quantize file type as a WeightFormat: the linear layers at the mixture's average bytes
    per weight for this model (Q4_K_M: Q4_K with Q6_K attn_v/ffn_down in part of the layers), the
    token embedding and output head at their own types, norms, biases and routers F32, a vision tower
    F16 (Ollama's and llama.cpp's mmproj files)."""
    ftype = ftype_name(dtype)
    assert ftype is not None
    blocks, embd, output = gguf_layer_bytes(spec, ftype)
    counts = spec.params
    small = GGML_TYPES[SMALL_TYPE][1]
    block_small = sum(c.small + c.router for c in (layer_params(spec, layer) for layer in spec.layers))
    linear = (sum(blocks) - block_small * small) / max(counts.linear, 1)
    vocab = spec.vocab_size * spec.hidden_size
    return WeightFormat(
        ftype,
        linear,
        DTYPE_BYTES["fp16"],
        gguf=ftype,
        embedding_bytes=embd / vocab if vocab else None,
        lm_head_bytes=output / vocab if output and vocab else None,
        small_bytes=small,
        note=f"GGUF {ftype}: {FTYPES[ftype]} ({bits_of(FTYPES[ftype]):g} bits per weight) with "
        f"llama-quantize's mixture, {8 * linear:.3f} bits per linear weight on average for this "
        f"model; token embedding {8 * embd / max(vocab, 1):.3f} bits, norms F32",
    )
