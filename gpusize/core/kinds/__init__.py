"""Layer kinds: what each kind of token mixer owns, in one place.

A decoder layer is a composition of a mixer kind and an FFN kind (`core.spec.LayerSpec`). Each mixer
kind is one module of this package that answers, for one layer of a parsed model:

- `params(spec, layer)`: its weight tensors by role (`ParamCounts`), as the Transformers modeling
  class creates them;
- `kv_width(spec, layer, kv_heads)`: elements one token keeps in this layer's KV cache when the layer
  holds `kv_heads` KV heads on one GPU (0 for a recurrent kind), as vLLM, SGLang and llama.cpp cache it;
- `state_elements(spec, layer)`: elements of the constant per-sequence state (conv window and
  recurrent state) of the whole layer, before any tensor-parallel split (0 for attention kinds);
- `tp_problem(spec, layer, tp)`: why tensor-parallel size `tp` cannot split this kind, or None;
- `state_bytes(spec, layer, tp, conv_bytes, ssm_bytes)`: bytes of that state on one GPU of a
  `tp`-way split, as vLLM shapes it (mamba_utils `MambaStateShapeCalculator`): the conv window in
  `conv_bytes` per element and the recurrent state in `ssm_bytes` (or the kind's own fixed dtype);
- `attention_projections`: True when the layer has softmax attention's q, k, v and o projections
  (GQA/MHA/MQA: what LoRA wraps as qkv_proj / o_proj and GGUF writes as attn_q/k/v/output); MLA's
  low-rank projections are not these;
- `parts`: the single-mixer kinds a parallel hybrid layer runs side by side (Falcon-H1: attention
  and mamba), empty for a kind that is one mixer.

A new architecture made of known kinds needs a parse rule (`core.parse`), nothing here; a new kind
is a module here registered in `MIXERS`. Callers never branch on a kind's name: they ask its kind.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Protocol, runtime_checkable

from gpusize.core.kinds import (
    attention,
    attention_mamba,
    compressed_mla,
    gated_deltanet,
    kimi_delta,
    mamba2,
    mla,
    mla_indexer,
    none,
)
from gpusize.core.spec import LayerSpec, Mixer, ModelSpec, ParamCounts

__all__ = [
    "MIXERS",
    "MixerKind",
    "PackedKV",
    "has_attention_projections",
    "kv_bytes_per_token",
    "mixer_kind",
    "mixer_parts",
    "state_elements",
    "tp_problem",
]


class MixerKind(Protocol):
    @property
    def per_token_kv(self) -> bool:
        """True when the kind keeps K/V per token (the engine's paged KV cache holds it)."""
        ...

    @property
    def attention_projections(self) -> bool:
        """True when the layer has softmax attention's q, k, v and o projections."""
        ...

    @property
    def parts(self) -> tuple[Mixer, ...]:
        """The single-mixer kinds run side by side in the layer; () for one mixer."""
        ...

    def params(self, spec: ModelSpec, layer: LayerSpec) -> ParamCounts: ...

    def kv_width(self, spec: ModelSpec, layer: LayerSpec, kv_heads: int) -> int: ...

    def state_elements(self, spec: ModelSpec, layer: LayerSpec) -> int: ...

    def tp_problem(self, spec: ModelSpec, layer: LayerSpec, tp: int) -> str | None: ...

    def state_bytes(
        self, spec: ModelSpec, layer: LayerSpec, tp: int, conv_bytes: float, ssm_bytes: float
    ) -> int: ...


@runtime_checkable
class PackedKV(Protocol):
    """A kind whose cache is a packed byte format, not elements x dtype bytes (DeepSeek Sparse
    Attention's fp8_ds_mla latent + fp8 indexer key)."""

    def packed_kv_bytes(self, spec: ModelSpec, layer: LayerSpec, kv_heads: int, kv_bytes: float) -> int: ...


#: Every mixer kind by the name a LayerSpec carries. `attention` layers of a model with an MLA spec
#: are MLA layers (DeepSeek, Kimi-K2: every attention layer of the model has the latent form), and
#: MLA layers of a model with a sparse-attention indexer are `mla_indexer` layers (DeepSeek-V3.2, GLM-5);
#: attention layers of a model with a `compressed` spec are DeepSeek-V4's `compressed_mla` layers.
MIXERS: dict[str, MixerKind] = {
    "attention": attention.KIND,
    "mla": mla.KIND,
    "mla_indexer": mla_indexer.KIND,
    "compressed_mla": compressed_mla.KIND,
    "linear_attention": gated_deltanet.KIND,
    "mamba": mamba2.KIND,
    "attention_mamba": attention_mamba.KIND,
    "kimi_delta": kimi_delta.KIND,
    "none": none.KIND,
}


#: The kinds with a packed cache format, by identity, found once: isinstance() on a runtime Protocol
#: walks the protocol's attributes on every call (about half of `which` over the catalog, measured
#: with cProfile on Python 3.11; bench/RESULTS.md).
_PACKED: dict[int, PackedKV] = {id(k): k for k in MIXERS.values() if isinstance(k, PackedKV)}


def mixer_kind(spec: ModelSpec, layer: LayerSpec) -> MixerKind:
    """The kind that answers for this layer's mixer."""
    if layer.mixer == "attention" and spec.compressed is not None:
        return MIXERS["compressed_mla"]
    if layer.mixer == "attention" and spec.mla is not None:
        return MIXERS["mla" if spec.mla.indexer is None else "mla_indexer"]
    return MIXERS[layer.mixer]


def has_attention_projections(spec: ModelSpec, layer: LayerSpec) -> bool:
    """True when this layer has softmax attention's q, k, v and o projections: attention layers and
    the attention half of Falcon-H1's layers; not MLA, linear attention, Mamba or none."""
    return mixer_kind(spec, layer).attention_projections


def mixer_parts(spec: ModelSpec, layer: LayerSpec) -> tuple[LayerSpec, ...]:
    """The layer as single-mixer layers: a parallel hybrid's halves in order (Falcon-H1: its
    attention, then its Mamba mixer, each with the layer's other fields), else the layer itself."""
    parts = mixer_kind(spec, layer).parts
    return tuple(replace(layer, mixer=part) for part in parts) if parts else (layer,)


def kv_bytes_per_token(spec: ModelSpec, layer: LayerSpec, kv_heads: int, kv_bytes: float) -> int:
    """Bytes one token keeps in this layer's cache on a GPU holding `kv_heads` KV heads, at
    `kv_bytes` per element: the kind's packed format where it has one, else width x bytes."""
    kind = mixer_kind(spec, layer)
    packed = _PACKED.get(id(kind))
    if packed is not None:
        return packed.packed_kv_bytes(spec, layer, kv_heads, kv_bytes)
    return int(kind.kv_width(spec, layer, kv_heads) * kv_bytes)


def state_elements(spec: ModelSpec) -> int:
    """Constant per-sequence state elements of every recurrent layer, before any TP split."""
    return sum(mixer_kind(spec, layer).state_elements(spec, layer) * n for layer, n in spec.layer_counts)


def tp_problem(spec: ModelSpec, tp: int) -> str | None:
    """The first reason a layer kind of this model refuses tensor-parallel size `tp`, or None."""
    for layer, _ in spec.layer_counts:
        problem = mixer_kind(spec, layer).tp_problem(spec, layer, tp)
        if problem:
            return problem
    return None
