"""The P/D rule (serving/disagg.py) against published disaggregated deployments
(tests/data/pd_records.yaml): the measured split predicted within the throughput model's stated range
(measured / predicted inside the range the answer prints: load.speed_range, out of sample by
source, bench/VALIDATION.md), or a stated miss; and
`serve --disaggregate` on each record's configuration gives a P/D layout and its comparison."""

from __future__ import annotations

import json
from dataclasses import replace
from functools import cache
from typing import Any

import pytest
import yaml

from gpusize.core.network import node_link
from gpusize.serving import disagg, load
from gpusize.serving.layouts import Demand, compare
from gpusize.serving.throughput import decode_step
from gpusize.sources.catalog import find_gpu
from tests.conftest import ROOT
from tests.helpers import catalog_spec, run_in_process, workload


@cache
def _records() -> tuple[dict[str, Any], ...]:
    data = yaml.safe_load((ROOT / "tests" / "data" / "pd_records.yaml").read_text())
    return tuple(data["records"])


def _record(record_id: str) -> dict[str, Any]:
    (record,) = [r for r in _records() if r["id"] == record_id]
    return record


def _work(use: dict[str, Any], engine: str) -> Any:
    """The record's workload; `use.release`, where the source states the vLLM release it ran, is the
    speed model's (vLLM 0.14's async scheduling), as bench/calibrate_throughput.py sets it; the
    memory model keeps the release the records were sized with."""
    spec = catalog_spec(use["model"])
    work = workload(
        spec, use["context_tokens"], dtype=use["dtype"], kv_dtype=use["kv_dtype"], engine_name=engine
    )
    if "release" in use:
        work = replace(work, engine=replace(work.engine, version=str(use["release"])))
    return work


def _predicted(record: dict[str, Any]) -> disagg.Disaggregated:
    use = record["use"]
    spec = catalog_spec(use["model"])
    gpu = find_gpu(use["gpu"])
    work = _work(use, record["engine"])
    # a closed loop of `users`, or an open loop at `rps` (sglang.bench_serving --request-rate)
    demand = Demand(
        users=use.get("users"),
        rps=use.get("rps"),
        prompt_tokens=use["prompt_tokens"],
        output_tokens=use["output_tokens"],
    )
    p, d = use["prefill"], use["decode"]
    got = disagg.given_split(
        spec,
        gpu,
        work,
        demand,
        (p["tensor_parallel"], p["instances"]),
        (d["tensor_parallel"], d["instances"]),
        between=node_link(gpu) if use.get("nodes", 1) > 1 else None,
    )
    assert got is not None
    return got


def _range(engine: str, use: dict[str, Any], users: int, figure: str) -> tuple[float, float]:
    """The (low, high) multipliers the answer prints for `figure` at `users` in flight (NVIDIA)."""
    arch = load.speed_arch(catalog_spec(use["model"]), _work(use, engine), find_gpu(use["gpu"]))
    got = load.speed_range(engine, "NVIDIA", arch, users, figure)
    assert got.low is not None and got.high is not None
    return got.low, got.high


def _in_flight(record: dict[str, Any]) -> int:
    """Sequences in flight, which select the range: the closed loop's users, or for an open loop the
    rate x the measured mean end-to-end latency (Little's law)."""
    use = record["use"]
    return int(use.get("users") or max(1, round(use["rps"] * record["figures"]["e2e_s"])))


def _misses(record: dict[str, Any]) -> list[str]:
    """Each figure whose measured / predicted is outside the engine's stated range (a TTFT predicted
    as unbounded, None, is a miss)."""
    got = _predicted(record)
    predicted = {
        "aggregate": got.aggregate_tokens_per_s,
        "decode": got.per_request_tokens_per_s,
        "ttft": got.ttft_s,
    }
    measured = record["figures"]
    out = []
    for figure, key in (
        ("aggregate", "aggregate_tokens_per_s"),
        ("decode", "decode_tokens_per_s"),
        ("ttft", "ttft_s"),
    ):
        # a per-request speed is ranged as the answers range it: by the load's group above one sequence
        metric = load.per_request_metric(_in_flight(record)) if figure == "decode" else figure
        low, high = _range(record["engine"], record["use"], _in_flight(record), metric)
        value = predicted[figure]
        ratio = measured[key] / value if value else float("inf")
        if not low <= ratio <= high:
            out.append(
                f"{figure}: measured {measured[key]} / predicted {value} = {ratio:.2f} not in [{low}, {high}]"
            )
    return out


