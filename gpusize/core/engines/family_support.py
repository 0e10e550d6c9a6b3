"""The first release of an engine that runs a model family, for families newer than the oldest
release gpusize models (one table keyed by engine and family; pure).

A request for an older release is refused (exit 2) with the release that added the family, since
the engine itself would refuse the checkpoint ("Model architectures [...] are not supported").
Families absent from the table run on every release gpusize models of that engine.
"""

from __future__ import annotations

from typing import NamedTuple

from gpusize.core.releases import parse_version
from gpusize.core.spec import ModelSpec
from gpusize.core.workload import Workload

__all__ = ["FIRST_RELEASE", "Since", "family_refusal"]


class Since(NamedTuple):
    """The first release that runs a family, the family as people name it, and the evidence (a
    NamedTuple: built at start-up, where a dataclass costs ten times more to define)."""

    release: str
    label: str
    source: str


#: (engine, model family) -> the first release that runs it.
FIRST_RELEASE: dict[tuple[str, str], Since] = {
    ("vllm", "gemma4_text"): Since(
        "0.19.0",
        "Gemma 4",
        "vLLM v0.19.0 release notes: 'Gemma 4 support' (#38826, #38847), needs transformers>=5.5.0",
    ),
    ("vllm", "mimo_v2_flash"): Since(
        "0.14.0",
        "MiMo-V2-Flash",
        "vllm-project/vllm#30836 (MiMoV2FlashForCausalLM) merged to main after the release/v0.13.0 "
        "branch (vllm-ascend#5307 pins release/v0.13.0 and names #30836 as a main-only change)",
    ),
}


def family_refusal(engine: str, label: str, spec: ModelSpec, work: Workload) -> str | None:
    """Why release `work.release` of `engine` (printed as `label`) cannot run this model's family, or
    None when it can."""
    since = FIRST_RELEASE.get((engine, spec.family))
    first = parse_version(since.release) if since else None
    if since is None or first is None or not work.release.engine or work.release.version >= first:
        return None
    return (
        f"{label} {work.release.version} does not run {since.label} ({spec.family}); the first {label} "
        f"release that does is {since.release}: pass --engine-version {since.release} or later"
    )
