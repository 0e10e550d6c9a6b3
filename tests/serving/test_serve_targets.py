"""`serve` and `quote` pick by the same per-user targets (issue 25's speed target, issue 23's floor):
a layout whose users get the decode speed floor (and the TTFT limit) is recommended before a faster
aggregate that does not, the recommendation says when none meets them, and the CLI states them."""

from __future__ import annotations

import json

from gpusize.serving.layouts import Layout, recommend
from gpusize.serving.targets import READING_TOKENS_PER_S, Targets
from tests.helpers import cli


def _layout(replicas: int, tp: int, per_user: float, total: float, ttft: float = 0.2, **kw: object) -> Layout:
    aim = kw.pop("targets", Targets())
    assert isinstance(aim, Targets)
    return Layout(
        replicas=replicas,
        tensor_parallel=tp,
        gpus_per_replica=tp,
        split_mode="tensor",
        fits=True,
        serves_all=True,
        capacity_sequences=64,
        per_request_tokens_per_s=per_user,
        aggregate_tokens_per_s=total,
        ttft_s=ttft,
        meets_targets=aim.met_by(per_user, ttft),
        **kw,  # type: ignore[arg-type]
    )


def test_a_layout_meeting_the_floor_beats_a_faster_aggregate_missing_it() -> None:
    aim = Targets(min_tokens_per_s_per_user=20)
    replicas = _layout(4, 1, per_user=8, total=2000, targets=aim)
    tensor = _layout(1, 4, per_user=30, total=1500, targets=aim)
    pick, why = recommend([replicas, tensor], aim)
    assert pick is tensor
    assert "meets the per-user targets" not in why
    free = Targets(min_tokens_per_s_per_user=0)
    pick, _ = recommend([_layout(4, 1, 8, 2000, targets=free), _layout(1, 4, 30, 1500, targets=free)], free)
    assert pick is not None and pick.replicas == 4  # no floor: the highest aggregate, as before


def test_a_ttft_limit_is_a_target_too() -> None:
    aim = Targets(min_tokens_per_s_per_user=0, max_ttft_s=0.5)
    slow_start = _layout(4, 1, per_user=30, total=2000, ttft=2.0, targets=aim)
    quick = _layout(2, 2, per_user=25, total=1500, ttft=0.3, targets=aim)
    pick, _ = recommend([slow_start, quick], aim)
    assert pick is quick


def test_when_no_layout_meets_them_the_recommendation_says_so() -> None:
    aim = Targets(min_tokens_per_s_per_user=100)
    pick, why = recommend([_layout(4, 1, 8, 2000, targets=aim), _layout(1, 4, 30, 1500, targets=aim)], aim)
    assert pick is not None and pick.replicas == 4
    assert "no layout that holds the load meets the per-user targets (at least 100 tok/s each)" in why


def test_serve_states_the_targets_and_marks_each_layout() -> None:
    args = ("serve", "Llama-3.3-70B", "--users", "32", "--gpu", "H100", "--gpus", "8")
    data = json.loads(cli(*args, "--min-tokens-per-s-per-user", "40", "--json").stdout)
    assert data["targets"] == {"min_tokens_per_s_per_user": 40.0, "max_ttft_s": None}
    met = {(x["replicas"], x["tensor_parallel"]): x["meets_targets"] for x in data["layouts"]}
    assert met[(1, 8)] and not met[(4, 2)]
    text = cli(*args, "--min-tokens-per-s-per-user", "40").stdout
    assert "Targets per user: at least 40 tok/s each" in " ".join(text.split())
    default = json.loads(cli(*args, "--json").stdout)
    assert default["targets"]["min_tokens_per_s_per_user"] == READING_TOKENS_PER_S


def test_a_negative_floor_is_refused_on_serve_as_on_quote() -> None:
    for command in ("serve", "quote"):
        out = cli(command, "Qwen3-8B", "--users", "4", "--gpu", "H100", "--min-tokens-per-s-per-user", "-1")
        assert out.code == 2 and "--min-tokens-per-s-per-user" in out.stderr
