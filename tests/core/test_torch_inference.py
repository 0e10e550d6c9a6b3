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

from dataclasses import replace
from typing import Any

import pytest

from gpusize.core import runtime
from gpusize.core.engines import hf
from gpusize.core.engines.hf_prefill import attention_implementation
from gpusize.core.parse import parse_config
from gpusize.sources.catalog import find_gpu, find_model
from tests.torch_inference_records import (
    GIB,
    HOLDOUT,
    INFER,
    LITGPT_GENERATE,
    MIB,
    config_spec,
    errors,
    generate_error,
    key,
    predict,
    workload,
)


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
