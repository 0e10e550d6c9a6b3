"""`gpusize quote`: a ranked side-by-side of server options, in every format a buyer needs."""

from __future__ import annotations

import sys

from gpusize.cli import prepare
from gpusize.cli.app import finish
from gpusize.cli.declare import Option, command
from gpusize.cli.emit import output_format, taken
from gpusize.cli.options import (
    AcceptanceRate,
    Ctx,
    Disaggregate,
    Dtype,
    EngineValues,
    GpusFile,
    Json,
    KvDtype,
    MaxTtft,
    MinTokensPerUser,
    Model,
    ModelsFile,
    NodeBandwidth,
    NodeInterconnect,
    Nodes,
    OutputTokens,
    PrefixHitRate,
    PromptTokens,
    Quantization,
    Quiet,
    ReservedMib,
    Revision,
    RopeScaling,
    complete_gpu,
    engine_options,
)
from gpusize.cli.output import distinct_outputs, write_file
from gpusize.core.engines import engine, engines_that
from gpusize.core.plan import TP_SIZES
from gpusize.errors import UsageError
from gpusize.render.quote import render_quote
from gpusize.render.text import Style, terminal_width
from gpusize.reports.quote import build_quote
from gpusize.reports.serialize import to_json
from gpusize.serving.layouts import Demand
from gpusize.serving.quote import DEFAULT_QUOTE_GPUS
from gpusize.serving.targets import READING_TOKENS_PER_S
from gpusize.units import parse_count, parse_tokens

__all__ = ["quote"]

FORMATS = ("table", "markdown", "csv", "json", "html")


@command(short_help="Server options side by side: fit, speed, price, power.")
@engine_options("vllm", "sglang", "trtllm")
def quote(
    model: Model,
    *,
    ctx: Ctx = None,
    users: int | None = Option(None, "--users", help="Concurrent users to serve."),
    prompt: PromptTokens = "1k",
    output_tokens: OutputTokens = "256",
    prefix_hit_rate: PrefixHitRate = 0.0,
    utilization_hours: float = Option(
        730.0,
        "--utilization-hours",
        help="Hours a month the servers would be rented, for buy versus rent (730 = every hour).",
    ),
    min_speed: MinTokensPerUser = READING_TOKENS_PER_S,
    max_ttft_s: MaxTtft = None,
    gpu: list[str] | None = Option(
        None,
        "--gpu",
        help="GPU types to compare (repeat); default a standard set.",
        autocompletion=complete_gpu,
    ),
    dtype: Dtype = "auto",
    kv_dtype: KvDtype = "auto",
    quantization: Quantization = None,
    engine_values: EngineValues,
    rope_scaling: RopeScaling = None,
    reserved_mib: ReservedMib = 0,
    acceptance_rate: AcceptanceRate = None,
    nodes: Nodes = None,
    per_node: int | None = Option(
        None, "--gpus", help="With --nodes: the GPUs in each server (1, 2, 4 or 8; default 8)."
    ),
    interconnect: NodeInterconnect = None,
    node_bandwidth: NodeBandwidth = None,
    disaggregated: Disaggregate = False,
    fmt: str | None = Option(
        None,
        "--format",
        help="Output: table (the default), json (the same as --json), markdown, csv or html.",
    ),
    output: str | None = Option(None, "--output", "-o", help="Write to this file instead of stdout."),
    svg: str | None = Option(
        None,
        "--svg",
        help="Also save a chart of the options (memory per GPU, $/1M tokens, tok/s per user) as SVG.",
    ),
    revision: Revision = None,
    models_file: ModelsFile = None,
    gpus_file: GpusFile = None,
    quiet: Quiet = False,
    as_json: Json = False,
) -> None:
    """A ranked side-by-side of the server options for a model: fit, capacity, speed, price, power.

    Example: gpusize quote Llama-3.3-70B --ctx 32k --users 50 --format markdown
    """
    form = output_format(fmt, as_json, FORMATS)
    distinct_outputs({"-o": output, "--svg": svg})
    lengths = parse_tokens(prompt, "--prompt-tokens"), parse_tokens(output_tokens, "--output-tokens")
    with prepare.reuse():  # each --gpu looked up once, for the engine check and the targets both
        cats = prepare.catalogs(models_file, gpus_file)
        prepare.known_gpus(cats, gpu or ())
        resolved, spec = prepare.load_model(model, revision, False, cats, rope_scaling)
        req = prepare.request(
            resolved,
            spec,
            ctx,
            engine_values,
            dtype=dtype,
            kv_dtype=kv_dtype,
            quantization=quantization,
            reserved_mib=reserved_mib,
            cats=cats,
            gpus=list(gpu or ()),
            acceptance_rate=acceptance_rate,
            turn=sum(lengths),
        )
        if not engine(req.engine.name).pages_kv:
            raise UsageError(
                f"quote compares {engines_that(lambda m: m.pages_kv)} servers; "
                f"--engine {req.engine.name} is sized by 'fit'"
            )
        hit_rate = prepare.hit_rate(prefix_hit_rate)
        prepare.prefix_cache(req.engine.name, hit_rate)
        if disaggregated:
            if users is None:
                raise UsageError("--disaggregate sizes each option's split for a load: give --users N")
            prepare.disaggregation(req.engine.name, max(TP_SIZES))
        work = prepare.workload(spec, req)
        targets = [prepare.targets(name, cats) for name in gpu or DEFAULT_QUOTE_GPUS]
    gpus = [t.gpus[0] for t in targets]
    hours = prepare.number(utilization_hours, "--utilization-hours", 0, 744)
    aim = prepare.speed_targets(min_speed, max_ttft_s)
    if per_node is not None and nodes is None:
        raise UsageError("quote sizes each option's server itself; --gpus sets each server of --nodes N")
    prepare.gpu_count(per_node)
    plans = {g.name: prepare.node_plan(nodes, interconnect, node_bandwidth, g, per_node) for g in gpus}
    report = build_quote(
        resolved,
        spec,
        gpus,
        work,
        parse_count(users, "--users") if users is not None else None,
        hours or 730.0,
        {t.gpus[0].name: t.max_count for t in targets},
        Demand(prompt_tokens=lengths[0], output_tokens=lengths[1], prefix_hit_rate=hit_rate),
        aim,
        {name: plan for name, plan in plans.items() if plan is not None} or None,
        disaggregated,
    )
    code = 0 if report.fits else 1
    if svg:
        from gpusize.render.chart import quote_chart_svg  # noqa: PLC0415 - start-up: only --svg

        write_file(svg, quote_chart_svg(report))
    taken(report, code, lambda width, style: render_quote(report, width, style))
    width, style = terminal_width(sys.stdout), Style.for_stream(sys.stdout)
    text = {
        "table": lambda: render_quote(report, width, style if output is None else Style()),
        "markdown": lambda: _export("to_markdown", report),
        "csv": lambda: _export("to_csv", report),
        "html": lambda: _export("to_html", report),
        "json": lambda: to_json(report) + "\n",
    }[form]()
    if output:
        write_file(output, text)
        finish(None, code)
    finish(None if quiet else text, code)


def _export(name: str, report: object) -> str:
    """A quote export (render/export.py: markdown, CSV, HTML), imported only when one is asked for."""
    from gpusize.render import export  # noqa: PLC0415 - start-up: html, csv and the chart

    text: str = getattr(export, name)(report)
    return text
