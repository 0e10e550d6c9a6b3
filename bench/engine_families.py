"""The first vLLM and SGLang release that registers each model architecture gpusize gates by release
(gpusize/core/engines/family_support.py, core/engines/vllm/families.py), read in the releases' wheels
on PyPI with bench/release_sources.py.

- SGLang: an architecture is served when a module of sglang/srt/models/ defines its class and lists
  it in `EntryClass` (sglang/srt/models/registry.py imports every module there and registers the
  classes its EntryClass names). Every final release on PyPI from the first to the newest of
  gpusize/core/releases.py SGLANG is read (the files whose names could hold the class, FILES below).
- vLLM: the architecture's name as a key of vllm/model_executor/models/registry.py (the
  _TEXT_GENERATION_MODELS / _MULTIMODAL_MODELS tables), in every release of core/releases.py VLLM.

Prints, per architecture, the first release that registers it, and any later release that does not
(a gap would make a single first-release gate wrong). A dev tool (network): never imported or run
by the tests. Run: python bench/engine_families.py [sglang|vllm]
"""

from __future__ import annotations

import re
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from packaging.version import Version

sys.path.insert(0, str(Path(__file__).resolve().parent))
from release_sources import names, read, release_versions  # noqa: E402  (a script beside this one)

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from gpusize.core.releases import SGLANG, VLLM  # noqa: E402

#: gpusize model family -> (the architectures that serve it: its catalog checkpoints' first, then the
#: names the engines register for the same family; the SGLang model files that could define them: a
#: regex on the name under sglang/srt/models/).
ARCHITECTURES: dict[str, tuple[tuple[str, ...], str]] = {
    "qwen3_5_text": (("Qwen3_5ForConditionalGeneration", "Qwen3_5ForCausalLM"), r"qwen3"),
    "qwen3_5_moe_text": (("Qwen3_5MoeForConditionalGeneration", "Qwen3_5MoeForCausalLM"), r"qwen3"),
    "nemotron_h": (("NemotronHForCausalLM",), r"nemotron"),
    "kimi_linear": (("KimiLinearForCausalLM",), r"kimi"),
    "deepseek_v32": (("DeepseekV32ForCausalLM",), r"deepseek"),
    "glm_moe_dsa": (("GlmMoeDsaForCausalLM",), r"glm|deepseek"),
    "deepseek_v4": (("DeepseekV4ForCausalLM",), r"deepseek"),
    "gemma4_text": (("Gemma4ForConditionalGeneration", "Gemma4ForCausalLM"), r"gemma"),
    "mimo_v2_flash": (("MiMoV2FlashForCausalLM",), r"mimo"),
    "step3p7": (
        ("Step3p7FlashForCausalLM", "Step3p7ForConditionalGeneration", "Step3p7ForCausalLM"),
        r"step3",
    ),
    "minimax_m3": (
        ("MiniMaxM3ForCausalLM", "MiniMaxM3SparseForCausalLM", "MiniMaxM3SparseForConditionalGeneration"),
        r"minimax",
    ),
    "granitemoehybrid": (("GraniteMoeHybridForCausalLM",), r"granite"),
    "falcon_h1": (("FalconH1ForCausalLM",), r"falcon"),
}
_MODELS = "sglang/srt/models/"
_VLLM_REGISTRY = "vllm/model_executor/models/registry.py"
_ENTRY = re.compile(r"^EntryClass\s*=\s*(\[[^\]]*\]|\S+)", re.MULTILINE)


def sglang_releases() -> list[str]:
    low, high = Version(SGLANG.known[0]), Version(SGLANG.known[-1])
    return [v for v in release_versions("sglang") if low <= Version(v) <= high]


def sglang_registered(version: str) -> dict[str, str]:
    """The families whose architecture release `version` of SGLang registers -> the file doing so."""
    modules = [n for n in names("sglang", version) if n.startswith(_MODELS) and n.count("/") == 3]
    out: dict[str, str] = {}
    for family, (architectures, pattern) in ARCHITECTURES.items():
        for module in modules:
            if not re.search(pattern, module.removeprefix(_MODELS)) or not module.endswith(".py"):
                continue
            text = read("sglang", version, module) or ""
            entries = " ".join(_ENTRY.findall(text))
            hits = [a for a in architectures if f"class {a}(" in text and re.search(rf"\b{a}\b", entries)]
            if hits:
                out[family] = f"{module.removeprefix(_MODELS)} {hits[0]}"
                break
    return out


def vllm_registered(version: str) -> dict[str, str]:
    """The families whose architecture release `version` of vLLM lists in its model registry."""
    text = read("vllm", version, _VLLM_REGISTRY) or ""
    out: dict[str, str] = {}
    for family, (architectures, _) in ARCHITECTURES.items():
        hits = [a for a in architectures if f'"{a}"' in text]
        if hits:
            out[family] = f"registry.py {hits[0]}"
    return out


def report(engine: str) -> None:
    releases = sglang_releases() if engine == "sglang" else list(VLLM.known)
    find = sglang_registered if engine == "sglang" else vllm_registered
    with ThreadPoolExecutor(max_workers=8) as pool:
        found = list(pool.map(find, releases))
    for family, (architectures, _) in ARCHITECTURES.items():
        architecture = architectures[0]
        having = [v for v, f in zip(releases, found, strict=True) if family in f]
        if not having:
            print(f"{engine} {family} ({architecture}): in no release {releases[0]}-{releases[-1]}")
            continue
        first = releases.index(having[0])
        gaps = [v for v, f in zip(releases[first:], found[first:], strict=True) if family not in f]
        where = found[first][family]
        before = releases[first - 1] if first else "none modelled"
        print(f"{engine} {family} ({architecture}): first {having[0]} ({where}; not in {before})"
              + (f"; missing again in {', '.join(gaps)}" if gaps else ""))  # fmt: skip


def main(argv: list[str]) -> int:
    for engine in argv or ["sglang", "vllm"]:
        report(engine)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
