"""The vLLM start-up records of tests/data/engine_records.yaml and gpusize's prediction for each.

Shared by the per-release conformance tests (tests/core/test_vllm_releases.py) and the calibration
(bench/calibrate_vllm.py), so both read the records and predict them the same way.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from gpusize.core.engines import prepare, vllm
from gpusize.core.gpu import GpuSpec
from gpusize.core.parse import parse_config
from gpusize.core.plan import Candidate
from gpusize.core.spec import ModelSpec
from gpusize.core.workload import EngineSettings, Request, Workload
from gpusize.sources.catalog import find_gpu, find_model

GIB = 2**30
RECORDS_FILE = Path(__file__).parent / "data" / "engine_records.yaml"


def load_records() -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = yaml.safe_load(RECORDS_FILE.read_text())
    return records


def spec_of(rec: dict[str, Any]) -> ModelSpec:
    return parse_config(find_model(rec["catalog"]).config)


def workload_of(rec: dict[str, Any], spec: ModelSpec) -> Workload:
    settings = EngineSettings(
        name="vllm",
        version=rec["engine_version"],
        gpu_memory_utilization=rec["gpu_memory_utilization"],
        max_num_seqs=rec["max_num_seqs"],
        max_num_batched_tokens=rec["max_num_batched_tokens"],
        enforce_eager=rec["enforce_eager"],
        enable_expert_parallel=rec["enable_expert_parallel"],
        flashinfer_sampler=rec.get("flashinfer_sampler", False),
    )
    request = Request(
        context_tokens=rec["max_model_len"],
        dtype=rec["dtype"],
        kv_dtype=rec["kv_cache_dtype"],
        engine=settings,
    )
    return prepare(spec, request)


def predict(rec: dict[str, Any]) -> Candidate:
    spec = spec_of(rec)
    return vllm.evaluate(spec, find_gpu(rec["gpu"]), rec["tensor_parallel_size"], workload_of(rec, spec))


@dataclass(frozen=True)
class Residual:
    """What the log leaves for everything but weights and KV (budget - logged weights - logged KV), and
    gpusize's terms for it, in GiB: the quantity the calibration fits."""

    logged: float
    sampler_copy: float  # one fp32 copy of the sampler logits
    sampler_copies: float  # the copies the model uses for this release and sampler
    rest: float  # everything else gpusize predicts (hidden, MoE, encoder, non-torch, graphs in budget)


def residual(rec: dict[str, Any]) -> Residual | None:
    measured = rec["measured"]
    if "weights_gib" not in measured or "available_kv_cache_gib" not in measured:
        return None
    spec = spec_of(rec)
    work = workload_of(rec, spec)
    gpu: GpuSpec = find_gpu(rec["gpu"])
    tp = rec["tensor_parallel_size"]
    beh = vllm.behaviour(work.release.version, spec)
    limits = vllm.scheduler_limits(gpu, work, beh)
    utilization = vllm.utilization(work)
    budget = math.ceil(gpu.visible_bytes * utilization) / GIB
    logged = budget - measured["weights_gib"] - measured["available_kv_cache_gib"]
    fused = work.weights.name != "mxfp4"
    flashinfer = work.engine.flashinfer_sampler
    ep = work.engine.enable_expert_parallel
    acts = vllm.activation_bytes(spec, limits, tp, fused, beh, ep, flashinfer) / GIB
    copy = min(limits.max_num_seqs, limits.max_num_batched_tokens) * spec.vocab_size * 4 / GIB
    if flashinfer and beh.sort_sampler:
        copies = vllm.FLASHINFER_SAMPLER_COPIES
    else:
        copies = vllm.SAMPLER_LOGITS_COPIES + (vllm.SORT_SAMPLER_EXTRA_COPIES if beh.sort_sampler else 0)
    graphs = 0 if work.engine.enforce_eager else vllm.cuda_graph_estimate_bytes(spec, limits, tp) / GIB
    overhead = vllm.non_torch_bytes(gpu, tp, beh) / GIB + (graphs if beh.graphs_in_budget else 0)
    return Residual(logged, copy, copies, acts - copies * copy + overhead)
