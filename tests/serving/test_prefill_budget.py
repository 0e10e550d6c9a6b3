"""Prompts that arrive together share the scheduler's prefill budget (`load.packed_prompts`,
`EngineModel.prefill_budget`), and a fixed-length closed loop keeps its clients in step
(`load.Arrivals`).

Upstream rules the tests cite:
- vLLM V1 (`v1/core/sched/scheduler.py` `schedule`): running requests first, then waiting ones, each
  taking min(its remaining prompt tokens, the token budget left) of max_num_batched_tokens, so the
  prompt that does not fit whole is chunked and finishes in a later step; a request's first token is
  sampled in the step that holds its last prompt token.
- SGLang (`managers/schedule_policy.py` `PrefillAdder`): a prefill batch takes requests while both
  rem_chunk_tokens (--chunked-prefill-size) and rem_input_tokens (max_prefill_tokens, 16,384) last;
  --chunked-prefill-size -1 leaves max_prefill_tokens alone.
- TensorRT-LLM: max_num_tokens bounds one iteration's tokens (`llm_args.py`).
- `vllm bench serve --dataset-name random` draws every prompt and reply of the same length at its
  default range ratio 0 (`benchmarks/datasets.py` `RandomDataset`: [len x (1 - r), len x (1 + r)]).
"""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpusize.core.engines import engine
from gpusize.core.engines.sglang_defaults import MAX_PREFILL_TOKENS
from gpusize.serving import load
from gpusize.serving.load import Arrivals, FirstTokenSpread, packed_prompts
from gpusize.sources.catalog import find_gpu
from tests.helpers import catalog_spec, run_in_process, workload


@given(arrived=st.integers(1, 300), per_step=st.floats(0.05, 400.0))
def test_a_prompt_waits_for_itself_and_those_before_it_and_no_more_than_all(
    arrived: int, per_step: float
) -> None:
    done = [packed_prompts(i, arrived, per_step) for i in range(arrived)]
    assert all(i + 1 - 1e-9 <= d <= arrived for i, d in enumerate(done))
    assert all(a <= b for a, b in zip(done, done[1:], strict=False))  # served in arrival order
    assert done[-1] == arrived  # the last step holds what is left


def test_the_last_step_holds_what_is_left_to_the_prompt() -> None:
    # 25 steps of 1.16 prompts make 28.999999999999996 in floating point: the 29th prompt's step
    # holds what is left, all 29 (a hypothesis draw found it)
    assert packed_prompts(28, 29, 1.16) == packed_prompts(27, 29, 1.16) == 29  # both in the 25th step
    assert packed_prompts(26, 29, 1.16) == pytest.approx(24 * 1.16)


def test_one_prompt_a_step_is_the_serial_schedule() -> None:
    assert [packed_prompts(i, 5, 1.0) for i in range(5)] == [1, 2, 3, 4, 5]


def test_the_prompts_of_a_step_get_their_first_tokens_together() -> None:
    # vLLM: 10 prompts of 2,042 tokens into 8,192-token steps: 4 end in the first step (the fifth's
    # first 24 tokens fill it), 4 in the second, the last 2 in the third, which holds what is left
    per_step = 8192 / 2042
    done = [packed_prompts(i, 10, per_step) for i in range(10)]
    assert all(math.isclose(d, per_step) for d in done[:4])
    assert all(math.isclose(d, 2 * per_step) for d in done[4:8])
    assert done[8:] == [10, 10]


def test_a_prompt_longer_than_the_budget_spans_steps_and_shares_its_last() -> None:
    # 20,000-token prompts into 8,192-token steps: the first ends in the third step, whose last
    # 4,576 tokens are the second prompt's first chunk
    assert math.isclose(packed_prompts(0, 2, 8192 / 20000), 3 * 8192 / 20000)
    assert packed_prompts(1, 2, 8192 / 20000) == 2


