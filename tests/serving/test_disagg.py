"""Disaggregated prefill/decode (serving/disagg.py): the split of the GPUs, the KV transfer per
request, and when it does not pay. Synthetic rule checks; the qualitative rule is vLLM's own
documentation (docs/features/disagg_prefill.md: disaggregated prefill "does not improve throughput",
it tunes TTFT and inter-token latency apart)."""

from __future__ import annotations

import pytest

from gpusize.core import kvcache
from gpusize.core.network import NodeLink
from gpusize.dataclass import replace
from gpusize.serving import disagg
from gpusize.serving.layouts import Demand, compare, recommend
from gpusize.serving.targets import Targets
from gpusize.sources.catalog import find_gpu
from tests.helpers import catalog_spec, workload

SPEC = catalog_spec("Llama-3.1-8B")
GPU = find_gpu("H100")


def _split(demand: Demand, ctx: int = 16384, aim: Targets | None = None, between: NodeLink | None = None):  # type: ignore[no-untyped-def]
    work = workload(SPEC, ctx)
    layouts = compare(SPEC, GPU, 8, work, demand, targets=aim)
    pick, _ = recommend(layouts, aim)
    return disagg.disaggregate(SPEC, GPU, 8, work, demand, pick, aim, between)


def test_the_split_uses_every_gpu_and_moves_the_prompts_kv() -> None:
    d = _split(Demand(rps=10, prompt_tokens=8192, output_tokens=256))
    assert d is not None
    assert (
        d.prefill.instances * d.prefill.tensor_parallel + d.decode.instances * d.decode.tensor_parallel == 8
    )
    assert d.kv_transfer_bytes_per_request == kvcache.kv_cache_bytes_per_token(SPEC, 2, 1) * 8192
    assert d.kv_transfer_s > 0 and "inside the server" in d.link
    assert d.holds_load and d.arrival_rps == 10


def test_the_ratio_follows_the_prompt_length() -> None:
    """Long prompts call for more prefill GPUs than short ones at the same rate."""
    long = _split(Demand(rps=10, prompt_tokens=8192, output_tokens=256))
    short = _split(Demand(rps=10, prompt_tokens=128, output_tokens=1024), ctx=8192)
    assert long is not None and short is not None
    gpus = lambda d: d.prefill.instances * d.prefill.tensor_parallel  # noqa: E731
    assert gpus(long) > gpus(short)


def test_short_prompts_long_outputs_do_not_pay() -> None:
    d = _split(Demand(rps=10, prompt_tokens=128, output_tokens=1024), ctx=8192)
    assert d is not None and not d.pays
    assert d.verdict.startswith("does not pay") and "does not raise throughput" in d.verdict


def test_it_pays_when_it_meets_a_target_the_aggregated_layout_misses() -> None:
    """Taking prefill chunks out of the decode steps raises each user's speed: with a floor above the
    aggregated layout's speed and below the decode pool's, the split pays (48 users; at 40 and fewer
    the decode pool is no faster per request)."""
    demand = Demand(users=48, prompt_tokens=8192, output_tokens=256)
    base = _split(demand)
    assert base is not None and base.aggregated_per_request_tokens_per_s is not None
    if base.per_request_tokens_per_s <= base.aggregated_per_request_tokens_per_s:
        pytest.skip("no speed gap at this load")
    floor = (base.per_request_tokens_per_s + base.aggregated_per_request_tokens_per_s) / 2
    d = _split(demand, aim=Targets(min_tokens_per_s_per_user=floor))
    assert d is not None and d.pays and "misses" in d.verdict


def test_a_slow_link_between_the_pools_lengthens_the_transfer() -> None:
    slow = NodeLink(kind="ethernet", gbytes_per_s=1.5, source="test")
    local = _split(Demand(rps=2, prompt_tokens=8192, output_tokens=256))
    remote = _split(Demand(rps=2, prompt_tokens=8192, output_tokens=256), between=slow)
    assert local is not None and remote is not None
    assert remote.kv_transfer_s > 10 * local.kv_transfer_s
    assert remote.ttft_s is not None and local.ttft_s is not None and remote.ttft_s > local.ttft_s


