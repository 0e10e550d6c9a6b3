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
}


def family_key(spec: ModelSpec) -> str:
    """The model's key in FIRST_RELEASE: its family, or a variant engines served later (Nemotron-H
    with MoE blocks, "nemotron_h:moe")."""
    if spec.family == "nemotron_h" and any(layer.ffn == "moe" for layer in spec.layers):
        return "nemotron_h:moe"
    return spec.family


def family_refusal(engine: str, label: str, spec: ModelSpec, work: Workload) -> str | None:
    """Why release `work.release` of `engine` (printed as `label`) cannot run this model's family, or
    None when it can."""
    since = FIRST_RELEASE.get((engine, spec.architecture)) or FIRST_RELEASE.get((engine, family_key(spec)))
    first = parse_version(since.release) if since else None
    if since is None or first is None or not work.release.engine or work.release.version >= first:
        return None
    return (
        f"{label} {work.release.version} does not run {since.label} ({spec.family}); the first {label} "
        f"release that does is {since.release}: pass --engine-version {since.release} or later"
    )
