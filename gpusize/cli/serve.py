"""`gpusize serve`: replicas versus tensor parallel on one server for a given load."""

from __future__ import annotations

from gpusize.cli import prepare
from gpusize.cli.declare import Option, command
from gpusize.cli.deploy import NodeGpus, OutputDir, ServeFormat, deploy_answer, wants_deploy
from gpusize.cli.emit import answer
from gpusize.cli.options import (
    AcceptanceRate,
    Ctx,
    Disaggregate,
    Dtype,
    EngineValues,
    GpuCount,
    GpuName,
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
    engine_options,
)
from gpusize.core.engines import engine, engines_that
from gpusize.core.suggest import Scope
from gpusize.errors import UsageError
from gpusize.render.serve import render_serve, serve_csv, serve_markdown
from gpusize.reports.serve import build_serve_report, sized_serve_report
from gpusize.serving.layouts import Demand
from gpusize.serving.targets import READING_TOKENS_PER_S
from gpusize.units import parse_count, parse_tokens

__all__ = ["serve"]


@command(short_help="Replicas vs tensor parallel on one server for a load.")
@engine_options("vllm", "sglang", "llamacpp", "ollama", "trtllm")
def serve(
    model: Model,
    *,
    ctx: Ctx = None,
    users: int | None = Option(None, "--users", help="Concurrent users (sequences in flight)."),
    rps: float | None = Option(None, "--rps", help="Requests per second (instead of --users)."),
    prompt: PromptTokens = "1k",
    output: OutputTokens = "256",
    prefix_hit_rate: PrefixHitRate = 0.0,
    min_speed: MinTokensPerUser = READING_TOKENS_PER_S,
    max_ttft_s: MaxTtft = None,
    gpu: GpuName = "H100",
    gpus: GpuCount = None,
    nodes: Nodes = None,
    interconnect: NodeInterconnect = None,
    node_bandwidth: NodeBandwidth = None,
    disaggregated: Disaggregate = False,
    dtype: Dtype = "auto",
    kv_dtype: KvDtype = "auto",
    quantization: Quantization = None,
    engine_values: EngineValues,
    rope_scaling: RopeScaling = None,
    reserved_mib: ReservedMib = 0,
    acceptance_rate: AcceptanceRate = None,
    host_bandwidth: float | None = Option(
        None,
        "--host-bandwidth",
        help="llama.cpp: peak GB/s of system RAM for layers left off the GPUs (default 89.6: "
        "dual-channel DDR5-5600).",
    ),
    revision: Revision = None,
    models_file: ModelsFile = None,
    gpus_file: GpusFile = None,
    quiet: Quiet = False,
    as_json: Json = False,
    fmt: ServeFormat = None,
    output_dir: OutputDir = None,
    node_gpus: NodeGpus = None,
) -> None:
    """Compare replicas and tensor parallel on one server: capacity, speed, resilience and cost.

    Example: gpusize serve Qwen3-8B --users 64 --gpu L40S --gpus 4
    (llama.cpp: gpusize serve model.gguf --users 4 --gpu RTX4090 --gpus 2 --split-mode layer;
    manifests: gpusize serve Qwen3-8B --users 64 --gpu L40S --gpus 4 --format k8s -o deploy/)
    """
    prepare.gpu_count(gpus)
    deploy = wants_deploy(fmt, as_json, output_dir, node_gpus)
    if (users is None) == (rps is None):
        raise UsageError("give exactly one of --users N or --rps R")
    demand = Demand(
        users=parse_count(users, "--users") if users is not None else None,
        rps=prepare.number(rps, "--rps", 0, 1e6),
        prompt_tokens=parse_tokens(prompt, "--prompt-tokens"),
        output_tokens=parse_tokens(output, "--output-tokens"),
        prefix_hit_rate=prepare.hit_rate(prefix_hit_rate),
    )
    aim = prepare.speed_targets(min_speed, max_ttft_s)
    cats = prepare.catalogs(models_file, gpus_file)
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
        gpus=[gpu],
        turn=demand.prompt_tokens + demand.output_tokens,
        acceptance_rate=acceptance_rate,
    )
    if not engine(req.engine.name).serves:
        raise UsageError(
            f"serve compares {engines_that(lambda m: m.serves)} layouts; "
            f"--engine {req.engine.name} is sized by 'fit'"
        )
    prepare.prefix_cache(req.engine.name, prefix_hit_rate)
    host = prepare.number(host_bandwidth, "--host-bandwidth", 0, 10_000)
    work = prepare.workload(spec, req)
    where = prepare.targets(gpu, cats, gpus)
    others = prepare.all_gpus(cats) if where.local_count is None else ()  # this machine's GPUs: no other type
    scope = Scope(gpus=(where.gpus[0],), others=others, count=gpus, max_count=where.max_count)
    if disaggregated:
        prepare.disaggregation(req.engine.name, min(gpus or where.max_count, where.max_count))
    plan = prepare.node_plan(nodes, interconnect, node_bandwidth, where.gpus[0], gpus)
    if plan is not None:
        report = build_serve_report(
            resolved, spec, where.gpus[0], 0, work, demand, host, scope, aim, plan, disaggregated
        )
    elif gpus or disaggregated:
        count = gpus or where.max_count
        report = build_serve_report(
            resolved, spec, where.gpus[0], count, work, demand, host, scope, aim, None, disaggregated
        )
    else:  # as fit sizes: the smallest server of 1/2/4/8 that holds the load (--gpu local: its GPUs)
        report = sized_serve_report(resolved, spec, work, demand, scope, host, aim)
    verdict = 0 if report.serves_load else 1
    if deploy:
        deploy_answer(
            report,
            resolved,
            fmt or "",
            output_dir,
            node_gpus,
            quiet,
            verdict,
            lambda width, style: render_serve(report, width, style),
            where.gpus[0],
        )
    answer(
        report,
        verdict,
        quiet,
        as_json,
        lambda width, style: render_serve(report, width, style),
        fmt,
        {"markdown": lambda: serve_markdown(report), "csv": lambda: serve_csv(report)},
    )