def test_each_engine_names_its_own_budget() -> None:
    gpu = find_gpu("H100-SXM")
    spec = catalog_spec("Llama-3.1-8B")
    vllm = workload(spec, 8192, max_num_batched_tokens=4096)
    assert load.prompts_per_step(vllm, gpu, 1024) == 4
    sglang = engine("sglang").prefill_budget
    assert sglang is not None
    assert sglang(gpu, workload(spec, 8192, engine_name="sglang", chunked_prefill_size=4096)) == 4096
    assert (
        sglang(gpu, workload(spec, 8192, engine_name="sglang", chunked_prefill_size=-1)) == MAX_PREFILL_TOKENS
    )
    assert (
        sglang(gpu, workload(spec, 8192, engine_name="sglang", chunked_prefill_size=65536))
        == MAX_PREFILL_TOKENS
    )
    trtllm = workload(spec, 8192, engine_name="trtllm", max_num_tokens=2048)
    assert load.prompts_per_step(trtllm, gpu, 512) == 4
    # llama.cpp schedules one prompt a step
    assert engine("llamacpp").prefill_budget is None
    assert load.prompts_per_step(workload(spec, 8192, engine_name="llamacpp"), gpu, 512) == 1.0


@given(
    requests=st.integers(1, 400),
    batch=st.integers(1, 64),
    per_step=st.floats(0.2, 50.0),
    prefill=st.floats(0.001, 1.0),
    wave=st.floats(0.0, 50.0),
)
def test_a_bursts_mean_is_its_schedules_mean_for_any_last_wave(
    requests: int, batch: int, per_step: float, prefill: float, wave: float
) -> None:
    """The mean of the schedule `FirstTokenSpread` serves (what `load.burst` gives as its mean TTFT),
    written out in closed form: whole waves' packed prefills, the last wave's, the waves before each."""
    batch = min(batch, requests)
    spread = FirstTokenSpread(0.1 + prefill, prefill, batch, requests, wave, per_step)
    served = [spread.served(i) for i in range(requests)]

    def mean_packed(arrived: int) -> float:
        return sum(packed_prompts(i, arrived, per_step) for i in range(arrived)) / arrived

    full, last = divmod(requests, batch)
    total = full * batch * (mean_packed(batch) - 1) * prefill
    total += last * (mean_packed(last) - 1) * prefill if last else 0.0
    total += wave * (batch * full * (full - 1) / 2 + last * full)
    assert math.isclose(sum(served) / requests, 0.1 + prefill + total / requests, rel_tol=1e-9, abs_tol=1e-12)


def test_the_burst_model_takes_its_mean_from_that_schedule() -> None:
    spec = catalog_spec("Qwen2.5-7B")
    point = load.burst(spec, workload(spec, 4096), find_gpu("A100-80GB"), 1, 100, 1024, 1024, 30)
    assert point is not None and point.spread is not None and point.ttft_s is not None
    served = [point.spread.served(i) for i in range(100)]
    assert math.isclose(sum(served) / 100, point.ttft_s, rel_tol=1e-9)


def _steady(arrivals: Arrivals, users: int = 10) -> load.LoadPoint:
    spec = catalog_spec("Llama-3.1-8B")
    point = load.steady(
        spec, workload(spec, 8192), find_gpu("H100-SXM"), 1, users, 2048, 1024, 256, arrivals=arrivals
    )
    assert point is not None and point.ttft_s is not None
    return point


def test_the_steady_state_of_independent_clients_is_one_prefill_and_a_step() -> None:
    spec = catalog_spec("Llama-3.1-8B")
    work, gpu = workload(spec, 8192), find_gpu("H100-SXM")
    point = _steady(load.STEADY_STATE)
    prefill = load.prefill_seconds(spec, work, gpu, 1, 2048)
    assert prefill is not None
    request_s = load.speed_on(work, gpu).request_s
    assert math.isclose(point.ttft_s or 0.0, request_s + prefill + point.step.step_s)


def test_synchronized_clients_share_a_prefill_step_of_the_budgets_prompts() -> None:
    independent, synchronized = _steady(load.STEADY_STATE), _steady(Arrivals(synchronized=True))
    spec = catalog_spec("Llama-3.1-8B")
    work, gpu = workload(spec, 8192), find_gpu("H100-SXM")
    prefill = load.prefill_seconds(spec, work, gpu, 1, 2048) or 0.0
    cluster = load.synchronized_cluster(10, load.prompts_per_step(work, gpu, 2048))
    assert cluster == 8192 // 2048  # vLLM's default budget on an 80 GB Hopper GPU (V1, API server)
    assert math.isclose((synchronized.ttft_s or 0.0) - (independent.ttft_s or 0.0), (cluster - 1) * prefill)
    # one client is never in step with another
    assert math.isclose(
        _steady(Arrivals(synchronized=True), 1).ttft_s or 0.0, _steady(load.STEADY_STATE, 1).ttft_s or 0.0
    )


