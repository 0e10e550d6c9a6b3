"""`gpusize which` prints the text of every model planned in full (issue 24): with its speed
estimates deferred to the rendering (cli/which.py, render_which), the table and its notes (with and
without --all) at terminal widths from 60 to 200 columns, the --json and the exports are those of
the report with every estimate made, for the sweep of GPUs, counts, contexts, engines, dtypes and
orders of test_which_index.py over every bundled model."""

from __future__ import annotations

from typing import Any

import pytest

import gpusize.cli.which as which_cli
from gpusize.reports.which import build_which
from tests.helpers import CliResult, cli
from tests.serving.test_which_index import SWEEP

WIDTHS = ("60", "80", "100", "140", "200")


def _answers(args: tuple[str, ...]) -> list[CliResult]:
    texts = [cli("which", *args, *form, env={"COLUMNS": w}) for w in WIDTHS for form in ((), ("--all",))]
    return texts + [cli("which", *args, *form) for form in (("--json",), ("--format", "csv"))]


@pytest.mark.parametrize("args", SWEEP, ids=lambda a: " ".join(a))
def test_deferred_estimates_print_the_full_answers(
    monkeypatch: pytest.MonkeyPatch, args: tuple[str, ...]
) -> None:
    deferred = _answers(args)
    with monkeypatch.context() as m:

        def every_estimate(*given: Any, **named: Any) -> Any:
            return build_which(*given[:6], **{k: v for k, v in named.items() if k != "speeds"})

        m.setattr(which_cli, "build_which", every_estimate)
        full = _answers(args)
    assert deferred == full
    assert all(r.code in (0, 1) and r.stdout for r in deferred)
