"""The H200 PyTorch inference measurements of tests/data/reference/measured and the published LitGPT
generate records, and gpusize's transformers-engine prediction for each.

Shared by the inference tests (tests/core/test_torch_inference.py) and the calibration
(bench/calibrate_torch.py), so both split, read and predict the lines the same way.
"""

from __future__ import annotations

import functools
import json
from typing import Any

import yaml

from gpusize.core import allocator
from gpusize.core.engines import hf
from gpusize.core.parse import parse_config
from gpusize.core.spec import ModelSpec
from gpusize.core.workload import EngineSettings, Request, Workload, resolve
from tests.conftest import FIXTURES, REFERENCE

GIB, MIB = 1 << 30, 1 << 20
MEASURED = REFERENCE / "measured" / "h200-torch-2.11.jsonl"
#: Held out before any constant was set from these lines: dense with a batch, a 14B dense model with a
#: fused MLP, and the MoE. The other six set the CUDA context constant.
HOLDOUT = {
    ("meta-llama__Llama-3.1-8B", 4096, 8),
    ("microsoft__phi-4", 16384, 1),
    ("Qwen__Qwen3-30B-A3B", 4096, 1),
}


def lines(kind: str) -> list[dict[str, Any]]:
    out = []
    for raw in MEASURED.read_text().splitlines():
        rec = json.loads(raw)
        if rec["kind"] == kind:
            out.append(rec)
    return out


def key(rec: dict[str, Any]) -> tuple[str, int, int]:
    return rec["name"], rec["ctx"], rec["batch"]


@functools.cache
def config_spec(name: str) -> ModelSpec:
    data = json.loads((REFERENCE / "configs" / f"{name}.json").read_text())
    return parse_config(data["config"])


def workload(spec: ModelSpec, ctx: int, batch: int, **settings: Any) -> Workload:
    engine = EngineSettings(name="transformers", **settings)
    return resolve(
        spec, Request(context_tokens=ctx, batch=batch, engine=engine), hf.ENGINE.settings, hf.ENGINE.releases
    )


def predict(rec: dict[str, Any]) -> hf.InferencePeak:
    spec = config_spec(rec["name"])
    work = workload(spec, rec["ctx"], rec["batch"])
    return hf.inference_peak(spec, allocator.cublas_workspace_bytes("Hopper"), work)


def errors(rec: dict[str, Any]) -> tuple[float, float]:
    """(allocated peak, device figure) relative errors against max_memory_allocated and nvidia-smi."""
    p = predict(rec)
    return p.allocated_peak_bytes / rec["peak"] - 1, p.device_bytes / (rec["smi_used_mib"] * MIB) - 1


INFER = lines("infer")


#: LitGPT's `generate` tables (tests/data/torch/published.yaml, A100 40GB, bf16 or NF4 + double
#: quantization, a short prompt): max_memory_allocated in GB (1e9). LitGPT runs its own model code;
#: with a short prompt the weights dominate and the transformers engine stands in (int4 = 0.5156 B per
#: weight against NF4 + double quantization's 0.5159).
LITGPT_GENERATE = [
    ("litgpt-a100-infer-l2-7b-bf16", "meta-llama__Llama-2-7b-hf", "auto"),
    ("litgpt-a100-infer-l2-13b-bf16", "meta-llama__Llama-2-13b-hf", "auto"),
    ("litgpt-a100-infer-l2-70b-nf4dq", "meta-llama__Llama-2-70b-hf", "int4"),
]


def generate_error(rid: str, name: str, dtype: str) -> float:
    """Relative error of the allocated peak against a LitGPT generate record (512-token prompt)."""
    records = {r["id"]: r for r in yaml.safe_load((FIXTURES / "torch" / "published.yaml").read_text())}
    measured = records[rid]["measured"]["allocated_peak_gib"] * 1e9
    path = REFERENCE / "configs" / f"{name}.json"
    path = path if path.exists() else FIXTURES / "torch" / f"{name}.json"
    spec = parse_config(json.loads(path.read_text())["config"])
    engine = EngineSettings(name="transformers")
    work = resolve(
        spec,
        Request(context_tokens=512, batch=1, dtype=dtype, engine=engine),
        hf.ENGINE.settings,
        hf.ENGINE.releases,
    )
    peak = hf.inference_peak(spec, allocator.cublas_workspace_bytes("Ampere"), work)
    return float(peak.allocated_peak_bytes / measured - 1)
