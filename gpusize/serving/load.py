"""Throughput and time to first token under load (pure): continuous batching of the sequences the KV
cache and the scheduler admit, each request's prefill sharing the steps with the others' decode.
Every figure is an ESTIMATE with a range (`speed_range`: out of sample by source).

Three load shapes, as the public benchmarks run them:
- `steady`: `users` clients each keep one request in flight (`vllm bench serve --max-concurrency N`;
  what `serve --users N` means);
- `burst`: N requests arrive at once (`--request-rate inf`), served in waves of what fits;
- `static_batch_seconds`: one batch prefilled together then decoded (`benchmark_latency`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable

from gpusize.core.engines import engine as engine_model
from gpusize.core.gpu import GpuSpec
from gpusize.core.spec import ModelSpec
from gpusize.core.workload import Workload
from gpusize.dataclass import dataclass, replace
from gpusize.serving import calibrated, speed_ranges
from gpusize.serving.throughput import (
    LlamaCppPlacement,
    Speed,
    architecture_family,
    attention_groups,
    decode_step,
    kernel_rate,
    prefill_seconds,
    speed_on,
)

__all__ = [
    "ACROSS_SERVERS_MEASURED",
    "ACROSS_SERVERS_RUNS",
    "ACROSS_SERVERS_WORDS",
    "BANDS",
    "METRIC_WORDS",
    "TTFT_QUANTILES",
    "MIN_RANGE_FIGURES",
    "PACKING_TOLERANCE",
    "STEADY_P99_OVER_MEDIAN",
    "STEADY_STATE",
    "WIDE_GROUP_ERROR",
    "Arrivals",
    "FirstTokenSpread",
    "LoadPoint",
    "SpeedRange",
    "across_servers",
    "architecture_family",
    "band",
    "burst",
    "packed_prompts",
    "prompts_per_step",
    "per_request_metric",
    "ranged",
    "shown_ranges",
    "speed_range",
    "static_batch_seconds",
    "steady",
    "synchronized_cluster",
    "turn",
]


@dataclass(frozen=True)
class FirstTokenSpread:
    """How the time to first token spreads over a load's requests, by the load model's own schedule
    (no constant of its own): `quantile(q)` as `np.percentile` (linear between ranks) reads a
    benchmark's requests, which is how `vllm bench serve` prints its median and P99 TTFT.

    - A burst (`requests` at once, served `batch` at a time): request i waits for the prefills
      before it in its wave, packed `per_step` prompts a step (`packed_prompts`), and for i // batch
      waves of `wave_s`; the first is served after `first_s` (its own prefill alone). The TTFTs rise
      with i, so the quantile is read off the service order.
    - Steady load (`requests` = 0): each request arrives at a random point of the running decode
      step, so its TTFT is the mean give or take half a step (`first_s` the mean, `wave_s` the
      step): uniform over [mean - step / 2, mean + step / 2]. A run of `run` requests that opened
      with every client at once (`opening`: those first requests' TTFTs) mixes them with the other
      run - len(opening), each the steady mean give or take half a step.
    """

    first_s: float
    prefill_s: float = 0.0
    batch: int = 1
    requests: int = 0
    wave_s: float = 0.0
    per_step: float = 1.0
    opening: tuple[float, ...] = ()
    run: int = 0

    def quantile(self, q: float) -> float:
        if self.opening:
            settled = max(self.run - len(self.opening), 0)
            steady = (self.first_s + ((k + 0.5) / settled - 0.5) * self.wave_s for k in range(settled))
            ordered = sorted((*self.opening, *steady))
            return _percentile(ordered.__getitem__, len(ordered), q)
        if not self.requests:
            return self.first_s + (q - 0.5) * self.wave_s
        return _percentile(self.served, self.requests, q)

    def served(self, i: int) -> float:
        """The time to first token of the burst's i-th request in service order."""
        wave, place = divmod(i, self.batch)
        size = min(self.batch, self.requests - wave * self.batch)
        waited = packed_prompts(place, size, self.per_step) - 1
        return self.first_s + waited * self.prefill_s + wave * self.wave_s


def _percentile(at: Callable[[int], float], count: int, q: float) -> float:
    """`np.percentile`'s linear method over `count` values in rising order, `at(i)` the i-th."""
    rank = q * (count - 1)
    low = int(rank)
    high = min(low + 1, count - 1)
    return at(low) + (rank - low) * (at(high) - at(low))


def packed_prompts(place: int, arrived: int, per_step: float) -> float:
    """Prompts' worth of prefill done when the prompt at `place` (0-based) of `arrived` prompts that
    arrived together gets its first token: the scheduler fills each step's budget (`per_step`
    prompts, `prompts_per_step`) in arrival order, chunking the prompt that does not fit whole, so a
    prompt waits for the end of the step that holds its last chunk, and the last step holds what is
    left. One prompt a step (`per_step` 1): place + 1."""
    steps = math.ceil((place + 1) / per_step - PACKING_TOLERANCE)
    done = steps * per_step
    # the step that reaches the last prompt holds what is left, though the product may fall an ulp
    # short of it (25 steps of 1.16 prompts: 28.999999999999996 of 29)
    return arrived if done >= arrived * (1 - PACKING_TOLERANCE) else done


#: Rounding allowance of `packed_prompts` (a prompt that ends exactly on a step's edge is in it).
PACKING_TOLERANCE = 1e-9


def prompts_per_step(work: Workload, gpu: GpuSpec, tokens: int) -> float:
    """Prompts of `tokens` prefilled tokens one scheduler step holds: the engine's prefill budget
    (`EngineModel.prefill_budget`: vLLM's max_num_batched_tokens, SGLang's chunked prefill) over
    them, below one where a prompt spans steps; 1 where the engine prefills one prompt a step."""
    budget = engine_model(work.engine.name).prefill_budget
    if budget is None or tokens <= 0:
        return 1.0
    return budget(gpu, work) / tokens


@dataclass(frozen=True)
class Arrivals:
    """How a steady load's requests arrive, beside the clients' count.

    - `requests`: the run's requests (`--num-prompts`); a run starts with every client sending at
      once, so its first wave is a burst (`packed_prompts`) before the steady state. None: the
      steady state alone (what `serve --users N` answers).
    - `synchronized`: every prompt and reply of one length (`vllm bench serve --dataset-name random`
      at its default range ratio 0, replies to max_tokens): the requests that got their first tokens
      in one step end in one step, so their successors arrive together, wave after wave, and share
      one prefill step (`synchronized_cluster`). False: the clients drift apart (lengths that vary,
      real users) and each request joins the others' running decode alone.
    """

    requests: int | None = None
    synchronized: bool = False


#: Independent clients in their steady state: what a plan for users answers.
STEADY_STATE = Arrivals()


def synchronized_cluster(batch: int, per_step: float) -> int:
    """Requests of a synchronized load that arrive together after the first wave: those whose
    prefills ended in one step of the first (whole prompts per step, at least one), at most the
    clients."""
    return max(1, min(batch, math.floor(per_step + PACKING_TOLERANCE)))


#: P99 over median time to first token that published steady-load runs measured (the model's spread
#: there is half a step each way): gpustack's performance-lab pages, vLLM and SGLang at 1-8 requests
#: in flight on H100/A100/H200 (tests/data/throughput_records.yaml `gs-*` records' ttft_p99_ms /
#: ttft_median_ms: 1.22 to 4.04; tests/serving/test_ttft_spread.py checks the range against them).
STEADY_P99_OVER_MEDIAN = (1.2, 4.1)
#: The quantiles of the time to first token an answer gives beside its mean (`Layout.ttft_p50_s`,
#: `ttft_p90_s`).
TTFT_QUANTILES = (0.5, 0.9)


@dataclass(frozen=True)
class LoadPoint:
    """One engine instance under load: the sequences decoding together, the speed each sees, the
    instance's output tokens per second, the mean time to first token and how it spreads over the
    requests (`spread`: None where the mean is); at steady load, `ttft_in_step_s`: the mean time to
    first token of the same clients kept in step (`Arrivals.synchronized`) in their steady state."""

    sequences: int
    per_request_tokens_per_s: float
    aggregate_tokens_per_s: float
    ttft_s: float | None
    step: Speed
    spread: FirstTokenSpread | None = None
    ttft_in_step_s: float | None = None

    def ttft_quantile(self, q: float) -> float | None:
        """The time to first token that a share `q` of the requests waits at most (an ESTIMATE)."""
        return None if self.spread is None else self.spread.quantile(q)


#: Concurrency bands the speed ranges are grouped by (sequences in flight per engine instance): the
#: bands of bench/VALIDATION.md.
BANDS = ((1, 1, "1"), (2, 7, "2-7"), (8, 31, "8-31"), (32, 1 << 62, "32+"))
#: Fewest out-of-sample figures a group needs for a range of its own; a smaller group takes its
#: engine's range of the metric (every band and architecture pooled), widened to hold its own.
MIN_RANGE_FIGURES = 5
#: The words of each metric a range is of.
METRIC_WORDS = {
    "decode": "single-sequence decode",
    "aggregate": "tok/s under load",
    "ttft": "time to first token",
}
#: A group whose out-of-sample mean error is above this is flagged in the answer (issue 25's bound).
WIDE_GROUP_ERROR = 0.30
#: What the public measurements of one engine spread over several servers show: the holdout records
#: of tests/data/throughput_records.yaml with `use.nodes` > 1 (SGLang TP16 of DeepSeek-V3/R1 over
#: 2 x 8 H100/H200 on InfiniBand; 2 sources, 4 runs) ran at these multiples of gpusize's tokens/s
#: estimate, per user and in aggregate (tests/serving/test_multinode_records.py recomputes them). Too
#: few to calibrate: a layout across servers is printed without a range, with these figures.
ACROSS_SERVERS_RUNS = 4
ACROSS_SERVERS_MEASURED = (0.07, 0.83)
#: What the answer says of them, wherever it says it.
ACROSS_SERVERS_WORDS = (
    f"the {ACROSS_SERVERS_RUNS} public runs of SGLang TP16 over 2 servers measured "
    f"{ACROSS_SERVERS_MEASURED[0]:g}-{ACROSS_SERVERS_MEASURED[1]:g}x gpusize's tokens/s estimate: read "
    "it as an upper bound"
)


def band(concurrency: int) -> str:
    """The concurrency band (`BANDS`) of `concurrency` sequences in flight on one engine instance
    (fewer than one, as a layout that holds none: the first band; beyond the last, the last)."""
    return next((name for low, high, name in BANDS if low <= max(concurrency, 1) <= high), BANDS[-1][2])


@dataclass(frozen=True)
class SpeedRange:
    """The range shown with one speed figure: where 8 in 10 of the published measurements of its group
    fell against estimates made by a fit that never saw their source (`speed_ranges.RANGES`).

    `low` / `high` multiply the estimate (for ttft, a time); None when the speed is not calibrated
    there (`basis` "none": no group of the engine with enough figures; "servers": one engine across
    servers, `ACROSS_SERVERS_MEASURED`). `basis` "group": the group's own figures; "engine": too few
    of them, the engine's pooled range widened to hold them."""

    metric: str
    engine: str  # the engine, "/<vendor>" on a GPU other than NVIDIA's
    arch: str  # ARCH_WORDS' keys: dense | MoE | MoE-MXFP4
    band: str  # sequences in flight per engine instance (`BANDS`)
    figures: int  # out-of-sample figures of the group
    mean_error: float | None  # their mean |predicted / measured - 1|
    low: float | None
    high: float | None
    basis: str
    engine_figures: int  # out-of-sample figures of the engine's metric, every group pooled
    generated: str  # the date of the LOSO run
    #: The GPU's architecture (`architecture_family`) when no calibration record of the engine ran on
    #: one (`speed_ranges.FITTED_ARCHITECTURES`): the estimate is extrapolated, and the range is
    #: widened to hold the out-of-sample figures on architectures outside their engine's fit
    #: (`speed_ranges.OUTSIDE`); None inside the fit.
    outside_fit: str | None = None
    #: The architectures the engine's constants were fitted on (set with `outside_fit`).
    fitted_on: tuple[str, ...] = ()
    #: The out-of-sample figures on architectures outside their engine's fit the range was widened by.
    outside_figures: int = 0

    @property
    def calibrated(self) -> bool:
        return self.low is not None and self.high is not None

    def who(self) -> str:
        """The engine of the group in words: "vLLM on AMD", "llama.cpp's Metal build" (`speed_group`)."""
        engine, _, part = self.engine.partition("/")
        model = engine_model(engine)
        if part in model.build_labels:
            return f"{model.label}'s {model.build_labels[part]} build"
        return model.label + (f" on {part}" if part else "")

    def where(self) -> str:
        """The group in words, without the metric: "vLLM on AMD MoE, 2-7 in flight"."""
        return f"{self.who()} {ARCH_WORDS.get(self.arch, self.arch)}, {self.band} in flight"

    def words(self) -> str:
        """One plain line for the notes of an answer the range is printed with (on a GPU outside the
        engine's fit, naming its architecture; `outside_words` says what that means)."""
        who = self.who()
        on = f", on {self.outside_fit} GPUs" if self.outside_fit else ""
        group = f"{self.where()}, {METRIC_WORDS[self.metric]}{on}"
        error = f", mean error {self.mean_error:.0%}" if self.mean_error is not None else ""
        wide = self.mean_error is not None and self.mean_error > WIDE_GROUP_ERROR
        flag = f", above {WIDE_GROUP_ERROR:.0%}: read the range, not the estimate" if wide else ""
        if self.basis == "servers":
            return (
                f"{group}, one engine across servers: not calibrated, no range shown ({ACROSS_SERVERS_WORDS})"
            )
        if self.low is None or self.high is None:
            return f"{group}: not calibrated, no range shown ({self.figures} out-of-sample figures, too few)"
        span = f"{self.low:g}-{self.high:g}x the estimate"
        widened = "; widened for these GPUs, below" if self.outside_fit and self.outside_figures else ""
        if self.basis == "engine":
            pooled = f"{who}'s over its {self.engine_figures} figures of the metric"
            if not self.figures:
                return f"{group}: {span} ({pooled}: no figure of this group{widened})"
            return (
                f"{group}: {span} ({pooled}, widened to hold this group's {self.figures}{error}{flag}"
                f"{widened})"
            )
        return (
            f"{group}: {span} (8 in 10 of {self.figures} figures out of sample by source{error}{flag}"
            f"{widened})"
        )

    def outside_words(self) -> str | None:
        """What an estimate on a GPU architecture outside the engine's fit means, once per engine and
        architecture; None inside the fit."""
        if self.outside_fit is None:
            return None
        fitted = ", ".join(self.fitted_on) or "no GPU of its own"
        head = f"{self.outside_fit} GPUs are outside {self.who()}'s speed fit (calibrated on {fitted}): their"
        if not self.outside_figures:  # too few such figures to widen by: said, not widened
            return (
                f"{head} estimates are extrapolated (too few out-of-sample figures there to widen the ranges)"
            )
        return (
            f"{head} estimates are extrapolated, and their ranges widened to hold the {self.outside_figures} "
            "out-of-sample figures of engines on architectures outside their fit"
        )

    def inside(self) -> SpeedRange:
        """The same range as a GPU inside the engine's fit would print it (`outside_fit` cleared; the
        multipliers kept)."""
        return replace(self, outside_fit=None, fitted_on=(), outside_figures=0)


def per_request_metric(sequences: int) -> str:
    """The metric group a per-request speed is validated in, and so ranged by: single-stream decode at
    one sequence in flight, else the load's (bench/calibrate_throughput.py's `Record.figure_class`
    files a per-request figure at two or more in flight under "aggregate")."""
    return "decode" if sequences <= 1 else "aggregate"


def speed_group(engine: str, vendor: str, build: str | None = None) -> str:
    """The group a speed estimate is validated and ranged in (bench/calibrate_throughput.py's
    `Record.group` is this rule): an engine build with constants of its own by that name
    ("llamacpp/metal", `calibrated.speed_key`), else the engine, with the GPU's vendor off NVIDIA
    ("vllm/AMD": the ROCm builds fit only their own constant)."""
    key = calibrated.speed_key(engine, build)
    return key if key != engine or vendor == "NVIDIA" else f"{engine}/{vendor}"


#: The architecture groups a speed estimate is ranged in, and their words: a dense model, a MoE model
#: whose experts are read at the bandwidth (the fused_moe kernel), and one whose experts the step prices by
#: their kernel's weight tiles (`throughput.kernel_rate`: MXFP4 experts, triton_kernels' matmul_ogs,
#: the only family with a fitted rate). The two MoE forms are different terms of the model, with
#: errors of their own.
ARCH_WORDS = {"dense": "dense", "MoE": "MoE", "MoE-MXFP4": "MoE (MXFP4 experts)"}


def speed_arch(spec: ModelSpec, work: Workload, gpu: GpuSpec) -> str:
    """The architecture group (ARCH_WORDS) of `spec` run with `work` on `gpu`."""
    if spec.moe is None:
        return "dense"
    return "MoE-MXFP4" if kernel_rate(spec, work, gpu, speed_on(work, gpu)) else "MoE"


def speed_range(
    engine: str,
    vendor: str,
    arch: str,
    concurrency: int,
    metric: str,
    build: str | None = None,
    architecture: str | None = None,
) -> SpeedRange:
    """The range of a `metric` (decode | aggregate | ttft) estimate for `engine` (its `build`) on a GPU
    of `vendor`, a model of `arch` (`speed_arch`), `concurrency` sequences in flight per engine
    instance: its group's (`speed_group`), its engine's pooled one when the group has fewer than
    MIN_RANGE_FIGURES figures (widened to hold them), none ("not calibrated") when the engine has
    fewer of the metric. On a GPU `architecture` (`architecture_family`) none of the group's
    calibration records ran on, the range is widened to hold the out-of-sample figures of engines on
    architectures outside their fit (`speed_ranges.OUTSIDE`: the group's, else every group's)."""
    who = speed_group(engine, vendor, build)
    where = band(concurrency)
    own = speed_ranges.RANGES.get((who, arch, where, metric))
    pooled = speed_ranges.RANGES.get((who, "*", "*", metric))
    figures, error = (own[0], own[1]) if own else (0, None)
    fitted = speed_ranges.FITTED_ARCHITECTURES.get(who, ())
    outside = architecture is not None and architecture not in fitted
    beyond = _outside_range(who, metric) if outside else None

    def made(low: float | None, high: float | None, basis: str) -> SpeedRange:
        pooled_n = pooled[0] if pooled else 0
        if beyond is not None and low is not None and high is not None:
            low, high = min(low, beyond[2]), max(high, beyond[3])
        return SpeedRange(
            metric,
            who,
            arch,
            where,
            figures,
            error,
            low,
            high,
            basis,
            pooled_n,
            speed_ranges.GENERATED,
            architecture if outside else None,
            fitted if outside else (),
            beyond[0] if beyond is not None else 0,
        )

    if own and own[0] >= MIN_RANGE_FIGURES:
        return made(own[2], own[3], "group")
    if pooled and pooled[0] >= MIN_RANGE_FIGURES:
        low = min(pooled[2], own[2]) if own else pooled[2]
        high = max(pooled[3], own[3]) if own else pooled[3]
        return made(low, high, "engine")
    return made(None, None, "none")


def _outside_range(group: str, metric: str) -> tuple[int, float, float, float] | None:
    """The out-of-sample figures of `metric` on GPU architectures outside their engine's fit: the
    group's where it has MIN_RANGE_FIGURES of them, else every group's pooled; None with fewer."""
    for key in ((group, metric), ("*", metric)):
        found = speed_ranges.OUTSIDE.get(key)
        if found is not None and found[0] >= MIN_RANGE_FIGURES:
            return found
    return None


def across_servers(rng: SpeedRange) -> SpeedRange:
    """`rng` for a layout whose one engine spans servers: not calibrated (no range), saying what the
    public multi-server runs measured (`ACROSS_SERVERS_MEASURED`)."""
    return SpeedRange(
        rng.metric,
        rng.engine,
        rng.arch,
        rng.band,
        rng.figures,
        rng.mean_error,
        None,
        None,
        "servers",
        rng.engine_figures,
        rng.generated,
        rng.outside_fit,
        rng.fitted_on,
        rng.outside_figures,
    )


def shown_ranges(ranges: Iterable[SpeedRange], values: Iterable[float | None]) -> tuple[SpeedRange, ...]:
    """The ranges of the figures an answer shows (a value that is None, as a TTFT when the prefill
    saturates, shows none), each once."""
    return tuple(dict.fromkeys(r for r, v in zip(ranges, values, strict=True) if v is not None))


def ranged(value: float | None, rng: SpeedRange) -> tuple[float | None, float | None]:
    """(low, high) of an estimate by its range; (None, None) when either is missing."""
    if value is None or rng.low is None or rng.high is None:
        return None, None
    return value * rng.low, value * rng.high


def turn(
    step_s: float, prefill_s: float, sequences: int, output: int, request_s: float
) -> tuple[float, float, float]:
    """(time per output token, time to first token, one request's turn) of a closed loop of
    `sequences` decoding together, each request's prefill chunked into the others' decode steps:
    time per output token = step + (sequences - 1) / output x prefill; time to first token =
    request_s + prefill + one step; the turn = TTFT + (output - 1) x time per output token."""
    out = max(output, 1)
    tpot = step_s + (sequences - 1) / out * prefill_s
    first = request_s + prefill_s + step_s
    return tpot, first, first + (out - 1) * tpot


def steady(
    spec: ModelSpec,
    work: Workload,
    gpu: GpuSpec,
    tp: int,
    users: int,
    prompt: int,
    output: int,
    capacity: int,
    llamacpp: LlamaCppPlacement | None = None,
    context: int | None = None,
    cached: int = 0,
    arrivals: Arrivals = STEADY_STATE,
) -> LoadPoint | None:
    """`users` clients each sending their next request when the last one ends, `capacity` sequences
    admitted at once (KV cache, max_num_seqs; the rest queue), each decoding at `context` tokens on
    average (default: the prompt and half the output); `cached` prompt tokens per request come from
    the engine's prefix cache (not prefilled).

    time per output token = step(batch) + (batch - 1) / output x prefill(prompt): every other
    sequence's prefill is chunked into the steps of this one's decode;
    time to first token = request_s + prefill(prompt) + one step + the wait for a free slot, and by
    `arrivals`: its wave's shared prefill step (synchronized clients) and a run's first wave as the
    burst it is;
    aggregate = batch x output / (time to first token + (output - 1) x time per output token)."""
    batch = max(1, min(users, capacity))
    step = decode_step(spec, work, gpu, tp, batch, context or prompt + output // 2, llamacpp)
    if step is None:
        return None
    t_pf = prefill_seconds(spec, work, gpu, tp, prompt, cached=cached)
    split = llamacpp.gpus if llamacpp and llamacpp.split_mode == "row" else 1
    prefill = (t_pf or 0.0) / split
    tpot, first, cycle = turn(step.step_s, prefill, batch, output, speed_on(work, gpu).request_s)
    queued = max(users - batch, 0) / batch * cycle  # clients beyond capacity wait for a slot
    if t_pf is None:
        return LoadPoint(batch, 1 / tpot, batch * max(output, 1) / cycle, None, step, None)
    per_step = prompts_per_step(work, gpu, prompt - min(cached, prompt))
    # synchronized: a wave's successors arrive together and share one prefill step; else each
    # request joins the others' running decode alone
    in_step = first + (synchronized_cluster(batch, per_step) - 1) * prefill
    settled = in_step if arrivals.synchronized else first
    ttft, spread = settled + queued, FirstTokenSpread(settled + queued, wave_s=step.step_s)
    if arrivals.requests:  # the run's first wave: every client at once, a burst's schedule
        wave = FirstTokenSpread(first + queued, prefill, batch, batch, per_step=per_step)
        opening = tuple(wave.served(i) for i in range(batch))
        run = max(arrivals.requests, batch)
        ttft = (sum(opening) + (run - batch) * (settled + queued)) / run
        spread = FirstTokenSpread(settled + queued, wave_s=step.step_s, opening=opening, run=run)
    return LoadPoint(batch, 1 / tpot, batch * max(output, 1) / cycle, ttft, step, spread, in_step + queued)


def burst(
    spec: ModelSpec,
    work: Workload,
    gpu: GpuSpec,
    tp: int,
    requests: int,
    prompt: int,
    output: int,
    capacity: int,
    cached: int = 0,
) -> LoadPoint | None:
    """`requests` arriving at once, admitted `capacity` at a time (continuous batching refills a
    slot as a sequence ends): total time = every prefill + requests x output / batch steps; mean
    time to first token = request_s + the mean of the wave's packed prefills (`packed_prompts`) + the
    waves before each request (the mean of `FirstTokenSpread`'s schedule)."""
    batch = max(1, min(requests, capacity))
    step = decode_step(spec, work, gpu, tp, batch, prompt + output // 2)
    # a burst's prompts spread over data-parallel attention's groups: each prompt's share of their
    # prefill side by side (`attention_groups`; one group: the prompt's own prefill)
    groups = min(attention_groups(spec, work, tp), requests)
    together = prefill_seconds(spec, work, gpu, tp, prompt, groups, cached)
    t_pf = together / groups if together is not None else None
    if step is None or t_pf is None:
        return None
    out = max(output, 1)
    duration = requests * t_pf + requests * out / batch * step.step_s
    wave_s = batch * t_pf + out * step.step_s
    request_s = speed_on(work, gpu).request_s
    per_step = prompts_per_step(work, gpu, prompt - min(cached, prompt))
    spread = FirstTokenSpread(request_s + t_pf, t_pf, batch, requests, wave_s, per_step)
    ttft = sum(spread.served(i) for i in range(requests)) / requests  # the mean of its schedule
    # a sequence admitted early decodes while the rest of its wave is prefilled (chunked prefill)
    tpot = step.step_s + (batch - 1) / 2 * t_pf / out
    return LoadPoint(batch, 1 / tpot, requests * out / duration, ttft, step, spread)


def static_batch_seconds(
    spec: ModelSpec,
    work: Workload,
    gpu: GpuSpec,
    tp: int,
    batch: int,
    prompt: int,
    output: int,
    cached: int = 0,
) -> float | None:
    """One batch of `batch` prompts prefilled together, then `output` decode steps (vLLM
    benchmark_latency's end-to-end latency)."""
    step = decode_step(spec, work, gpu, tp, batch, prompt + output // 2)
    t_pf = prefill_seconds(spec, work, gpu, tp, prompt, batch, cached)
    if step is None or t_pf is None:
        return None
    return t_pf + output * step.step_s
