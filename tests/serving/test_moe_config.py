"""Tuned fused-MoE Triton configs (serving.moe_config): the engines' file-name rule against file names
the release wheels ship, which records' layers have one, and the tried per-expert term that reads it."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gpusize.serving import calibrated, moe_config, throughput
from gpusize.serving.moe_config_files import SHIPPED
from gpusize.sources.catalog import find_gpu
from tests.helpers import catalog_spec, workload

H100, H200 = find_gpu("H100-SXM"), find_gpu("H200-SXM")


@pytest.mark.parametrize(
    ("shipped", "args"),
    [
        # vLLM 0.11.0 wheel, vllm/model_executor/layers/fused_moe/configs/: DeepSeek-R1 at TP=8
        # (256 experts, 2048 / 8 wide, block-scaled FP8) and Qwen3-Next at TP=8 (512 x 512 / 8)
        (
            "E=256,N=256,device_name=NVIDIA_H200,dtype=fp8_w8a8,block_shape=[128,128].json",
            (256, 256, "NVIDIA_H200", "fp8_w8a8", (128, 128)),
        ),
        ("E=512,N=64,device_name=NVIDIA_H200.json", (512, 64, "NVIDIA_H200", None, None)),
        (
            "E=512,N=128,device_name=NVIDIA_H100_80GB_HBM3.json",
            (512, 128, "NVIDIA_H100_80GB_HBM3", None, None),
        ),
        # SGLang 0.5.3 wheel, sglang/srt/layers/moe/fused_moe_triton/configs/: the block shape with a space
        (
            "triton_3_1_0/E=256,N=256,device_name=NVIDIA_H200,dtype=fp8_w8a8,block_shape=[128, 128].json",
            (256, 256, "NVIDIA_H200", "fp8_w8a8", (128, 128)),
        ),
        ("triton_3_4_0/E=512,N=256,device_name=NVIDIA_H200.json", (512, 256, "NVIDIA_H200", None, None)),
    ],
)
def test_file_name_rule_matches_shipped_names(shipped: str, args: tuple) -> None:  # type: ignore[type-arg]
    assert moe_config.config_file_name(*args) == moe_config.normalise(shipped.rsplit("/", 1)[-1])


def test_shipped_lists_hold_the_worked_examples() -> None:
    """PR 10404's H200 Qwen3-Next configs (TP 2/4/8: N = 256/128/64) arrived between SGLang 0.5.2
    and 0.5.3; vLLM 0.11.0 has DeepSeek-R1's H200 FP8 file, and no GLM-4.6 (E=160, N=192) H200 file."""
    for n in (256, 128, 64):
        name = f"E=512,N={n},device_name=NVIDIA_H200"
        assert name in SHIPPED["sglang", "0.5.3"]
        assert name not in SHIPPED["sglang", "0.5.2"]
    assert (
        "E=256,N=256,device_name=NVIDIA_H200,dtype=fp8_w8a8,block_shape=[128,128]"
        in SHIPPED["vllm", "0.11.0"]
    )
    assert not any(k.startswith("E=160,N=192,device_name=NVIDIA_H200") for k in SHIPPED["vllm", "0.11.0"])


def test_release_key_takes_the_newest_read_release_at_or_before() -> None:
    assert moe_config.release_key("sglang", "0.5.3") == ("sglang", "0.5.3")
    assert moe_config.release_key("sglang", "0.5.7") == ("sglang", "0.5.4.post2")
    assert moe_config.release_key("vllm", None) == ("vllm", "0.33.0")
    assert moe_config.release_key("llamacpp", None) is None


@pytest.mark.parametrize(
    ("model", "engine", "version", "gpu", "tp", "dtype", "expected"),
    [
        ("Qwen3-Next-80B-A3B-Instruct", "sglang", "0.5.3", H200, 2, "auto", True),
        ("Qwen3-Next-80B-A3B-Instruct", "sglang", "0.5.3", H200, 8, "auto", True),
        ("Qwen3-Next-80B-A3B-Instruct", "sglang", "0.5.2", H200, 2, "auto", False),  # PR 10404's "Before"
        ("Qwen3-Next-80B-A3B-Instruct", "sglang", "0.5.8", H100, 2, "fp8", False),  # PR 18195's "Before"
        ("GLM-4.6", "vllm", "0.11.0", H200, 8, "auto", False),
        ("DeepSeek-R1", "vllm", "0.11.0", H200, 8, "auto", True),
        ("gpt-oss-120b", "vllm", "0.11.0", H100, 1, "auto", None),  # MXFP4: matmul_ogs, no file
        ("Qwen3-8B", "vllm", "0.11.0", H100, 1, "auto", None),  # dense
    ],
)
def test_tuned_config_per_record_setting(
    model: str, engine: str, version: str, gpu: object, tp: int, dtype: str, expected: bool | None
) -> None:
    spec = catalog_spec(model)
    work = workload(spec, 4096, dtype=dtype, engine_name=engine, version=version)
    assert moe_config.tuned_config(spec, work, gpu, tp) is expected  # type: ignore[arg-type]


def test_tuned_term_changes_only_tuned_layers(monkeypatch: pytest.MonkeyPatch) -> None:
    """With `expert_tuned_s` zero (the published constants) every expert run costs `expert_s`; set,
    a layer with a tuned config pays it instead: the step moves by the difference times the experts
    run, and a layer without one does not move."""
    spec = catalog_spec("Qwen3-Next-80B-A3B-Instruct")
    speed = calibrated.ENGINE_SPEED["sglang"]
    assert speed.expert_tuned_s == 0.0
    tuned = workload(spec, 3000, engine_name="sglang", version="0.5.3")
    default = workload(spec, 3000, engine_name="sglang", version="0.5.2")
    base_t = throughput.decode_step(spec, tuned, H200, 2, 8, 2000)
    base_d = throughput.decode_step(spec, default, H200, 2, 8, 2000)
    assert base_t is not None and base_d is not None
    assert base_t.step_s == pytest.approx(base_d.step_s)
    monkeypatch.setitem(calibrated.ENGINE_SPEED, "sglang", replace(speed, expert_tuned_s=0.5e-6))
    new_t = throughput.decode_step(spec, tuned, H200, 2, 8, 2000)
    new_d = throughput.decode_step(spec, default, H200, 2, 8, 2000)
    assert new_t is not None and new_d is not None
    runs = throughput.experts_touched(spec, 8) * 512 * sum(1 for layer in spec.layers if layer.ffn == "moe")
    assert base_t.step_s - new_t.step_s == pytest.approx((speed.expert_s - 0.5e-6) * runs, rel=1e-9)
    assert new_d.step_s == pytest.approx(base_d.step_s, rel=1e-12)
