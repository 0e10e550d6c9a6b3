"""A prefill/decode split as text (rendering only): serve's and quote's --disaggregate."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpusize.render.format import fmt_float
from gpusize.serving.layouts import parallel_name

if TYPE_CHECKING:
    from gpusize.serving.disagg import Disaggregated

__all__ = ["split_lines"]


def split_lines(d: Disaggregated | None, lead: str = "Disaggregated (estimate): ") -> list[str]:
    """A prefill/decode split (serving/disagg.py), its KV transfer and how it compares with the
    aggregated layout on the same GPUs, and its verdict: serve's and quote's --disaggregate."""
    if d is None:
        return []
    p, q = d.prefill, d.decode
    cost = f", ${d.usd_per_million_tokens:.2f}/1M tokens" if d.usd_per_million_tokens else ""
    agg = ""
    if d.aggregated_layout is not None:
        agg_cost = (
            f", ${d.aggregated_usd_per_million_tokens:.2f}/1M" if d.aggregated_usd_per_million_tokens else ""
        )
        agg = (
            f"; aggregated {d.aggregated_layout}: {fmt_float(d.aggregated_per_request_tokens_per_s)} tok/s "
            f"per request, TTFT {fmt_float(d.aggregated_ttft_s)} s, "
            f"{fmt_float(d.aggregated_tokens_per_s)} tok/s{agg_cost}"
        )
    return [
        f"{lead}prefill {parallel_name(p.instances, p.tensor_parallel)} "
        f"({p.utilization:.0%} busy), decode {parallel_name(q.instances, q.tensor_parallel)} "
        f"({q.capacity_sequences} sequences); {d.ratio} at {d.arrival_rps:.2f} requests/s; KV "
        f"{d.kv_transfer_bytes_per_request / 2**20:.1f} MiB per request over {d.link}, "
        f"{d.kv_transfer_s * 1e3:.2f} ms; {fmt_float(d.per_request_tokens_per_s)} tok/s per request, TTFT "
        f"{fmt_float(d.ttft_s) + ' s' if d.ttft_s is not None else 'unbounded (prefill saturated)'}, "
        f"{fmt_float(d.aggregate_tokens_per_s)} tok/s{cost}{agg}",
        f"Disaggregation {d.verdict}",
    ]