def test_a_runs_first_wave_is_a_burst_and_weighs_by_its_share() -> None:
    settled = _steady(load.STEADY_STATE).ttft_s or 0.0
    short, long = _steady(Arrivals(requests=20)).ttft_s or 0.0, _steady(Arrivals(requests=1000)).ttft_s or 0.0
    assert short > long > settled
    assert math.isclose((short - settled) * 20, (long - settled) * 1000, rel_tol=1e-9)


@given(q=st.floats(0.0, 1.0))
def test_a_runs_quantiles_are_the_percentiles_of_its_requests(q: float) -> None:
    point = _steady(Arrivals(requests=50))
    s = point.spread
    assert s is not None and len(s.opening) == 10 and s.run == 50
    steady = [s.first_s + ((k + 0.5) / 40 - 0.5) * s.wave_s for k in range(40)]
    ordered = sorted([*s.opening, *steady])
    rank = q * 49
    low = math.floor(rank)
    high = min(low + 1, 49)
    want = ordered[low] + (rank - low) * (ordered[high] - ordered[low])
    assert math.isclose(point.ttft_quantile(q) or 0.0, want, rel_tol=1e-12)
    assert math.isclose(sum(ordered) / 50, point.ttft_s or 0.0, rel_tol=1e-9)


def test_serve_says_what_a_fixed_length_benchmark_of_the_load_would_measure() -> None:
    proc = run_in_process("serve", "Llama-3.1-8B", "--gpu", "H100", "--users", "64", "--json")
    pick = json.loads(proc.stdout)["recommendation"]
    assert pick["ttft_in_step_s"] > 1.1 * pick["ttft_s"]
    text = " ".join(run_in_process("serve", "Llama-3.1-8B", "--gpu", "H100", "--users", "64").stdout.split())
    assert f"about {pick['ttft_in_step_s']:.2f} s to the first token after its opening burst" in text
    # one user is never in step with another: the same TTFT, and no line for it
    proc = run_in_process("serve", "Llama-3.1-8B", "--gpu", "H100", "--users", "1", "--json")
    pick = json.loads(proc.stdout)["recommendation"]
    assert pick["ttft_in_step_s"] == pick["ttft_s"]
    assert "in step" not in run_in_process("serve", "Llama-3.1-8B", "--gpu", "H100", "--users", "1").stdout


@pytest.mark.parametrize(
    ("engine", "named", "not_named"),
    [
        ("vllm", "(vllm bench serve --dataset-name random)", "sglang.bench_serving"),
        # SGLang's bench_serving draws lengths from [len x ratio, len] with the ratio at 0.0 by
        # default (python/sglang/bench_serving.py): one length only at --random-range-ratio 1
        (
            "sglang",
            "(python -m sglang.bench_serving --dataset-name random --random-range-ratio 1)",
            "vllm bench serve",
        ),
    ],
)
def test_the_in_step_line_names_the_engines_own_fixed_length_benchmark(
    engine: str, named: str, not_named: str
) -> None:
    args = ("serve", "Llama-3.1-8B", "--gpu", "H100", "--users", "64", "--engine", engine)
    pick = json.loads(run_in_process(*args, "--json").stdout)["recommendation"]
    assert pick["ttft_in_step_s"] > 1.1 * pick["ttft_s"]
    text = " ".join(run_in_process(*args).stdout.split())
    assert f"all of one length {named} keeps its users in step" in text
    assert not_named not in text


def test_the_in_step_line_names_no_command_for_an_engine_without_one() -> None:
    from gpusize.render.serve import in_step_lines
    from gpusize.serving.layouts import Layout

    pick = Layout(replicas=1, tensor_parallel=1, gpus_per_replica=1, split_mode="tensor", fits=True,
                  ttft_s=0.1, ttft_in_step_s=0.3)  # fmt: skip
    (line,) = in_step_lines(pick, None)
    assert line.startswith("A benchmark whose prompts and replies are all of one length keeps its users")
    assert "bench" not in line.split("length", 1)[1].split("keeps", 1)[0]
