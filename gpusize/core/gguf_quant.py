"""GGUF quantization names as dtypes (pure): `--dtype Q4_K_M` stores each tensor as llama-quantize would.

Two tables, both from ggml-org/llama.cpp (read at 007dbbf3f, 2026):
- `GGML_TYPES`: elements and bytes per block of each ggml tensor type (ggml/src/ggml-common.h block
  structs, ggml.c type_traits; the same numbers as gguf-py `GGML_QUANT_SIZES`, which a test compares).
- `FTYPES`: each file type (`llama-quantize ... Q4_K_M`) and its default tensor type
  (src/llama-quant.cpp `llama_ftype_get_default_type`); `tensor_type` applies that file's mixture rules
  (`llama_tensor_get_type_impl`): e.g. Q4_K_M keeps attn_v and ffn_down in Q6_K in the first and last
  eighth of the layers and every third layer between (`use_more_bits`), the output head in Q6_K, and
  a tied token embedding in the output's type.

Files made with an importance matrix differ in a few rules (IQ3_XXS attn_v, IQ4 ffn_down); the
imatrix is assumed exactly where llama-quantize requires one (IQ1/IQ2/IQ3_XXS types).
"""

from __future__ import annotations

from gpusize.core.spec import ModelSpec
from gpusize.dataclass import dataclass

__all__ = [
    "ATTN_V_CATEGORIES",
    "FTYPES",
    "GGML_TYPES",
    "LLAMA_QUANTIZE_FTYPES",
    "SMALL_TYPE",
    "QuantFacts",
    "bits_of",
    "ftype_name",
    "quant_facts",
    "quant_index",
    "tensor_type",
]

#: ggml type -> (elements per block, bytes per block): ggml-common.h (block_q4_K = 2 fp16 + 12 scale
#: bytes + 128 quant bytes per 256 = 144 B, 4.5 bits per weight; block_q6_K = 210 B per 256, 6.5625;
#: block_mxfp4 = one e8m0 scale + 16 B per 32, 4.25 bits).
GGML_TYPES: dict[str, tuple[int, int]] = {
    "F32": (1, 4),
    "F16": (1, 2),
    "BF16": (1, 2),
    "Q4_0": (32, 18),
    "Q4_1": (32, 20),
    "Q5_0": (32, 22),
    "Q5_1": (32, 24),
    "Q8_0": (32, 34),
    "Q2_K": (256, 84),
    "Q3_K": (256, 110),
    "Q4_K": (256, 144),
    "Q5_K": (256, 176),
    "Q6_K": (256, 210),
    "IQ1_S": (256, 50),
    "IQ1_M": (256, 56),
    "IQ2_XXS": (256, 66),
    "IQ2_XS": (256, 74),
    "IQ2_S": (256, 82),
    "IQ3_XXS": (256, 98),
    "IQ3_S": (256, 110),
    "IQ4_NL": (32, 18),
    "IQ4_XS": (256, 136),
    "TQ1_0": (256, 54),
    "TQ2_0": (256, 66),
    "MXFP4": (32, 17),
}

