"""The dtype rules of core/workload.py that the memory terms rest on, on synthetic configs.

vllm/config/cache.py CacheConfig.cache_dtype "auto" uses the model dtype for the KV cache; the model
dtype of a float32 checkpoint under dtype=auto is bf16 (vllm/config/model.py _resolve_auto_dtype).
"""

from __future__ import annotations

import pytest

from gpusize.core.engines import engine
from gpusize.core.workload import kv_dtype_for
from gpusize.sources.catalog import find_gpu
from tests.helpers import workload
from tests.strategies import dense, spec_of


@pytest.mark.parametrize(
    ("dtype", "checkpoint", "kv"),
    [
        ("auto", "float32", "bf16"),  # fp32 served in bf16: its cache too
        ("auto", "float16", "fp16"),
        ("fp32", "bfloat16", "fp32"),  # --dtype float32 keeps an fp32 cache
        ("fp16", "bfloat16", "fp16"),
        ("fp8", "float16", "fp16"),  # quantized weights compute, and cache, in the activation dtype
        ("int4", "float32", "bf16"),
    ],
)
def test_kv_cache_dtype_follows_the_activation_dtype(dtype: str, checkpoint: str, kv: str) -> None:
    spec = spec_of(dense(dtype=checkpoint))
    assert kv_dtype_for(spec, "auto", dtype) == kv
    assert kv_dtype_for(spec, "fp8", dtype) == "fp8"  # an explicit --kv-cache-dtype wins


def test_quantized_checkpoint_caches_in_bf16() -> None:
    spec = spec_of(dense(quantization_config={"quant_method": "fp8"}, dtype="float8"))
    work = workload(spec, 1024)
    assert (work.kv_cache_dtype, work.kv_bytes, work.weights.name) == ("bf16", 2.0, "fp8")


def test_fp32_checkpoint_fits_like_its_bf16_twin() -> None:
    """The per-GPU memory of a float32 checkpoint under dtype=auto is that of the same model in bf16."""
    gpu, evaluate = find_gpu("H100"), engine("vllm").evaluate
    a, b = (spec_of(dense(heads=8, kv_heads=2, dtype=d)) for d in ("float32", "bfloat16"))
    fp32, bf16 = evaluate(a, gpu, 1, workload(a, 4096)), evaluate(b, gpu, 1, workload(b, 4096))
    assert fp32.per_gpu == bf16.per_gpu