def _cases() -> list[Any]:
    return [
        pytest.param(
            r,
            id=r["id"],
            marks=[pytest.mark.xfail(strict=True, reason=r["known_miss"])] if r.get("known_miss") else [],
        )
        for r in _records()
    ]


@pytest.mark.parametrize("record", _cases())
def test_the_measured_split_is_predicted_within_the_stated_range(record: dict[str, Any]) -> None:
    assert _misses(record) == []


def test_the_known_miss_is_the_one_stated() -> None:
    # the TTFT outside the range (0.50x: 2.30 s predicted, 1.157 s measured), the aggregate and the
    # per-user decode speed inside: since Hopper's prefill has its own fitted MFU (2026-12-04, second
    # session) the 4 x TP=2 prefill pool is predicted to serve 11.8 requests/s, and the 48 users'
    # closed loop saturates it and queues; the run moved 9.3 with a shorter queue (2.25x the other way
    # before, when the pool was predicted at 17-18.5 requests/s)
    record = _record("triton-distributed-llama70b-fp8-h100-4xtp2-1xtp8")
    got = _predicted(record)
    assert not got.holds_load and got.prefill.utilization == pytest.approx(1.0)
    assert got.ttft_s is not None and 0.45 < record["figures"]["ttft_s"] / got.ttft_s < 0.55
    assert 1.2 < got.aggregate_tokens_per_s / record["figures"]["aggregate_tokens_per_s"] < 1.35
    assert 0.7 < record["figures"]["decode_tokens_per_s"] / got.per_request_tokens_per_s < 0.8
    assert 11 < got.prefill.requests_per_s < 12.5
    assert [m.split(":")[0] for m in _misses(record)] == ["ttft"]
    # the notes' reason: the same source's aggregated baseline (1 x TP=4, 4 users) is within the
    # aggregate range, decodes as the fit does and starts each request about half a second late
    use, base = record["use"], record["baseline"]
    spec = catalog_spec(use["model"])
    work = _work(use, "vllm")
    demand = Demand(users=4, prompt_tokens=use["prompt_tokens"], output_tokens=use["output_tokens"])
    (tp4,) = [x for x in compare(spec, find_gpu(use["gpu"]), 4, work, demand) if x.tensor_parallel == 4]
    assert tp4.aggregate_tokens_per_s is not None and tp4.ttft_s is not None
    low, high = _range("vllm", use, 4, "aggregate")
    assert low <= base["aggregate_tokens_per_s"] / tp4.aggregate_tokens_per_s <= high
    # it decodes at 1.09x the fit (1.01x before Hopper's prefill had its own MFU, 2026-12-04: the other
    # users' prefill chunks in its steps now take longer; 0.90x before the layer-kernels fit), within
    # the printed range
    assert 1.0 < base["decode_tokens_per_s"] / tp4.per_request_tokens_per_s < 1.15
    assert tp4.per_request_tokens_per_s_low is not None
    assert tp4.per_request_tokens_per_s_low <= base["decode_tokens_per_s"]
    assert base["ttft_s"] - tp4.ttft_s > 0.4


def _load_flags(use: dict[str, Any]) -> list[str]:
    """The record's load as `serve` takes it: users and the prompt and output lengths."""
    return [
        "--users",
        str(use["users"]),
        "--prompt-tokens",
        str(use["prompt_tokens"]),
        "--output-tokens",
        str(use["output_tokens"]),
    ]


def _disaggregated(args: list[str]) -> Any:
    """The `disaggregated` object of `serve ... --disaggregate --json` (the command answered)."""
    out = run_in_process(*args)
    assert out.code in (0, 1), out.stderr
    return json.loads(out.stdout)["disaggregated"]


