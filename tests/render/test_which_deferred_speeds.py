"""`which`'s text table leaves its speed estimates to the rendering (issue 24: a table too narrow
for its tok/s column never shows them): at every width, with and without --all, for a sweep of GPUs,
counts, contexts and engines over every bundled model, the text made from a report whose estimates
are deferred (`build_which(..., speeds=False)`, `render_which(..., with_speed_estimates)`) is the
text of the report with every estimate made; and at a width that drops the column, only the probe's
estimates are made."""

from __future__ import annotations

import pytest

from gpusize.core.gpu import GpuSpec
from gpusize.core.settings import EngineSettings
from gpusize.core.workload import Request
from gpusize.render import which as render
from gpusize.render.text import Style
from gpusize.reports.which import WhichReport, build_which, with_speed_estimates
from gpusize.serving import throughput
from gpusize.sources.catalog import Catalogs, find_gpu

#: (GPU, count, context, engine): a consumer pair, eight datacenter GPUs at a long context, one small
#: card, llama.cpp (its split column) and SGLang.
QUERIES = [
    ("RTX4090", 2, 32_768, "vllm"),
    ("H100", 8, 131_072, "vllm"),
    ("L4", 1, 8_192, "vllm"),
    ("RTX4090", 2, 16_384, "llamacpp"),
    ("A100-80GB", 4, 65_536, "sglang"),
]
#: Widths from narrower than the kept columns to wider than every column, and the two defaults.
WIDTHS = sorted({*range(40, 221, 9), 80, 100})


def _reports(gpu: GpuSpec, count: int, ctx: int, name: str) -> tuple[WhichReport, WhichReport]:
    models, request = (
        Catalogs().parsed_models(),
        Request(context_tokens=ctx, engine=EngineSettings(name=name)),
    )
    return build_which(models, gpu, count, request), build_which(models, gpu, count, request, speeds=False)


@pytest.mark.parametrize(("gpu_name", "count", "ctx", "name"), QUERIES)
def test_deferred_estimates_give_the_text_of_the_full_report(
    gpu_name: str, count: int, ctx: int, name: str
) -> None:
    full, deferred = _reports(find_gpu(gpu_name), count, ctx, name)
    assert any(r.pending_speed for r in deferred.models)
    assert with_speed_estimates(deferred) == full  # the rows, and the speeds once made
    assert all(r.pending_speed is None for r in with_speed_estimates(deferred).models)
    for width in WIDTHS:
        for show_all in (False, True):
            text = render.render_which(full, show_all, width, Style())
            assert render.render_which(deferred, show_all, width, Style(), with_speed_estimates) == text


def test_a_narrow_table_makes_only_the_probes_estimates(monkeypatch: pytest.MonkeyPatch) -> None:
    """At 80 columns the RTX4090 pair's table drops its tok/s column: one decode estimate is made
    (the probe), not one per model; at 200 columns every fitting model's is made."""
    full, deferred = _reports(find_gpu("RTX4090"), 2, 32_768, "vllm")
    calls: list[object] = []
    real = throughput.decode_step

    def counted(*args: object) -> object:
        calls.append(args)
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(throughput, "decode_step", counted)
    narrow = render.render_which(deferred, False, 80, Style(), with_speed_estimates)
    assert "tok/s" in narrow.split("(not shown at this width: ")[1].split(";")[0]
    assert len(calls) == render.SPEED_PROBES
    calls.clear()
    render.render_which(deferred, False, 200, Style(), with_speed_estimates)
    assert len(calls) == len({id(r.pending_speed) for r in deferred.models if r.pending_speed}) > 50