#: llama-quantize file types gpusize takes as `--dtype` -> their default tensor type
#: (llama-quant.cpp `llama_ftype_get_default_type`). MXFP4 is the MXFP4_MOE file (gpt-oss).
FTYPES: dict[str, str] = {
    "Q4_0": "Q4_0",
    "Q4_1": "Q4_1",
    "Q5_0": "Q5_0",
    "Q5_1": "Q5_1",
    "Q8_0": "Q8_0",
    "Q2_K": "Q2_K",
    "Q2_K_S": "Q2_K",
    "Q3_K_S": "Q3_K",
    "Q3_K_M": "Q3_K",
    "Q3_K_L": "Q3_K",
    "Q4_K_S": "Q4_K",
    "Q4_K_M": "Q4_K",
    "Q5_K_S": "Q5_K",
    "Q5_K_M": "Q5_K",
    "Q6_K": "Q6_K",
    "IQ1_S": "IQ1_S",
    "IQ1_M": "IQ1_M",
    "IQ2_XXS": "IQ2_XXS",
    "IQ2_XS": "IQ2_XS",
    "IQ2_S": "IQ2_XS",
    "IQ2_M": "IQ2_S",
    "IQ3_XXS": "IQ3_XXS",
    "IQ3_XS": "IQ3_S",
    "IQ3_S": "IQ3_S",
    "IQ3_M": "IQ3_S",
    "IQ4_NL": "IQ4_NL",
    "IQ4_XS": "IQ4_XS",
    "TQ1_0": "TQ1_0",
    "TQ2_0": "TQ2_0",
    "MXFP4": "MXFP4",
    #: Not a llama-quantize type: Ollama's own gpt-oss conversion (ollama/ollama convert/convert_gptoss.go)
    #: writes the experts MXFP4 and every other tensor as the checkpoint stores it (BF16).
    "MXFP4_BF16": "MXFP4",
}
#: The FTYPES entries llama-quantize itself makes.
LLAMA_QUANTIZE_FTYPES = tuple(name for name in FTYPES if name != "MXFP4_BF16")
#: Spellings accepted beside the names above (Ollama tags write q4_K_M; llama.cpp's own MXFP4_MOE).
_ALIASES = {"MXFP4_MOE": "MXFP4"}

#: File types whose low-bit types llama-quantize refuses to make without an importance matrix
#: (`tensor_requires_imatrix`): such files always had one.
_IMATRIX = frozenset({"IQ1_S", "IQ1_M", "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ2_M", "IQ3_XXS"})
_IQ_LOW = frozenset({"IQ2_XXS", "IQ2_XS", "IQ1_S", "IQ2_S", "IQ2_M", "IQ1_M"})
_OUTPUT_Q5K = _IQ_LOW | {"IQ3_XXS"}
#: The categories llama-quantize gives the attn_v rules (llama-quant.cpp `category_is_attn_v`: attn_v,
#: the fused attn_qkv, MLA's attn_kv_b), counted together as `n_attention_wv` / `i_attention_wv`.
ATTN_V_CATEGORIES = frozenset({"attn_v", "attn_qkv", "attn_kv_b"})
#: Tensors kept in the converter's float type: 1-D norms and biases, the MoE router (ffn_gate_inp);
#: convert_hf_to_gguf.py writes them as F32.
SMALL_TYPE = "F32"


def ftype_name(dtype: str) -> str | None:
    """The llama-quantize file type a `--dtype` names ('q4_k_m' -> 'Q4_K_M'), or None."""
    key = dtype.strip().upper()
    key = _ALIASES.get(key, key)
    return key if key in FTYPES else None


def bits_of(kind: str) -> float:
    """Bits per weight of a ggml type, block scales included (Q4_K: 4.5, Q6_K: 6.5625)."""
    elements, size = GGML_TYPES[kind]
    return 8 * size / elements


def _use_more_bits(i: int, n: int) -> bool:
    """llama-quant.cpp use_more_bits: the first and last eighth of the layers and every third between."""
    return i < n // 8 or i >= 7 * n // 8 or (i - n // 8) % 3 == 2


@dataclass(frozen=True)
class QuantFacts:
    """What the mixture rules read of the model (llama_hparams) and of the file: `n_attention_wv`,
    its attn_v-like tensors (llama-quant.cpp `init_quantize_state_counters`)."""

    n_layer: int
    n_gqa: int
    n_expert: int
    is_70b: bool
    tied: bool
    n_attention_wv: int


def quant_facts(spec: ModelSpec, n_attention_wv: int | None = None) -> QuantFacts:
    """The facts of `spec`; `n_attention_wv` defaults to one attn_v per layer (a plain decoder)."""
    kv = max(spec.num_key_value_heads, 1)
    return QuantFacts(
        n_layer=spec.num_hidden_layers,
        n_attention_wv=spec.num_hidden_layers if n_attention_wv is None else n_attention_wv,
        n_gqa=spec.num_attention_heads // kv,
        n_expert=spec.moe.num_experts if spec.moe else 0,
        # llama.cpp's LLM_TYPE_70B: the 80-layer Llama (llama-model.cpp load_hparams).
        is_70b=spec.model_type == "llama" and spec.num_hidden_layers == 80,
        tied=spec.tie_word_embeddings,
    )


