"""ModelSpec: the architecture facts of a model, and its parameter counts by role (pure values).

`core.parse.parse_config` builds a ModelSpec from a Hugging Face config.json; every variant spelling
is resolved there and nothing downstream reads raw dicts. Field names follow the Transformers config
names so anyone can check them against a file. The layers and their kinds' specs live in `layers`,
the counts in `counts`, ModelSpec itself in `model`; every name is importable from here.
"""

from __future__ import annotations

from gpusize.core.spec.counts import ParamCounts, astuple_counts
from gpusize.core.spec.layers import (
    KV_MIXERS,
    CompressedAttentionSpec,
    Ffn,
    IndexerSpec,
    KimiDeltaSpec,
    LayerSpec,
    LinearAttentionSpec,
    MambaSpec,
    Mixer,
    MLASpec,
    MoESpec,
)
from gpusize.core.spec.model import ModelSpec, QuantSpec, VisionSpec

__all__ = [
    "KV_MIXERS",
    "CompressedAttentionSpec",
    "Ffn",
    "IndexerSpec",
    "KimiDeltaSpec",
    "LayerSpec",
    "LinearAttentionSpec",
    "MLASpec",
    "MambaSpec",
    "Mixer",
    "ModelSpec",
    "MoESpec",
    "ParamCounts",
    "QuantSpec",
    "VisionSpec",
    "astuple_counts",
]
