"""The TensorRT-LLM start-up records of tests/data/trtllm_records.yaml and gpusize's prediction for
each, shared by tests/core/test_trtllm.py and bench/calibrate_trtllm.py."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import yaml

from gpusize.core.engines import trtllm
from gpusize.core.gpu import GpuSpec
from gpusize.sources.catalog import find_gpu
from tests.helpers import catalog_spec, workload

__all__ = ["RECORDS", "gpu_of", "predict_capacity"]

RECORDS: list[dict[str, Any]] = yaml.safe_load(
    (Path(__file__).parent / "data" / "trtllm_records.yaml").read_text()
)


def gpu_of(rec: dict[str, Any]) -> GpuSpec:
    """The record's GPU: a catalog entry, with `gpu_override` where the card is not in the catalog."""
    gpu = find_gpu(rec["gpu"])
    return replace(gpu, **rec["gpu_override"]) if rec.get("gpu_override") else gpu


def predict_capacity(rec: dict[str, Any]) -> int:
    """gpusize's KV capacity in tokens for the record's release, model, GPU and settings."""
    spec = catalog_spec(rec["catalog"])
    settings = {
        k: rec[k] for k in ("kv_cache_free_gpu_memory_fraction", "max_batch_size", "max_num_tokens") if rec[k]
    }
    work = workload(
        spec,
        rec["max_seq_len"],
        dtype=rec.get("dtype", "auto"),
        kv_dtype=rec.get("kv_cache_dtype", "auto"),
        engine_name="trtllm",
        version=rec["engine_version"],
        **settings,
    )
    capacity = trtllm.evaluate(spec, gpu_of(rec), rec["tensor_parallel_size"], work).kv_cache_capacity_tokens
    assert capacity is not None
    return capacity