def quant_index(ftype: str, category: str, block: int, ordinal: int, m: QuantFacts) -> int:
    """The index the mixture rules read for a tensor of block `block` that is the `ordinal`-th of its
    category in the file (llama-quant.cpp `llama_tensor_get_type_impl`, the loader's tensors in layer
    order): attn_v-like tensors their running count `i_attention_wv` (a hybrid's attention layers are
    numbered among themselves); ffn_gate/up/down their block when n_expert > 1 (`layer_info` parses
    blk.N), else their running count, as ffn_down always is under the IQ1/IQ2 rules; others the block."""
    if category in ATTN_V_CATEGORIES:
        return ordinal
    if category == "ffn_down" and ftype in _IQ_LOW:
        return ordinal
    if category in ("ffn_gate", "ffn_up", "ffn_down") and m.n_expert <= 1:
        return ordinal
    return block


def tensor_type(ftype: str, category: str, i: int, m: QuantFacts, ncols: int, experts: bool = False) -> str:
    """The ggml type llama-quantize gives one tensor of a `ftype` file (llama_tensor_get_type):
    the mixture rule of its category (token_embd, output, attn_q/k/v/qkv/output, ffn_gate/up/down,
    other) at index `i` (`quant_index`; the layer for a plain decoder), then the fallback when its row
    length `ncols` is not a whole number of blocks."""
    default = FTYPES[ftype]
    kind = _mixture(ftype, default, category, i, m, ncols, experts)
    return _fallback(kind, ncols)


def _mixture(ftype: str, new: str, cat: str, i: int, m: QuantFacts, ncols: int, experts: bool) -> str:
    if ftype == "MXFP4_BF16":
        return "MXFP4" if experts else "BF16"
    if cat == "output" or (cat == "token_embd" and m.tied):
        if ftype == "MXFP4" or ncols % GGML_TYPES[new][0]:
            return "Q8_0"
        if ftype in _OUTPUT_Q5K:
            return "Q5_K"
        return new if new == "Q8_0" else "Q6_K"
    if ftype == "MXFP4":
        return "MXFP4" if experts else "Q8_0"
    if cat == "token_embd":
        if ftype in ("IQ2_XXS", "IQ2_XS", "IQ1_S", "IQ1_M"):
            return "Q2_K"
        if ftype in ("IQ2_S", "IQ2_M", "IQ3_XXS"):
            return "IQ3_S"
        if ftype in ("TQ1_0", "TQ2_0"):
            return "Q4_K"
        return new
    if ftype in _IQ_LOW:
        return _iq_low(ftype, new, cat, i, m)
    if cat in ATTN_V_CATEGORIES:
        return _attn_v(ftype, new, i, m)
    if cat == "attn_k":
        if m.n_expert == 8:
            return "Q8_0"
        return {"IQ3_XS": "IQ3_XXS", "IQ3_XXS": "IQ2_S"}.get(ftype, new)
    if cat == "attn_q":
        return {"IQ3_XS": "IQ3_XXS", "IQ3_XXS": "IQ2_S"}.get(ftype, new)
    if cat == "ffn_down":
        return _ffn_down(ftype, new, i, m)
    if cat == "attn_output":
        return _attn_output(ftype, new, m)
    if cat in ("ffn_gate", "ffn_up") and ftype == "IQ3_XS" and m.n_layer // 8 <= i < 7 * m.n_layer // 8:
        return "IQ3_XXS"
    return new


def _iq_low(ftype: str, new: str, cat: str, i: int, m: QuantFacts) -> str:
    s_or_m = ftype in ("IQ2_S", "IQ2_M")
    if cat in ATTN_V_CATEGORIES:
        if m.n_gqa >= 4 or m.n_expert >= 4:
            return "Q4_K"
        return "IQ3_S" if s_or_m else "Q2_K"
    if cat == "attn_k" and m.n_expert == 8:
        return "Q4_K"
    if cat == "ffn_down" and i < m.n_layer // 8:
        return "IQ3_S" if s_or_m else "Q2_K"
    if cat == "attn_output":
        if m.n_expert == 8:
            return "Q5_K"
        if ftype in ("IQ1_S", "IQ1_M"):
            return "IQ2_XXS"
        if s_or_m:
            return "IQ3_S"
    return new


