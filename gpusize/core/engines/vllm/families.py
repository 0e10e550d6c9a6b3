"""The KV cache dtype a vLLM release picks for a model family when `--kv-cache-dtype auto` is asked
(pure). Which release first serves a family: core/engines/family_support.py.

Default KV dtype of DeepSeek Sparse Attention models (vllm/model_executor/models/config.py
`DeepseekV32ForCausalLM.verify_and_update_config`): in 0.11.0 `auto` (and any fp8) became vLLM's
`fp8_ds_mla` format (PR #25988, "we use a custom fp8 format as default (i.e. auto)", code read at
vllm-project/vllm commit 0144dd5b); from 0.11.1 only an fp8 request does, and `auto` keeps the
bf16 latent (the rule reads `if cache_config.cache_dtype.startswith("fp8")`, commit 1936cf38, and
FLASHMLA_SPARSE lists "auto" and "bfloat16" among its cache dtypes, commit 008a0c31).

DeepSeek-V4 (vllm/models/deepseek_v4/attention.py `_resolve_dsv4_kv_cache_dtype`): the FlashMLA
layout (Hopper) stores fp8_ds_mla only, and `auto` resolves to it (PR #45091, June 2026: "treat auto
as fp8"; before it `auto` failed an assert, so the launch line names --kv-cache-dtype fp8);
FlashInfer's plain-row path (Blackwell SM100) keeps `auto` as bf16 rows. gpusize models the fp8
default; pass --kv-dtype bf16 for a Blackwell plain-row run.
"""

from __future__ import annotations

from gpusize.core.gpu import GpuSpec
from gpusize.core.releases import Version, parse_version
from gpusize.core.spec import ModelSpec

__all__ = ["kv_default"]

#: The releases in which `auto` means fp8_ds_mla for a DeepSeek Sparse Attention model.
_FP8_DEFAULT = ("0.11.0", "0.11.0")


def _version(text: str) -> Version:
    parsed = parse_version(text)
    assert parsed is not None
    return parsed


def kv_default(spec: ModelSpec, version: Version, gpu: GpuSpec | None = None) -> str | None:
    """The KV dtype `auto` resolves to for this model in this release, or None (the activation dtype);
    the same on every GPU (`gpu` unread)."""
    if spec.compressed is not None:
        return "fp8"
    sparse = spec.mla is not None and spec.mla.indexer is not None
    if not sparse:
        return None
    low, high = (_version(v) for v in _FP8_DEFAULT)
    return "fp8" if low <= version <= high else None
