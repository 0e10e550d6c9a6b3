"""ParamCounts: a model's parameters by role (pure values), counted by `core.params`."""

from __future__ import annotations

from dataclasses import fields
from operator import attrgetter

from gpusize.dataclass import dataclass

__all__ = ["ParamCounts", "astuple_counts"]


@dataclass(frozen=True)
class ParamCounts:
    """Parameters by role, so that quantization and tensor-parallel sharding treat each group as the
    engine does (see `core.params`)."""

    embedding: int = 0
    lm_head: int = 0
    attention: int = 0  # linear weights of attention / linear-attention / Mamba mixers
    mlp: int = 0  # dense MLP linear weights
    experts: int = 0  # routed expert linear weights (all experts)
    shared_experts: int = 0
    router: int = 0
    small: int = 0  # norms, biases, sinks, conv filters, SSM vectors
    vision: int = 0
    #: Active routed-expert weights per token (top-k of each MoE layer).
    experts_active: int = 0
    #: Biases of routed experts (gpt-oss), all experts and the top-k read per token; part of small.
    expert_biases: int = 0
    expert_biases_active: int = 0
    mtp: int = 0  # not part of total: loaded only with speculative decoding
    #: Attention weights an engine replicates on every TP rank (MLA down-projections).
    replicated_attention: int = 0
    #: Embedding rows looked up, not read whole, per token (untied input table, learned positions).
    lookup_only: int = 0

    @property
    def total(self) -> int:
        return (
            self.embedding
            + self.lm_head
            + self.attention
            + self.mlp
            + self.experts
            + self.shared_experts
            + self.router
            + self.small
            + self.vision
        )

    @property
    def active(self) -> int:
        """Weights read per generated token: everything but inactive experts and the input
        lookup tables (one row of those is read). A tied table is read whole as the output
        head, so it counts. This is OpenAI's convention for gpt-oss (20b: 3.61B active)."""
        return (
            self.total
            - self.experts
            + self.experts_active
            - self.expert_biases
            + self.expert_biases_active
            - self.lookup_only
        )

    @property
    def linear(self) -> int:
        """Weights a weight-only quantization converts (decoder linear layers)."""
        return self.attention + self.mlp + self.experts + self.shared_experts

    def __add__(self, other: ParamCounts) -> ParamCounts:
        return ParamCounts(*(a + b for a, b in zip(astuple_counts(self), astuple_counts(other), strict=True)))

    def __mul__(self, times: int) -> ParamCounts:
        return ParamCounts(*(a * times for a in astuple_counts(self)))


def astuple_counts(counts: ParamCounts) -> tuple[int, ...]:
    counted: tuple[int, ...] = _COUNTS_OF(counts)
    return counted


_COUNT_FIELDS = tuple(f.name for f in fields(ParamCounts))
#: The counts in field order, read in one C call (parsing sums these per layer type of every model).
_COUNTS_OF = attrgetter(*_COUNT_FIELDS)
