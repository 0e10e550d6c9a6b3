"""`fit --engine transformers` against real PyTorch memory: the H200 measurements in
tests/data/reference/measured (torch 2.11.0+cu130, transformers 5.17, one H200; README there explains
every field), split before anything was fitted into lines used for calibration (the CUDA context
constant) and held-out lines the model never saw; and the published inference records of
tests/data/torch/published.yaml.

Tolerances follow issue 12: allocated peak within 3% mean (worst 10%), device level (reserved +
context, what nvidia-smi shows) within 5% mean. Run `python -m tests.core.test_torch_inference` for the
table of bench/train_calibration.md.
"""

from __future__ import annotations

import functools
import json
from dataclasses import replace
from typing import Any

import pytest
import yaml

from gpusize.core import allocator, runtime
from gpusize.core.engines import hf
from gpusize.core.engines.hf_prefill import attention_implementation
from gpusize.core.parse import parse_config
from gpusize.core.spec import ModelSpec
from gpusize.core.workload import EngineSettings, Request, Workload, resolve
from gpusize.sources.catalog import find_gpu, find_model

try:
    from tests.conftest import FIXTURES, REFERENCE
except ImportError:  # run as a script from the repository root
    from conftest import FIXTURES, REFERENCE  # type: ignore[no-redef]

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


@pytest.mark.parametrize("rec", INFER, ids=[f"{r['name']}-{r['ctx']}x{r['batch']}" for r in INFER])
def test_h200_line(rec: dict[str, Any]) -> None:
    alloc, device = errors(rec)
    assert abs(alloc) <= 0.03, alloc
    assert abs(device) <= 0.05, device


@pytest.mark.parametrize("held_out", [False, True], ids=["calibration", "holdout"])
def test_h200_accuracy(held_out: bool) -> None:
    """Issue 12's targets, on each split: allocated within 3% mean (worst 10%), device within 5% mean."""
    chosen = [r for r in INFER if (key(r) in HOLDOUT) == held_out]
    assert len(chosen) == (3 if held_out else 6)
    alloc, device = zip(*(errors(r) for r in chosen), strict=True)
    assert sum(map(abs, alloc)) / len(alloc) <= 0.03 and max(map(abs, alloc)) <= 0.10
    assert sum(map(abs, device)) / len(device) <= 0.05


def test_the_cuda_context_is_the_calibration_lines_largest() -> None:
    """smi_used_mib - peak_reserved over the calibration lines (inference and training alike): 695 MiB
    for the first case of the process, 767-775 MiB after; the constant is the largest."""
    calibration = [r for r in INFER if key(r) not in HOLDOUT]
    gaps = [r["smi_used_mib"] * MIB - r["peak_reserved"] for r in calibration]
    assert max(gaps) == runtime.TORCH_CUDA_CONTEXT_BYTES


def test_sliding_window_layers_hold_the_whole_prompt_at_the_prefill_peak() -> None:
    """transformers 5 keeps only the window for sliding layers after decoding starts, but the prefill
    keeps every layer's full-prompt K/V alive (the window is a view): Mistral-7B at 16k held 2 GiB
    right after prefill (after_prefill - weights_alloc = 2,147,695,104 B)."""
    rec = next(r for r in INFER if r["name"].startswith("mistralai"))
    p = predict(rec)
    assert p.kv_cache_bytes == 32 * 16384 * 2 * 8 * 128 * 2  # 2 GiB
    assert abs(p.kv_cache_bytes - (rec["after_prefill"] - rec["weights_alloc"])) < 4 * MIB