def test_a_saturated_prefill_pool_has_no_ttft() -> None:
    d = _split(Demand(rps=400, prompt_tokens=8192, output_tokens=256))
    assert d is not None and not d.holds_load and not d.pays


def test_users_who_overrun_the_prefill_pool_queue_for_it() -> None:
    """A closed loop (--users) cannot send faster than it is served: past the prefill pool's rate the
    users wait for prefill, each N / rate - its own decode time (Little's law), not without bound as
    an open loop (--rps) at that rate does."""
    spec, work = catalog_spec("Llama-3.1-70B"), workload(catalog_spec("Llama-3.1-70B"), 4096)
    users = Demand(users=256, prompt_tokens=3000, output_tokens=150)
    d = disagg.given_split(spec, GPU, work, users, (2, 2), (4, 1))
    assert d is not None and d.ttft_s is not None and not d.holds_load
    assert d.prefill.utilization == 1.0 and d.arrival_rps == pytest.approx(d.prefill.requests_per_s)
    decode_s = 149 / d.per_request_tokens_per_s
    assert d.ttft_s == pytest.approx(256 / d.arrival_rps - decode_s)
    assert d.aggregate_tokens_per_s == pytest.approx(d.prefill.requests_per_s * 150)
    opened = disagg.given_split(
        spec, GPU, work, Demand(rps=d.arrival_rps * 2, prompt_tokens=3000, output_tokens=150), (2, 2), (4, 1)
    )
    assert opened is not None and opened.ttft_s is None


def test_vllm_disagg_benchmark_configuration() -> None:
    """vLLM's public P/D benchmark (vllm-project/vllm benchmarks/disagg_benchmarks/
    disagg_performance_benchmark.sh at 01b2fd30): Llama-3.1-70B on 8x H100, 2048-token prompts, 10
    output tokens, 4 requests/s, one TP=4 prefill and one TP=4 decode instance against two TP=4
    chunked-prefill instances. gpusize picks the same split and, as vLLM's documentation says of
    it, no throughput gain. At vLLM 0.11 and earlier, whose Hopper prefill has its own fitted MFU
    (2026-12-04: 0.34 of the dense peak), the TP=4 prefill instance serves about 4.2 of these prompts
    a second, so 4 a second put it at 94%, over the 80% a plan is sized to
    (`disagg.MAX_PREFILL_UTILIZATION`): the split is said not to hold the load."""
    spec = catalog_spec("Llama-3.1-70B")
    work = workload(spec, 30000)
    demand = Demand(rps=4, prompt_tokens=2048, output_tokens=10)
    layouts = compare(spec, GPU, 8, work, demand)
    pick, _ = recommend(layouts)
    assert pick is not None and pick.fits  # the aggregated layout gpusize recommends (1 x TP=8)
    # compared, as vLLM's script compares it, with two TP=4 chunked-prefill instances
    theirs = next(x for x in layouts if (x.replicas, x.tensor_parallel) == (2, 4))
    d = disagg.disaggregate(spec, GPU, 8, work, demand, theirs)
    assert d is not None
    assert (d.prefill.instances, d.prefill.tensor_parallel) == (1, 4)
    assert (d.decode.instances, d.decode.tensor_parallel) == (1, 4)
    assert d.aggregated_layout == "2 x TP=4" and d.holds_load
    assert d.kv_transfer_bytes_per_request == kvcache.kv_cache_bytes_per_token(spec, 2, 1) * 2048
    assert d.aggregated_tokens_per_s is not None
    assert d.aggregate_tokens_per_s <= d.aggregated_tokens_per_s * 1.05 and not d.pays
    old = replace(work, engine=replace(work.engine, version="0.11.0"))
    at_011 = disagg.disaggregate(spec, GPU, 8, old, demand, theirs)
    assert at_011 is not None and not at_011.holds_load
    assert disagg.MAX_PREFILL_UTILIZATION < at_011.prefill.utilization < 1
