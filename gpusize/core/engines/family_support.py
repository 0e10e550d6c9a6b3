"""The first release of an engine that runs a model family, for families newer than the oldest
release gpusize models (one table keyed by engine and family; pure).

A request for an older release is refused (exit 2) with the release that added the family, since
the engine itself would refuse the checkpoint ("Model architectures [...] are not supported").
Families absent from the table run on every release gpusize models of that engine.

Read in the releases' wheels on PyPI (bench/engine_families.py, 2026-12-02): for SGLang the module of
sglang/srt/models/ whose `EntryClass` registers the architecture (sglang/srt/models/registry.py
imports every module there), in every SGLang release from 0.4.0 to 0.5.23; for vLLM the key of
vllm/model_executor/models/registry.py, in every release of core/releases.py VLLM. Each entry names
the first release that has it and the one before, which does not. A family's variant that came later
than the family has its own key (`family_key`: Nemotron-H with MoE blocks). A composite whose
architecture engines registered later than its text family (Kimi-K3: a Kimi-Linear decoder under
KimiK3ForConditionalGeneration) is keyed by that architecture, the name the engines' registries use.
"""

from __future__ import annotations

from typing import NamedTuple

from gpusize.core.releases import parse_version
from gpusize.core.spec import ModelSpec
from gpusize.core.workload import Workload

__all__ = ["FIRST_RELEASE", "Since", "family_key", "family_refusal"]


class Since(NamedTuple):
    """The first release that runs a family, the family as people name it, and the evidence (a
    NamedTuple: built at start-up, where a dataclass costs ten times more to define)."""

    release: str
    label: str
    source: str