def _attn_v(ftype: str, new: str, i: int, m: QuantFacts) -> str:
    n, gqa4 = m.n_attention_wv, m.n_gqa >= 4
    if ftype == "Q2_K":
        new = "Q4_K" if gqa4 else "Q3_K"
    elif ftype == "Q2_K_S" and gqa4:
        new = "Q4_K"
    elif ftype == "IQ3_XXS":
        new = "Q4_K" if gqa4 else "IQ3_XXS"  # with its imatrix
    elif ftype in ("IQ3_XS", "IQ3_S") and gqa4 or ftype == "IQ3_M":
        new = "Q4_K"
    elif ftype == "Q3_K_M":
        new = "Q5_K" if i < 2 else "Q4_K"
    elif ftype == "Q3_K_L" or ftype in ("IQ4_NL", "IQ4_XS") and gqa4:
        new = "Q5_K"
    elif ftype in ("Q4_K_M", "Q5_K_M") and _use_more_bits(i, n):
        new = "Q6_K"
    elif ftype == "Q4_K_S" and i < 4:
        new = "Q5_K"
    if m.is_70b and new in ("Q3_K", "Q4_K"):
        new = "Q5_K"
    return "Q8_0" if m.n_expert == 8 else new


def _ffn_down(ftype: str, new: str, i: int, m: QuantFacts) -> str:
    n = m.n_layer
    if ftype == "Q2_K":
        return "Q3_K"
    if ftype == "Q2_K_S":
        return "Q4_K" if i < n // 8 else new
    if ftype == "Q3_K_M":
        return "Q5_K" if i < n // 16 else "Q4_K"  # the Q3_K branch is Falcon's only
    if ftype == "IQ3_M" and (i < n // 8 or (m.n_expert == 8 and _use_more_bits(i, n))):
        return "Q4_K"
    if ftype == "Q3_K_L":
        return "Q5_K"
    if ftype in ("Q4_K_M", "Q5_K_M"):
        return "Q6_K" if _use_more_bits(i, n) else new
    if ftype in ("IQ4_NL", "IQ4_XS") and i < n // 8:
        return "Q5_K"  # files made without an imatrix
    if ftype == "Q4_K_S" and i < n // 8:
        return "Q5_K"
    return new


def _attn_output(ftype: str, new: str, m: QuantFacts) -> str:
    if m.n_expert == 8:
        eight = {"Q2_K", "IQ3_XS", "IQ3_XXS", "Q3_K_S", "Q3_K_M", "IQ4_NL", "Q4_K_S", "Q4_K_M", "IQ3_S"}
        return "Q5_K" if ftype in eight | {"IQ3_M", "IQ4_XS"} else new
    return {"Q2_K": "Q3_K", "IQ3_XXS": "IQ3_S", "Q3_K_M": "Q4_K", "Q3_K_L": "Q5_K", "IQ3_M": "Q4_K"}.get(
        ftype, new
    )


#: llama-quant.cpp tensor_type_fallback: a type whose block does not divide the row length.
_FALLBACK = {
    **dict.fromkeys(("IQ1_S", "IQ1_M", "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ3_XXS", "IQ3_S", "IQ4_XS"), "IQ4_NL"),
    **dict.fromkeys(("Q2_K", "Q3_K", "TQ1_0", "TQ2_0"), "Q4_0"),
    "Q4_K": "Q5_0",
    "Q5_K": "Q5_1",
    "Q6_K": "Q8_0",
}


def _fallback(kind: str, ncols: int) -> str:
    if ncols % GGML_TYPES[kind][0] == 0:
        return kind
    kind = _FALLBACK.get(kind, "F16")
    return kind if ncols % GGML_TYPES[kind][0] == 0 else "F16"