def test_serve_disaggregate_plans_and_compares_the_published_configuration() -> None:
    record = _record("triton-distributed-llama70b-fp8-h100-4xtp2-1xtp8")
    use = record["use"]
    args = [
        "serve",
        use["model"],
        "--gpu",
        use["gpu"],
        "--nodes",
        str(use["nodes"]),
        *_load_flags(use),
        "--quantization",
        use["dtype"],
        "--kv-dtype",
        use["kv_dtype"],
        "--ctx",
        str(use["context_tokens"]),
        "--disaggregate",
        "--json",
    ]
    split = _disaggregated(args)
    assert split is not None
    pools = split["prefill"], split["decode"]
    assert sum(p["instances"] * p["tensor_parallel"] for p in pools) == 16
    assert split["aggregated_layout"] and split["verdict"].startswith(("pays", "does not pay"))
    assert "InfiniBand" in split["link"]


def _aggregated(record: dict[str, Any], gpus: int, tp: int) -> Any:
    """`serve`'s aggregated layout of `gpus` GPUs in TP=`tp` instances at the record's load."""
    use = record["use"]
    spec = catalog_spec(use["model"])
    demand = Demand(
        users=use.get("users"),
        rps=use.get("rps"),
        prompt_tokens=use["prompt_tokens"],
        output_tokens=use["output_tokens"],
    )
    work = _work(use, record["engine"])
    (got,) = [x for x in compare(spec, find_gpu(use["gpu"]), gpus, work, demand) if x.tensor_parallel == tp]
    return got


def test_the_a10_tp4_miss_is_the_decode_step_not_the_split() -> None:
    # Mooncake's SGLang 1P1D (TP=4 each) at 1 request/s: the per-user decode speed about 2.1x the
    # prediction, outside SGLang dense's range under load since the layer-kernels fit narrowed it
    # (0.7-1.42x; inside the earlier 0.72-2.89x), the aggregate inside, the TTFT under its range
    # (0.51x); the source's aggregated baseline (2 x TP=4 on the same 8 GPUs) misses the same way
    # while its TTFT agrees, so it is the TP=4 step on four PCIe A10s
    record = _record("mooncake-sglang-qwen2.5-7b-gptq-a10-1p1d-tp4-rate1")
    got = _predicted(record)
    assert got.holds_load and got.ttft_s is not None
    assert [m.split(":")[0] for m in _misses(record)] == ["decode", "ttft"]
    assert 0.45 < record["figures"]["ttft_s"] / got.ttft_s < 0.54
    assert 2.0 < record["figures"]["decode_tokens_per_s"] / got.per_request_tokens_per_s < 2.5
    base = record["baseline"]
    agg = _aggregated(record, 8, 4)
    assert 1.9 < base["decode_tokens_per_s"] / agg.per_request_tokens_per_s < 2.3
    assert 0.9 < base["ttft_s"] / agg.ttft_s < 1.2


def test_the_a10_tp2_miss_is_the_prefill_pool_at_its_edge() -> None:
    # Mooncake's SGLang 1P1D (TP=2 each) at 4 requests/s: the one prefill instance is predicted just
    # under the rate sent (an open loop past it: no TTFT), decode speed and aggregate inside; the
    # aggregated baseline's TTFT (2 instances at 2 requests/s each) agrees with the measured
    record = _record("mooncake-sglang-qwen2.5-7b-gptq-a10-1p1d-tp2-rate4")
    got = _predicted(record)
    assert got.ttft_s is None and not got.holds_load
    assert 0.95 < record["use"]["rps"] / got.prefill.requests_per_s < 1.1
    # the aggregate (0.61x) is inside SGLang's range under load since the data-parallel attention
    # records widened it (0.5-1.4x, 2026-12-04 third session): only the unbounded TTFT misses
    assert [m.split(":")[0] for m in _misses(record)] == ["ttft"]
    agg = _aggregated(record, 4, 2)
    assert agg.ttft_s is not None and 0.9 < record["baseline"]["ttft_s"] / agg.ttft_s < 1.1