def test_masks_per_attention_implementation() -> None:
    """gemma-3 at 32k: SDPA materializes a boolean mask for the sliding layers and its additive bf16
    copy (1 + 2 GiB) and repeats K/V; flash_attention_2 materializes nothing (its peak moves to the MLP,
    1.3 GiB lower); eager makes the scores."""
    spec = config_spec("google__gemma-3-4b-it")

    def allocated(**settings: Any) -> int:
        work = workload(spec, 32768, 1, **settings)
        return hf.inference_peak(spec, 64 * MIB, work).allocated_peak_bytes

    sdpa, flash = allocated(), allocated(attn_implementation="flash_attention_2")
    assert 1 * GIB < sdpa - flash < 4 * GIB
    assert allocated(attn_implementation="eager") > sdpa + 10 * GIB
    gpt_oss = parse_config(find_model("gpt-oss-20b").config)
    assert attention_implementation(gpt_oss, None) == "eager"  # _supports_sdpa = False in 5.17
    assert attention_implementation(spec, None) == "sdpa"


def test_expandable_segments_leave_less_cache() -> None:
    spec = config_spec("meta-llama__Llama-3.1-8B")
    default = hf.inference_peak(spec, 64 * MIB, workload(spec, 32768, 1))
    grown = hf.inference_peak(spec, 64 * MIB, workload(spec, 32768, 1, expandable_segments=True))
    assert grown.allocated_peak_bytes == default.allocated_peak_bytes
    assert grown.reserved_peak_bytes < default.reserved_peak_bytes


def test_the_fit_is_decided_on_the_device_figure() -> None:
    """A GPU whose visible memory holds the allocated peak + context but not the allocator's cache."""
    rec = next(r for r in INFER if key(r) == ("meta-llama__Llama-3.1-8B", 32768, 1))
    spec = config_spec(rec["name"])
    p = predict(rec)
    h200 = find_gpu("H200-SXM")
    visible = p.allocated_peak_bytes + runtime.TORCH_CUDA_CONTEXT_BYTES + 64 * MIB
    small = replace(h200, cuda_visible_gib=visible / GIB)
    cand = hf.evaluate(spec, small, 1, workload(spec, 32768, 1))
    assert cand.per_gpu and cand.per_gpu.allocated_peak_bytes == p.allocated_peak_bytes
    assert not cand.fits and "on the device" in (cand.reason or "")
    roomy = hf.evaluate(spec, h200, 1, workload(spec, 32768, 1))
    assert roomy.fits and roomy.per_gpu and roomy.per_gpu.device_bytes == p.device_bytes


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


@pytest.mark.parametrize("rid, name, dtype", LITGPT_GENERATE, ids=[r[0] for r in LITGPT_GENERATE])
def test_published_generate(rid: str, name: str, dtype: str) -> None:
    assert abs(generate_error(rid, name, dtype)) < 0.05


def test_eager_attention_at_23k_does_not_fit_an_a100_80gb() -> None:
    """hf-discussion-sciphi-mistral7b-32k-23k-oom (tests/data/torch/published.yaml): Mistral-7B-32k with
    the eager attention of 2023 ran out of memory on an 80 GB A100 at ~23k tokens, trying to allocate
    one 50.64 GiB score tensor."""
    spec = config_spec("mistralai__Mistral-7B-v0.1")
    work = workload(spec, 23_000, 1, attn_implementation="eager", transformers_version="4")
    assert not hf.evaluate(spec, find_gpu("A100-80GB"), 1, work).fits
    sdpa = workload(spec, 23_000, 1)
    assert hf.evaluate(spec, find_gpu("A100-80GB"), 1, sdpa).fits


if __name__ == "__main__":  # the inference table of bench/train_calibration.md
    print("| model | ctx x batch | split | allocated GiB meas / pred | err | device GiB meas / pred | err |")
    print("|---|---|---|---:|---:|---:|---:|")
    for r in INFER:
        p = predict(r)
        a, d = errors(r)
        split = "holdout" if key(r) in HOLDOUT else "calibration"
        print(
            f"| {r['name']} | {r['ctx']} x {r['batch']} | {split} | {r['peak'] / GIB:.2f} / "
            f"{p.allocated_peak_bytes / GIB:.2f} | {a:+.1%} | {r['smi_used_mib'] / 1024:.2f} / "
            f"{p.device_bytes / GIB:.2f} | {d:+.1%} |"
        )