#: (engine, model family, `family_key` variant or architecture) -> the first release that runs it.
FIRST_RELEASE: dict[tuple[str, str], Since] = {
    ("vllm", "deepseek_v32"): Since(
        "0.11.0",
        "DeepSeek-V3.2",
        "vllm-project/vllm#25896 '[New Model] DeepSeek-V3.2', merged 2025-09-29; registry.py lists "
        "DeepseekV32ForCausalLM from the 0.11.0 wheel (not 0.10.2)",
    ),
    ("vllm", "glm_moe_dsa"): Since(
        "0.16.0",
        "GLM-5",
        "vllm-project/vllm#34124 (GlmMoeDsaForCausalLM on deepseek_v2.py), merged February 2026; registry.py "
        "lists it from the 0.16.0 wheel (not 0.15.1)",
    ),
    ("vllm", "glm_moe_dsa:index_cache"): Since(
        "0.23.0",
        "GLM-5.2 with shared indexers (IndexCache)",
        "vllm-project/vllm-ascend issue #10583: IndexCache runs natively from vLLM 0.23.0; earlier releases "
        "build an indexer in every layer, which the checkpoint does not hold for its shared layers",
    ),
    ("vllm", "deepseek_v4"): Since(
        "0.20.0",
        "DeepSeek-V4",
        "vllm-project/vllm#40760 (vllm/models/deepseek_v4), opened on release day 2026-04-24; registry.py "
        "lists DeepseekV4ForCausalLM from the 0.20.0 wheel (not 0.19.1)",
    ),
    ("vllm", "gemma4_text"): Since(
        "0.19.0",
        "Gemma 4",
        "vLLM v0.19.0 release notes: 'Gemma 4 support' (#38826, #38847), needs transformers>=5.5.0; "
        "registry.py lists Gemma4ForConditionalGeneration from the 0.19.0 wheel (not 0.18.1)",
    ),
    ("vllm", "mimo_v2_flash"): Since(
        "0.14.0",
        "MiMo-V2-Flash",
        "vllm-project/vllm#30836 (MiMoV2FlashForCausalLM); registry.py lists it from the 0.14.0 wheel (not "
        "0.13.0)",
    ),
    ("vllm", "qwen3_5_text"): Since(
        "0.17.0",
        "Qwen3.5",
        "registry.py lists Qwen3_5ForConditionalGeneration from the 0.17.0 wheel (not 0.16.0)",
    ),
    ("vllm", "qwen3_5_moe_text"): Since(
        "0.17.0",
        "Qwen3.5 MoE",
        "registry.py lists Qwen3_5MoeForConditionalGeneration from the 0.17.0 wheel (not 0.16.0)",
    ),
    ("vllm", "nemotron_h"): Since(
        "0.9.1",
        "Nemotron-H",
        "registry.py lists NemotronHForCausalLM from the 0.9.1 wheel (not 0.9.0.1)",
    ),
    ("vllm", "nemotron_h:moe"): Since(
        "0.11.1",
        "Nemotron-H with MoE blocks (Nemotron-3)",
        "models/nemotron_h.py has NemotronHMoE (the 'E' block) from the 0.11.1 wheel (not 0.11.0)",
    ),
    ("vllm", "kimi_linear"): Since(
        "0.11.1",
        "Kimi-Linear",
        "registry.py lists KimiLinearForCausalLM from the 0.11.1 wheel (not 0.11.0)",
    ),
    ("vllm", "KimiK3ForConditionalGeneration"): Since(
        "0.27.0",
        "Kimi-K3",
        "registry.py lists KimiK3ForConditionalGeneration (vllm.models.kimi_k3) from the 0.27.0 wheel (not "
        "0.26.0)",
    ),
    ("vllm", "step3p7"): Since(
        "0.23.0",
        "Step-3.7",
        "registry.py lists Step3p7ForConditionalGeneration from the 0.23.0 wheel (not 0.22.1)",
    ),
    ("vllm", "minimax_m3"): Since(
        "0.24.0",
        "MiniMax-M3",
        "registry.py lists MiniMaxM3SparseForCausalLM from the 0.24.0 wheel (not 0.23.0)",
    ),
    ("vllm", "granitemoehybrid"): Since(
        "0.9.0",
        "Granite-4.0-H",
        "registry.py lists GraniteMoeHybridForCausalLM from the 0.9.0 wheel (not 0.8.5.post1)",
    ),
    ("vllm", "falcon_h1"): Since(
        "0.9.0",
        "Falcon-H1",
        "registry.py lists FalconH1ForCausalLM from the 0.9.0 wheel (not 0.8.5.post1)",
    ),
    ("sglang", "qwen3_5_text"): Since(
        "0.5.9",
        "Qwen3.5",
        "models/qwen3_5.py registers Qwen3_5ForConditionalGeneration from the 0.5.9 wheel (not 0.5.8.post1)",
    ),
    ("sglang", "qwen3_5_moe_text"): Since(
        "0.5.9",
        "Qwen3.5 MoE",
        "models/qwen3_5.py registers Qwen3_5MoeForConditionalGeneration from the 0.5.9 wheel (not "
        "0.5.8.post1)",
    ),
    ("sglang", "nemotron_h"): Since(
        "0.5.3.post1",
        "Nemotron-H",
        "models/nemotron_h.py registers NemotronHForCausalLM from the 0.5.3.post1 wheel (not 0.5.3)",
    ),
    ("sglang", "nemotron_h:moe"): Since(
        "0.5.6",
        "Nemotron-H with MoE blocks (Nemotron-3)",
        "models/nemotron_h.py has NemotronHMoEDecoderLayer (the 'E' block) from the 0.5.6 wheel (not "
        "0.5.5.post3)",
    ),
    ("sglang", "kimi_linear"): Since(
        "0.5.4.post2",
        "Kimi-Linear",
        "models/kimi_linear.py registers KimiLinearForCausalLM from the 0.5.4.post2 wheel (not 0.5.4.post1)",
    ),
    ("sglang", "KimiK3ForConditionalGeneration"): Since(
        "0.5.17",
        "Kimi-K3",
        "models/kimi_k3.py registers KimiK3ForConditionalGeneration (EntryClass) from the 0.5.17 wheel (not "
        "0.5.16)",
    ),
    ("sglang", "deepseek_v32"): Since(
        "0.5.3",
        "DeepSeek-V3.2",
        "models/deepseek_v2.py registers DeepseekV32ForCausalLM from the 0.5.3 wheel (not 0.5.2)",
    ),
    ("sglang", "glm_moe_dsa"): Since(
        "0.5.9",
        "GLM-5",
        "models/glm4_moe.py registers GlmMoeDsaForCausalLM from the 0.5.9 wheel (not 0.5.8.post1)",
    ),
    ("sglang", "deepseek_v4"): Since(
        "0.5.12",
        "DeepSeek-V4",
        "models/deepseek_v4.py registers DeepseekV4ForCausalLM from the 0.5.12 wheel (not 0.5.11)",
    ),
    ("sglang", "gemma4_text"): Since(
        "0.5.11",
        "Gemma 4",
        "models/gemma4_mm.py registers Gemma4ForConditionalGeneration from the 0.5.11 wheel (not "
        "0.5.10.post1)",
    ),
    ("sglang", "mimo_v2_flash"): Since(
        "0.5.7",
        "MiMo-V2-Flash",
        "models/mimo_v2_flash.py registers MiMoV2FlashForCausalLM from the 0.5.7 wheel (not 0.5.6.post2)",
    ),
    ("sglang", "step3p7"): Since(
        "0.5.13",
        "Step-3.7",
        "models/step3p7.py registers Step3p7ForConditionalGeneration from the 0.5.13 wheel (not "
        "0.5.12.post1)",
    ),
    ("sglang", "minimax_m3"): Since(
        "0.5.16",
        "MiniMax-M3",
        "models/minimax_m3.py registers MiniMaxM3SparseForCausalLM from the 0.5.16 wheel (not 0.5.15.post1)",
    ),
    ("sglang", "granitemoehybrid"): Since(
        "0.5.9",
        "Granite-4.0-H",
        "models/granitemoehybrid.py registers GraniteMoeHybridForCausalLM from the 0.5.9 wheel (not "
        "0.5.8.post1)",
    ),
    ("sglang", "falcon_h1"): Since(
        "0.5.3",
        "Falcon-H1",
        "models/falcon_h1.py registers FalconH1ForCausalLM from the 0.5.3 wheel (not 0.5.2)",
    ),
    ("vllm", "gemma3_text"): Since(
        "0.8.0",
        "Gemma 3",
        "registry.py lists Gemma3ForCausalLM and Gemma3ForConditionalGeneration from the 0.8.0 wheel "
        "(not 0.7.3)",
    ),
    ("vllm", "glm4_moe"): Since(
        "0.10.0",
        "GLM-4.5/4.6/4.7",
        "registry.py lists Glm4MoeForCausalLM from the 0.10.0 wheel (not 0.9.2)",
    ),
    ("vllm", "gpt_oss"): Since(
        "0.10.1",
        "gpt-oss",
        "registry.py lists GptOssForCausalLM from the 0.10.1 wheel (not 0.10.0)",
    ),
    ("vllm", "llama4_text"): Since(
        "0.8.3",
        "Llama 4",
        "registry.py lists Llama4ForConditionalGeneration from the 0.8.3 wheel (not 0.8.2)",
    ),
    ("vllm", "mimo"): Since(
        "0.9.0",
        "MiMo",
        "registry.py lists MiMoForCausalLM from the 0.9.0 wheel (not 0.8.5.post1)",
    ),
    ("vllm", "minimax_m2"): Since(
        "0.11.1",
        "MiniMax-M2",
        "registry.py lists MiniMaxM2ForCausalLM from the 0.11.1 wheel (not 0.11.0)",
    ),
    ("vllm", "qwen2_5_vl"): Since(
        "0.7.2",
        "Qwen2.5-VL",
        "registry.py lists Qwen2_5_VLForConditionalGeneration from the 0.7.2 wheel (not 0.7.1)",
    ),
    ("vllm", "qwen3"): Since(
        "0.8.4",
        "Qwen3",
        "registry.py lists Qwen3ForCausalLM from the 0.8.4 wheel (not 0.8.3)",
    ),
    ("vllm", "qwen3_moe"): Since(
        "0.8.4",
        "Qwen3 MoE",
        "registry.py lists Qwen3MoeForCausalLM from the 0.8.4 wheel (not 0.8.3)",
    ),
    ("vllm", "qwen3_next"): Since(
        "0.10.2",
        "Qwen3-Next",
        "registry.py lists Qwen3NextForCausalLM from the 0.10.2 wheel (not 0.10.1.1)",
    ),
    ("vllm", "qwen3_vl_text"): Since(
        "0.11.0",
        "Qwen3-VL",
        "registry.py lists Qwen3VLForConditionalGeneration from the 0.11.0 wheel (not 0.10.2)",
    ),
    ("vllm", "qwen3_vl_moe_text"): Since(
        "0.11.0",
        "Qwen3-VL MoE",
        "registry.py lists Qwen3VLMoeForConditionalGeneration from the 0.11.0 wheel (not 0.10.2)",
    ),
    ("vllm", "Mistral3ForConditionalGeneration"): Since(
        "0.8.3",
        "Mistral Small 3.1+ (Mistral3ForConditionalGeneration)",
        "registry.py lists Mistral3ForConditionalGeneration from the 0.8.3 wheel (not 0.8.2)",
    ),
    ("vllm", "mistral4"): Since(
        "0.12.0",
        "Mistral 4 (MLA + MoE)",
        "registry.py lists MistralLarge3ForCausalLM (the class vLLM's transformers_utils/configs/mistral.py "
        "maps MLA MoE Mistral checkpoints to) from the 0.12.0 wheel (not 0.11.2); a later first release "
        "for the HF mistral4 text config itself was not found",
    ),
    ("vllm", "KimiK25ForConditionalGeneration"): Since(
        "0.15.0",
        "Kimi-K2.5",
        "registry.py lists KimiK25ForConditionalGeneration from the 0.15.0 wheel (not 0.14.1)",
    ),
    ("vllm", "KimiVLForConditionalGeneration"): Since(
        "0.8.5",
        "Kimi-VL",
        "registry.py lists KimiVLForConditionalGeneration from the 0.8.5 wheel (not 0.8.4)",
    ),
    ("sglang", "DeepseekV3ForCausalLM"): Since(
        "0.4.1",
        "DeepSeek-V3 / Kimi-K2 (DeepseekV3ForCausalLM)",
        "models/deepseek_v2.py registers it (EntryClass) from the 0.4.1 wheel (not 0.4.0.post2)",
    ),
    ("sglang", "gemma3_text"): Since(
        "0.4.4.post2",
        "Gemma 3",
        "models/gemma3_causal.py registers Gemma3ForCausalLM (EntryClass) from the 0.4.4.post2 wheel (not "
        "0.4.4.post1)",
    ),
    ("sglang", "glm4_moe"): Since(
        "0.4.9.post5",
        "GLM-4.5/4.6/4.7",
        "models/glm4_moe.py registers it (EntryClass) from the 0.4.9.post5 wheel (not 0.4.9.post4)",
    ),
    ("sglang", "gpt_oss"): Since(
        "0.5.1",
        "gpt-oss",
        "models/gpt_oss.py registers it (EntryClass) from the 0.5.1 wheel, the first final release after the "
        "0.5.0 release candidates (not 0.4.10.post2)",
    ),
    ("sglang", "llama4_text"): Since(
        "0.4.5",
        "Llama 4",
        "models/mllama4.py registers it (EntryClass) from the 0.4.5 wheel (not 0.4.4.post4)",
    ),
    ("sglang", "mimo"): Since(
        "0.4.6.post3",
        "MiMo",
        "models/xiaomi_mimo.py registers it (EntryClass) from the 0.4.6.post3 wheel (not 0.4.6.post2)",
    ),
    ("sglang", "minimax_m2"): Since(
        "0.5.4.post1",
        "MiniMax-M2",
        "models/minimax_m2.py registers it (EntryClass) from the 0.5.4.post1 wheel (not 0.5.4)",
    ),
    ("sglang", "nemotron-nas"): Since(
        "0.5.1",
        "Llama-Nemotron (DeciLM)",
        "models/nemotron_nas.py registers it (EntryClass) from the 0.5.1 wheel (not 0.4.10.post2)",
    ),
    ("sglang", "qwen2_5_vl"): Since(
        "0.4.3.post1",
        "Qwen2.5-VL",
        "models/qwen2_5_vl.py registers it (EntryClass) from the 0.4.3.post1 wheel (not 0.4.3)",
    ),
    ("sglang", "qwen3"): Since(
        "0.4.5.post2",
        "Qwen3",
        "models/qwen3.py registers it (EntryClass) from the 0.4.5.post2 wheel (not 0.4.5.post1)",
    ),
    ("sglang", "qwen3_moe"): Since(
        "0.4.5.post2",
        "Qwen3 MoE",
        "models/qwen3_moe.py registers it (EntryClass) from the 0.4.5.post2 wheel (not 0.4.5.post1)",
    ),
    ("sglang", "qwen3_next"): Since(
        "0.5.2",
        "Qwen3-Next",
        "models/qwen3_next.py registers it (EntryClass) from the 0.5.2 wheel (not 0.5.1.post3)",
    ),
    ("sglang", "qwen3_vl_text"): Since(
        "0.5.3",
        "Qwen3-VL",
        "models/qwen3_vl.py registers it (EntryClass) from the 0.5.3 wheel (not 0.5.2)",
    ),
    ("sglang", "qwen3_vl_moe_text"): Since(
        "0.5.3",
        "Qwen3-VL MoE",
        "models/qwen3_vl_moe.py registers it (EntryClass) from the 0.5.3 wheel (not 0.5.2)",
    ),
    ("sglang", "starcoder2"): Since(
        "0.5.3",
        "StarCoder2",
        "models/starcoder2.py registers it (EntryClass) from the 0.5.3 wheel (not 0.5.2)",
    ),
    ("sglang", "KimiK25ForConditionalGeneration"): Since(
        "0.5.9",
        "Kimi-K2.5",
        "models/kimi_k25.py registers it (EntryClass) from the 0.5.9 wheel (not 0.5.8.post1)",
    ),
    ("sglang", "KimiVLForConditionalGeneration"): Since(
        "0.4.6.post2",
        "Kimi-VL",
        "models/kimi_vl.py registers it (EntryClass) from the 0.4.6.post2 wheel (not 0.4.6.post1)",
    ),
}