def _measured_batch(record: dict[str, Any]) -> int:
    """Sequences decoding in a closed loop by Little's law on the measured latencies: the users x
    the share of each request's cycle spent decoding (output - 1 inter-token gaps after the TTFT)."""
    figures, use = record["figures"], record["use"]
    decoding = (use["output_tokens"] - 1) / figures["decode_tokens_per_s"]
    return round(use["users"] * decoding / (figures["ttft_s"] + decoding))


@pytest.mark.parametrize(
    ("record_id", "gpus", "tp", "step_ratio", "missed"),
    [
        # the TTFT inside its range since prefill attention is counted per layer kind (2026-12-04, 4th)
        ("dynamo-vllm-llama70b-fp8-b200-4xtp1-1xtp4-c32", 8, 4, (1.7, 1.9), ["aggregate"]),
        (
            "dynamo-vllm-llama70b-fp8-b200-3xtp1-1xtp1-c16",
            4,
            1,
            (1.75, 1.95),
            ["aggregate", "decode", "ttft"],
        ),
    ],
)
def test_the_b200_dynamo_misses_are_shared_with_the_sources_aggregated_runs(
    record_id: str, gpus: int, tp: int, step_ratio: tuple[float, float], missed: list[str]
) -> None:
    # Dynamo 1.2.1 on B200 (GKE, benchmarked through kubectl port-forward; the vLLM release inside the
    # image is not stated, so the newest's async scheduling is modelled): the aggregate and TTFT miss
    # (and the per-user decode speed of the 1:1 split). (1) the source's aggregated baseline on the
    # same GPUs starts requests over a second late too (TTFT 7x+ the prediction) while its decode speed
    # agrees within 15%; (2) the P/D decode instance, at the batch the measured latencies give, steps
    # 1.8x the fit's step without prefill in it and no faster than the aggregated instances that also
    # prefill
    record = _record(record_id)
    assert [m.split(":")[0] for m in _misses(record)] == missed
    base, use = record["baseline"], record["use"]
    agg = _aggregated(record, gpus, tp)
    assert agg.ttft_s is not None and base["ttft_s"] / agg.ttft_s > 7
    assert 0.85 < base["decode_tokens_per_s"] / agg.per_request_tokens_per_s < 1.15
    assert record["figures"]["decode_tokens_per_s"] <= base["decode_tokens_per_s"]
    spec = catalog_spec(use["model"])
    context = use["prompt_tokens"] + use["output_tokens"] // 2
    d_tp = use["decode"]["tensor_parallel"]
    work = _work(use, record["engine"])
    step = decode_step(spec, work, find_gpu(use["gpu"]), d_tp, _measured_batch(record), context)
    assert step is not None
    low, high = step_ratio
    assert low < 1 / record["figures"]["decode_tokens_per_s"] / step.step_s < high


