"""Data-parallel attention beside a tensor-parallel recommendation (pure): how DeepSeek-style models
(MLA: one latent KV head, whole on every GPU of a tensor-parallel group) are served on one server.
Under SGLang's --tp-size N each GPU holds every sequence's latent; under --enable-dp-attention
--dp-size N each of the N groups holds its own, so the server holds about N times the sequences and
each decode step reads 1/N of the KV cache (serving/throughput.decode_step), at the price of whole
attention projections on every GPU. `serve` states the same layout with the setting when the user
has not chosen it, evaluated by the same memory and speed models, so the trade is a number, not a
rule of thumb. The engine says whether and how it runs it (`EngineModel.with_attention_dp`).
"""

from __future__ import annotations

from gpusize.core.engines import engine
from gpusize.core.gpu import GpuSpec
from gpusize.core.spec import ModelSpec
from gpusize.core.workload import Workload
from gpusize.serving.layouts import Demand, Layout, evaluate_layout
from gpusize.serving.throughput import data_parallel_caveat

__all__ = ["dp_attention_alternative", "dp_attention_layout", "dp_attention_words"]


def dp_attention_layout(
    spec: ModelSpec, gpu: GpuSpec, work: Workload, demand: Demand, pick: Layout | None
) -> tuple[Layout, str, str | None] | None:
    """The recommended layout run with the engine's data-parallel attention over all its GPUs (for
    `demand`), the flags that say it and what its speed rests on where the engine says
    (`throughput.data_parallel_caveat`), for an MLA mixture-of-experts model sized without it; None
    where it does not apply (an engine or release without it, not MLA MoE, one GPU, the setting
    already given) or does not fit."""
    if pick is None or not pick.fits or spec.mla is None or spec.moe is None:
        return None
    alternative = engine(work.engine.name).with_attention_dp
    tp = pick.tensor_parallel
    given = alternative(work, tp) if alternative is not None else None
    if given is None:
        return None
    dp_work, flags = given
    if engine(work.engine.name).attention_dp(spec, dp_work, tp)[0] <= 1:
        return None
    other = evaluate_layout(spec, gpu, pick.replicas, tp, dp_work, demand)
    if not other.fits or other.aggregate_tokens_per_s is None:
        return None
    return other, flags, data_parallel_caveat(dp_work)


def dp_attention_words(pick: Layout, other: Layout, flags: str, caveat: str | None = None) -> str:
    """The two layouts side by side: capacity, tok/s and per-user speed, estimates said as such, and
    the engine's caveat on that speed where it has one."""
    return (
        f"with {flags} the same {pick.replicas * pick.tensor_parallel} GPUs ({pick.replicas} x "
        f"TP={pick.tensor_parallel} without) hold "
        f"{other.capacity_sequences:,} sequences of this context ({pick.capacity_sequences:,} without) "
        f"and move {other.aggregate_tokens_per_s or 0:,.0f} tok/s at this load "
        f"({pick.aggregate_tokens_per_s or 0:,.0f} without), {other.per_request_tokens_per_s or 0:,.1f} "
        f"tok/s per user ({pick.per_request_tokens_per_s or 0:,.1f}) (estimates: each of the "
        f"{pick.tensor_parallel} attention groups holds and reads its own sequences' KV cache, every GPU "
        "the whole attention projections)" + (f"; {caveat}" if caveat else "")
    )


def dp_attention_alternative(
    spec: ModelSpec, gpu: GpuSpec, work: Workload, demand: Demand, pick: Layout | None
) -> str | None:
    """`serve`'s line on the recommended layout with data-parallel attention (`dp_attention_layout`)."""
    found = dp_attention_layout(spec, gpu, work, demand, pick)
    if found is None or pick is None or pick.aggregate_tokens_per_s is None:
        return None
    return dp_attention_words(pick, *found)