def family_key(spec: ModelSpec) -> str:
    """The model's key in FIRST_RELEASE: its family, or a variant engines served later (Nemotron-H
    with MoE blocks, "nemotron_h:moe"; GLM-5.2's shared indexers, "glm_moe_dsa:index_cache")."""
    if spec.family == "nemotron_h" and any(layer.ffn == "moe" for layer, _ in spec.layer_counts):
        return "nemotron_h:moe"
    if spec.family == "glm_moe_dsa" and any(layer.shares_indexer for layer in spec.layers):
        return "glm_moe_dsa:index_cache"
    return spec.family


def family_refusal(engine: str, label: str, spec: ModelSpec, work: Workload) -> str | None:
    """Why release `work.release` of `engine` (printed as `label`) cannot run this model's family, or
    None when it can."""
    # The architecture's, the variant's and the family's gates all apply (Mistral-Small-4 is a Mistral3
    # wrapper, 0.8.3, around a Mistral 4 decoder, 0.12.0): the latest decides.
    keys = (spec.architecture, family_key(spec), spec.family)
    gates = [g for g in (FIRST_RELEASE.get((engine, key)) for key in keys) if g]
    dated = [(v, g) for g in gates if (v := parse_version(g.release)) is not None]
    first, since = max(dated, key=lambda d: d[0]) if dated else (None, None)
    if since is None or first is None or not work.release.engine or work.release.version >= first:
        return None
    return (
        f"{label} {work.release.version} does not run {since.label} ({spec.family}); the first {label} "
        f"release that does is {since.release}: pass --engine-version {since.release} or later"
    )