def test_the_gptoss_misses_are_the_ranges_set_by_other_misses() -> None:
    # Ray Serve + vLLM 0.11 + NIXL, gpt-oss-120b: every record's TTFT is inside its group's range since
    # Hopper's prefill and the routed experts' GEMMs have MFUs of their own (2026-12-04, second
    # session): measured 1.0-1.7x the prediction, 2.4-4.2x before, and the source's collocated
    # baselines 1.25-3.5x (about 2x at 4-8 users, 4.8x at 32 before). The source's own prefill-only
    # run had said so: gpt-oss-120b prefilled at half the rate the fit then gave it. The per-user
    # decode speed is within 13-21% of the estimate in all four (MXFP4 experts priced by matmul_ogs's
    # tiles); where it misses, it is under the narrow ranges of vLLM MoE (MXFP4 experts) at 2-7 and
    # 8-31 in flight (the other gpt-oss runs on H100 are estimated too slow, these through Ray Serve
    # too fast)
    # (2026-12-04, fourth session: with prefill attention counted per layer kind and the refit, the
    # 32-user and the two-server TTFTs sit just above their ranges, 1.54x against 0.73-1.49x and 1.74x
    # against 0.72-1.73x; the other two inside)
    ids = [r["id"] for r in _records() if r["id"].startswith("rayserve-vllm-gptoss120b")]
    assert len(ids) == 4
    just_above = {
        "rayserve-vllm-gptoss120b-h100-1xtp4-1xtp4-c32",
        "rayserve-vllm-gptoss120b-h200-1xtp4-1xtp4-2nodes-c16",
    }
    for record_id in ids:
        record = _record(record_id)
        assert ("ttft" in [m.split(":")[0] for m in _misses(record)]) == (record_id in just_above)
        got = _predicted(record)
        assert got.ttft_s is not None and 1.0 < record["figures"]["ttft_s"] / got.ttft_s < 1.75
        assert 0.85 < record["figures"]["decode_tokens_per_s"] / got.per_request_tokens_per_s < 1.25
        if "baseline" in record:
            layout = record["baseline"]["layout"]
            replicas, tp = int(layout[0]), int(layout.split("TP=")[1].split()[0])
            agg = _aggregated(record, replicas * tp, tp)
            assert agg.ttft_s is not None and record["baseline"]["ttft_s"] / agg.ttft_s > 1.2
    c4 = _record("rayserve-vllm-gptoss120b-h100-1xtp4-1xtp4-c4")
    c32 = _record("rayserve-vllm-gptoss120b-h100-1xtp4-1xtp4-c32")
    fit_growth = _predicted(c4).per_request_tokens_per_s / _predicted(c32).per_request_tokens_per_s
    measured_growth = c4["figures"]["decode_tokens_per_s"] / c32["figures"]["decode_tokens_per_s"]
    assert 1.8 < fit_growth < 2.5 and measured_growth < 1.7  # the fit's step still grows faster
    base_c32 = _aggregated(c32, 8, 4)
    # the collocated baseline at 32 users decodes 1.26x the estimate (1.0x before 2026-12-04): its
    # steps now carry longer prefill chunks of the other users' 5,000-token prompts
    assert 1.15 < c32["baseline"]["decode_tokens_per_s"] / base_c32.per_request_tokens_per_s < 1.35


def test_serve_disaggregate_plans_and_compares_a_reproduced_configuration() -> None:
    # a record inside the stated range on all three figures (dstack's SGLang 1P1D, gpt-oss-120b on
    # four H200, 32 users): `serve --disaggregate` on its GPUs and load gives a split and its
    # comparison with the aggregated layout
    record = _record("dstack-sglang-gptoss120b-h200-1xtp2-1xtp2-c32-out32k")
    assert _misses(record) == []
    use = record["use"]
    gpus = sum(use[side]["tensor_parallel"] * use[side]["instances"] for side in ("prefill", "decode"))
    args = [
        "serve",
        use["model"],
        "--gpu",
        use["gpu"],
        "--gpus",
        str(gpus),
        "--engine",
        record["engine"],
        *_load_flags(use),
        "--ctx",
        str(use["context_tokens"]),
        "--disaggregate",
        "--json",
    ]
    split = _disaggregated(args)
    assert split is not None and split["holds_load"]
    pools = split["prefill"], split["decode"]
    assert sum(p["instances"] * p["tensor_parallel"] for p in pools) == gpus
    assert split["aggregated_layout"] and split["verdict"].startswith(("pays", "does not pay"))
    assert "inside the server" in split["link"]


def test_the_answer_counts_the_records_as_they_are() -> None:
    """`serve --disaggregate`'s note (disagg.CHECKED_WORDS) states how many records there are and how
    many are inside the range on every figure: recounted here from the records."""
    inside = [r for r in _records() if not r.get("known_miss")]
    assert all(_misses(r) == [] for r in inside)
    verb = "is" if len(inside) == 1 else "are"
    said = (
        f"of the {len(_records())} published prefill/decode runs it is checked against, {len(inside)} {verb}"
    )
    assert disagg.CHECKED_WORDS.startswith(said)
