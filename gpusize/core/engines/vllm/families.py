"""Which vLLM release first serves a model family, and the KV cache dtype a release picks for it when
`--kv-cache-dtype auto` is asked (pure).

First releases (the model class registered in vllm/model_executor/models/registry.py; each read in
the wheels on PyPI with bench/engine_families.py, 2026-12-02: registered from the release named, not
in the one before it; other families' first releases: core/engines/family_support.py):
- `deepseek_v32` (DeepSeek-V3.2, DeepseekV32ForCausalLM): PR #25896 "[New Model] DeepSeek-V3.2",
  merged 2025-09-29, first in 0.11.0;
- `glm_moe_dsa` (GLM-5, 5.1, 5.2: GlmMoeDsaForCausalLM mapped onto deepseek_v2.py): PR #34124,
  merged February 2026; first in the 0.16.0 wheel (not 0.15.1);
- `deepseek_v4` (DeepseekV4ForCausalLM, vllm/models/deepseek_v4): PR #40760, opened on release day
  2026-04-24; first in the 0.20.0 wheel (not 0.19.1; vllm-project/vllm-gaudi issue #1722:
  "DeepSeek-V4-Flash-0731 requires vLLM 0.20.0+").

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

__all__ = ["FIRST_RELEASE", "family_refusal", "kv_default"]

#: The first vLLM release that serves each family whose support came after 0.10.0.
FIRST_RELEASE: dict[str, str] = {"deepseek_v32": "0.11.0", "glm_moe_dsa": "0.16.0", "deepseek_v4": "0.20.0"}
#: GLM-5.2's shared indexers (IndexCache) run natively from 0.23.0 (vllm-project/vllm-ascend issue
#: #10583: "IndexCache原生支持需要更新VLLM版本到0.23.0"; earlier releases build an indexer in every
#: layer, which the checkpoint does not hold for its shared layers).
INDEX_CACHE_RELEASE = "0.23.0"

#: The releases in which `auto` means fp8_ds_mla for a DeepSeek Sparse Attention model.
_FP8_DEFAULT = ("0.11.0", "0.11.0")


def _version(text: str) -> Version:
    parsed = parse_version(text)
    assert parsed is not None
    return parsed


def family_refusal(spec: ModelSpec, version: Version) -> str | None:
    """vLLM's refusal of a family it does not know yet, naming the first release that does."""
    first = FIRST_RELEASE.get(spec.family)
    if first is not None and any(layer.shares_indexer for layer in spec.layers):
        first = INDEX_CACHE_RELEASE
    if first is None or version >= _version(first):
        return None
    return (
        f"vLLM {version} does not support {spec.architecture} (model_type {spec.family}): "
        f"the first release that does is {first}; pass --engine-version {first} or later"
    )


def kv_default(spec: ModelSpec, version: Version, gpu: GpuSpec | None = None) -> str | None:
    """The KV dtype `auto` resolves to for this model in this release, or None (the activation dtype);
    the same on every GPU (`gpu` unread)."""
    if spec.compressed is not None:
        return "fp8"
    sparse = spec.mla is not None and spec.mla.indexer is not None
    low, high = (_version(v) for v in _FP8_DEFAULT)
    return "fp8" if sparse and low <= version <= high else None
