"""Issue 25's quote rule as a property (hypothesis): `quote --users N --min-tokens-per-s-per-user X`
never ranks first an option below X when some option that fits reaches X, whatever the prices,
margins, TTFTs and GPU counts; and over the CLI for random loads and floors. The example cases are
tests/cli/test_quote_speed_rule.py."""

from __future__ import annotations

import json
from dataclasses import replace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpusize.serving.quote import Option, rank
from gpusize.serving.targets import Targets
from tests.helpers import cli

#: The Option fields this test leaves empty (memory, capacity, throughput, prices, power).
NULLABLE = [
    *("reason", "weights_bytes", "kv_cache_bytes", "activations_bytes", "overhead_bytes"),
    *("usable_bytes", "headroom_bytes", "kv_cache_capacity_tokens", "max_concurrency"),
    *("per_request_tokens_per_s_low", "per_request_tokens_per_s_high", "aggregate_tokens_per_s"),
    *("aggregate_tokens_per_s_low", "aggregate_tokens_per_s_high", "usd_per_month"),
    *("usd_per_million_tokens", "usd_per_million_tokens_low", "usd_per_million_tokens_high"),
    *("power_w", "psu"),
]


def _option(
    i: int, fits: bool, speed: float | None, ttft: float | None, thin: bool, price: float | None
) -> Option:
    none: dict[str, None] = dict.fromkeys(NULLABLE)
    return Option(
        gpu=f"G{i}",
        gpu_full_name=f"GPU {i}",
        num_gpus=1 + i % 8,
        replicas=1,
        tensor_parallel=1,
        fits=fits,
        capacity_sequences=1,
        serves_all=fits,
        thin_margin=fits and thin,
        per_request_tokens_per_s=speed,
        ttft_s=ttft,
        meets_targets=False,
        usd_per_hour=price,
        usd_per_user_hour=price,
        servers=1,
        interconnect="pcie",
        caveats=(),
        **none,
    )


OPTIONS = st.lists(
    st.tuples(
        st.booleans(),
        st.one_of(st.none(), st.floats(0.1, 500)),
        st.one_of(st.none(), st.floats(0.01, 30)),
        st.booleans(),
        st.one_of(st.none(), st.floats(0.1, 100)),
    ),
    min_size=1,
    max_size=12,
)


@given(OPTIONS, st.floats(0.0, 400), st.one_of(st.none(), st.floats(0.05, 20)), st.booleans())
def test_rank_never_puts_first_an_option_below_the_floor(
    raw: list[tuple[bool, float | None, float | None, bool, float | None]],
    floor: float,
    max_ttft: float | None,
    per_user: bool,
) -> None:
    aim = Targets(floor, max_ttft)
    options = [_option(i, *r) for i, r in enumerate(raw)]
    # as quote sets it (serving/layouts.py, quote.option_from): an option that fits and meets both targets
    options = [
        replace(o, meets_targets=o.fits and aim.met_by(o.per_request_tokens_per_s, o.ttft_s)) for o in options
    ]
    ranked = rank(options, per_user=per_user)
    if any(o.meets_targets for o in options):
        first = ranked[0]
        assert first.fits and first.per_request_tokens_per_s is not None
        assert first.per_request_tokens_per_s >= floor
    fitting = [o.meets_targets for o in ranked if o.fits]
    assert fitting == sorted(fitting, reverse=True)  # every option meeting the targets before the rest


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(["Llama-3.1-8B", "Qwen3-30B-A3B"]), st.integers(1, 2000), st.floats(1, 300))
def test_quote_cli_never_ranks_first_an_option_below_the_floor(model: str, users: int, floor: float) -> None:
    args = (
        "quote",
        model,
        "--ctx",
        "8k",
        "--users",
        str(users),
        "--min-tokens-per-s-per-user",
        f"{floor:.3f}",
    )
    result = cli(*args, "--json")
    assert result.code in (0, 1), result.stderr
    x = float(f"{floor:.3f}")
    fitting = [o for o in json.loads(result.stdout)["options"] if o["fits"]]
    reaches = [
        o["per_request_tokens_per_s"] is not None and o["per_request_tokens_per_s"] >= x for o in fitting
    ]
    if any(reaches):
        assert fitting[0]["per_request_tokens_per_s"] >= x
