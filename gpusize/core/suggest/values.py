"""What a suggestion is and where the search looks (pure values), and the order of the levers."""

from __future__ import annotations

from dataclasses import field

from gpusize.core.gpu import GpuSpec
from gpusize.core.levers import Change
from gpusize.core.search import Ranking
from gpusize.dataclass import dataclass

__all__ = ["MAX_SUGGESTIONS", "OTHER_GPU_TYPES", "RANKING", "Scope", "Suggestion"]

#: Most suggestions returned (cheapest first).
MAX_SUGGESTIONS = 8
#: Other GPU types suggested when the plan was asked for one type (cheapest first).
OTHER_GPU_TYPES = 3
#: Levers from least to most intrusive: what breaks a tie of price and GPU count.
RANKING = Ranking(
    ("seqs", "utilization", "kv", "gpus", "fp8", "int4", "offload", "batch", "context", "gpu", "nodes")
)


@dataclass(frozen=True, kw_only=True)
class Suggestion:
    """A configuration that fits: what changes, and the plan it gives (evaluated, not guessed)."""

    changes: tuple[Change, ...]
    summary: str
    #: What the change needs or why it works (a pre-quantized checkpoint, vLLM's scheduler defaults).
    note: str | None
    gpu: str
    gpu_full_name: str
    num_gpus: int
    tensor_parallel: int
    pipeline_parallel: int
    fits: bool
    kv_cache_capacity_tokens: int | None
    max_context_tokens: int | None
    #: Indicative USD per hour for all the GPUs of the plan (None when the GPU is unpriced).
    usd_per_hour: float | None
    lever: str = field(metadata={"json": False})
    memory_bytes: int = field(default=0, metadata={"json": False})


@dataclass(frozen=True, kw_only=True)
class Scope:
    """Where to look: the GPU types the user asked about, the catalog's others, and the counts."""

    gpus: tuple[GpuSpec, ...]
    #: Other GPU types to suggest (the catalog; empty for this machine's own GPUs).
    others: tuple[GpuSpec, ...] = ()
    #: The GPU count the user fixed (--gpus), else None.
    count: int | None = None
    #: Most GPUs in one server (a local machine may have fewer than 8).
    max_count: int = 8
