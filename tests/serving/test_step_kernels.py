"""The kernels a decode step launches beyond a dense attention layer's (`serving.step_kernels`): each
count as the engines' forward passes run it, on synthetic configs (a rule no record pins alone)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gpusize.core.spec import ModelSpec
from gpusize.core.spec.layers import MLASpec, MoESpec
from gpusize.core.workload import Workload
from gpusize.serving import calibrated, step_kernels, throughput
from gpusize.serving.step_kernels import extra_kernels
from gpusize.sources.catalog import find_gpu
from tests.helpers import catalog_spec, workload


def _work(spec: ModelSpec, dtype: str = "auto") -> Workload:
    return workload(spec, 4096, dtype=dtype)


def test_a_dense_attention_layer_adds_nothing() -> None:
    """Llama-3.1-8B: GQA without q/k norms, a dense MLP, 16-bit weights: what `layer_s` prices."""
    spec = catalog_spec("Llama-3.1-8B")
    assert extra_kernels(spec, _work(spec)) == 0


def test_qk_norms_add_two_kernels_a_layer() -> None:
    """Qwen3 normalizes q and k per head (vllm/model_executor/models/qwen3.py: q_norm, k_norm)."""
    spec = catalog_spec("Qwen3-8B")
    assert spec.qk_norm != "none"
    assert extra_kernels(spec, _work(spec)) == step_kernels.QK_NORM_KERNELS * len(spec.layers)


def test_fp8_weights_quantize_each_gemm_input() -> None:
    """FP8 weights: one activation quantization per GEMM (QKV, O, gate_up, down)."""
    spec = catalog_spec("Llama-3.1-8B")
    assert extra_kernels(spec, _work(spec, "fp8")) == 4 * len(spec.layers)


def test_a_moe_layer_adds_routing_and_combine() -> None:
    """Qwen3-30B-A3B: every layer MoE, no shared expert: router GEMM, top-k, moe_align_block_size
    and moe_sum beside the fused kernel's two GEMMs and activation (+4), and the q/k norms (+2)."""
    spec = catalog_spec("Qwen3-30B-A3B")
    per_layer = step_kernels.MOE_FFN_KERNELS + step_kernels.QK_NORM_KERNELS
    assert extra_kernels(spec, _work(spec)) == per_layer * len(spec.layers)


@pytest.mark.parametrize("gate", [False, True])
def test_a_shared_expert_and_its_gate(gate: bool) -> None:
    """A shared expert is a dense MLP beside the routed ones (+3); Qwen2-MoE's sigmoid gate on it +2."""
    base = catalog_spec("Qwen3-30B-A3B")
    assert base.moe is not None
    moe = replace(base.moe, shared_intermediate_size=1024, shared_expert_gate=gate)
    spec = replace(base, moe=moe)
    extra = step_kernels.SHARED_EXPERT_KERNELS + (step_kernels.SHARED_GATE_KERNELS if gate else 0)
    assert extra_kernels(spec, _work(spec)) - extra_kernels(base, _work(base)) == extra * len(spec.layers)


def test_deepseek_mla_grouped_topk_and_fp8() -> None:
    """DeepSeek-V3: MLA in every layer (+6), 3 dense then 58 MoE layers with DeepSeek's grouped,
    bias-corrected top-k (+4 +2) and a shared expert (+3); FP8 weights: 5 GEMMs a dense layer
    (fused q/kv_a, q_b, O, gate_up, down) and 7 a MoE layer (the shared expert's two)."""
    spec = catalog_spec("DeepSeek-V3")
    assert isinstance(spec.mla, MLASpec) and isinstance(spec.moe, MoESpec)
    dense = sum(1 for layer in spec.layers if layer.ffn == "dense")
    moe = len(spec.layers) - dense
    assert (dense, moe) == (3, 58)
    mla = step_kernels.MLA_KERNELS
    routed = (
        step_kernels.MOE_FFN_KERNELS + step_kernels.GROUPED_TOPK_KERNELS + step_kernels.SHARED_EXPERT_KERNELS
    )
    assert extra_kernels(spec, _work(spec, "bf16")) == dense * mla + moe * (mla + routed)
    assert extra_kernels(spec, _work(spec, "fp8")) == dense * (mla + 5) + moe * (mla + routed + 7)


def test_gated_deltanet_layers() -> None:
    """Qwen3-Next: three Gated DeltaNet layers in four (vllm/model_executor/models/qwen3_next.py:
    in_proj_ba, causal_conv1d_update, fused_gdn_gating, RMSNormGated beyond attention's place, +4)."""
    spec = catalog_spec("Qwen3-Next-80B-A3B-Instruct")
    linear = sum(1 for layer in spec.layers if layer.mixer == "linear_attention")
    full = len(spec.layers) - linear
    assert linear == 3 * full
    moe = spec.moe
    assert moe is not None and moe.shared_intermediate_size and moe.shared_expert_gate
    ffn = step_kernels.MOE_FFN_KERNELS + step_kernels.SHARED_EXPERT_KERNELS + step_kernels.SHARED_GATE_KERNELS
    attention = step_kernels.QK_NORM_KERNELS if spec.qk_norm != "none" else 0
    want = linear * (step_kernels.LINEAR_ATTENTION_KERNELS + ffn) + full * (attention + ffn)
    assert extra_kernels(spec, _work(spec)) == want


def test_a_step_pays_kernel_s_per_extra_kernel_and_no_cost_per_routed_expert(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The published model (bench/VALIDATION.md, "The layers' kernels in place of a cost per routed
    expert"): vLLM's kernel_s, inherited by SGLang and Transformers, and no expert_s; a step's fixed
    cost holds kernel_s x extra_kernels (on NVIDIA, where the ROCm factor is 1)."""
    vllm = calibrated.ENGINE_SPEED["vllm"]
    assert vllm.kernel_s > 0 and vllm.expert_s == 0
    for name in ("sglang", "transformers"):
        assert calibrated.ENGINE_SPEED[name].kernel_s == vllm.kernel_s
    spec = catalog_spec("Qwen3-30B-A3B")
    work, h100 = _work(spec), find_gpu("H100")
    with_kernels = throughput.decode_step(spec, work, h100, 1, 10, 3000)
    monkeypatch.setitem(calibrated.ENGINE_SPEED, "vllm", replace(vllm, kernel_s=0.0))
    without = throughput.decode_step(spec, work, h100, 1, 10, 3000)
    assert with_kernels is not None and without is not None
    want = vllm.kernel_s * extra_kernels(spec, work)
    assert with_kernels.fixed_s - without.fixed_s == pytest.approx(want, rel=1e-9)
