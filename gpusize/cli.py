"""Typer app: parse, call the core, render, exit code. Thin.

Exit status is the verdict: 0 fits / ok, 1 does not fit (the report is still printed),
2 bad input or could not answer, 3 internal error. No traceback unless GPUSIZE_DEBUG=1.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import replace
from typing import Any

import typer
from rich.console import Console
from rich.text import Text

from gpusize import __version__
from gpusize.errors import GpusizeError, UsageError

app = typer.Typer(
    add_completion=True,
    no_args_is_help=True,
    rich_markup_mode=None,
    help="How much GPU memory does this LLM need, and which GPUs run it?",
)

DTYPES = ("auto", "fp32", "bf16", "fp16", "fp8", "int8", "int4")
KV_DTYPES = ("auto", "bf16", "fp16", "fp8")
ENGINES = ("vllm", "sglang", "llamacpp", "transformers")


def _stdout() -> Console:
    return Console(width=int(os.environ.get("COLUMNS", "0")) or None, soft_wrap=False)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"gpusize {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """gpusize sizes LLM inference memory and picks the smallest tensor-parallel split."""


_QUIET = typer.Option(False, "--quiet", "-q", help="Print nothing; the exit code is the answer.")


def _revision_option() -> Any:
    return typer.Option(
        None, "--revision", help="Hub branch, tag or commit (default main); skips the catalog."
    )


def _models_file_option() -> Any:
    return typer.Option(None, "--models-file", help="Extra model catalog YAML (or GPUSIZE_MODELS).")


def _gpus_file_option() -> Any:
    return typer.Option(None, "--gpus-file", help="Extra GPU catalog YAML (or GPUSIZE_GPUS).")


def _user_catalogs(models_file: str | None, gpus_file: str | None) -> None:
    from pathlib import Path

    from gpusize import catalog

    if models_file:
        catalog.add_user_file("models", Path(models_file))
    if gpus_file:
        catalog.add_user_file("gpus", Path(gpus_file))


def _choice(value: str, allowed: tuple[str, ...], what: str) -> str:
    key = value.strip().lower()
    if key not in allowed:
        raise UsageError(f"unknown {what} '{value}'; use one of {', '.join(allowed)}")
    return key


@app.command()
def fit(
    model: str = typer.Argument(
        ..., help="Catalog name, Hub id in the catalog, or a local config.json / folder."
    ),
    ctx: str = typer.Option("8k", "--ctx", help="Context length per sequence: 8192, 32k, 1m."),
    batch: int = typer.Option(1, "--batch", help="Concurrent sequences at full context."),
    dtype: str = typer.Option("auto", "--dtype", help=f"Weights: {', '.join(DTYPES)}."),
    kv_dtype: str = typer.Option("auto", "--kv-dtype", help=f"KV cache: {', '.join(KV_DTYPES)}."),
    gpu: str | None = typer.Option(None, "--gpu", help="Restrict to one GPU type."),
    gpus: int | None = typer.Option(None, "--gpus", help="Fix the GPU count (1, 2, 4 or 8)."),
    engine: str | None = typer.Option(
        None, "--engine", help="vllm (default), sglang, llamacpp (default for .gguf), transformers."
    ),
    utilization: float | None = typer.Option(
        None,
        "--gpu-memory-utilization",
        help="Fraction of each GPU the engine may use (vLLM 0.19 default 0.9).",
    ),
    n_gpu_layers: int | None = typer.Option(
        None, "--n-gpu-layers", help="llama.cpp: layers on the GPU (default all; the rest in system RAM)."
    ),
    flash_attn: bool = typer.Option(
        False, "--flash-attn", help="llama.cpp: flash attention (smaller buffer)."
    ),
    mem_fraction: float | None = typer.Option(
        None, "--mem-fraction-static", help="SGLang: static memory fraction (default from GPU size and TP)."
    ),
    mtp: bool = typer.Option(False, "--mtp", help="Load the checkpoint's MTP layers (speculative decoding)."),
    nodes: int | None = typer.Option(
        None, "--nodes", help="Allow N servers of 8 GPUs (TP=8 x PP=N) when one server is not enough."
    ),
    best_effort: bool = typer.Option(
        False, "--best-effort", help="Size an unsupported architecture as a Llama-style decoder (flagged)."
    ),
    revision: str | None = _revision_option(),
    models_file: str | None = _models_file_option(),
    gpus_file: str | None = _gpus_file_option(),
    quiet: bool = _QUIET,
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Size a model for inference and find the smallest set of GPUs in one server that runs it."""
    from gpusize import report

    if batch <= 0:
        raise UsageError(f"invalid --batch {batch}: must be greater than zero")
    _check_count(gpus)
    _user_catalogs(models_file, gpus_file)
    origin, spec, counts, work = _prepare(
        model, ctx, dtype, kv_dtype, engine, utilization, mtp, best_effort, revision
    )
    work = replace(work, batch=batch)
    options = _engine_options(origin, work.engine, n_gpu_layers, flash_attn, mem_fraction)
    if nodes is not None and not 2 <= nodes <= 64:
        raise UsageError(f"invalid --nodes {nodes}: use 2 to 64 servers")
    targets, max_count = _targets(gpu)
    result = report.build_fit_report(
        origin,
        spec,
        counts,
        targets,
        work,
        fixed_count=gpus,
        max_count=max_count,
        options=options,
        nodes=nodes,
    )
    if quiet:
        pass
    elif as_json:
        typer.echo(json.dumps(result.model_dump(mode="json"), indent=2))
    else:
        from gpusize.render import render_fit

        render_fit(result, _stdout(), targets)
    raise typer.Exit(0 if result.fits else 1)


def _engine_options(
    origin: Any, engine: str, n_gpu_layers: int | None, flash_attn: bool, mem_fraction: float | None
) -> Any:
    from gpusize import engines

    if n_gpu_layers is not None and (n_gpu_layers < 0 or engine != "llamacpp"):
        raise UsageError("--n-gpu-layers takes a count >= 0 and needs --engine llamacpp")
    if mem_fraction is not None and (not 0 < mem_fraction < 1 or engine != "sglang"):
        raise UsageError("--mem-fraction-static takes a value in (0, 1) and needs --engine sglang")
    gguf = origin.gguf
    if gguf is None:
        return engines.EngineOptions(n_gpu_layers, flash_attn, mem_fraction)
    return engines.EngineOptions(
        n_gpu_layers,
        flash_attn,
        mem_fraction,
        gguf.layer_bytes,
        gguf.token_embd_bytes,
        gguf.output_bytes or gguf.token_embd_bytes,
    )


def _targets(gpu: str | None) -> tuple[list[Any], int]:
    """The GPU types to plan over and the most GPUs allowed (a local machine caps the count)."""
    from gpusize import catalog

    if not gpu:
        return list(catalog.load_gpus()), 8
    one, local_count = _find_gpu(gpu)
    return [one], local_count or 8


def _find_gpu(name: str) -> tuple[Any, int | None]:
    """A catalog GPU, or `local`: this machine's GPUs (spec, how many)."""
    from gpusize import catalog

    if name.strip().lower() == "local":
        from gpusize import local_gpu

        return local_gpu.local_spec(local_gpu.detect())
    return catalog.find_gpu(name), None


def _check_count(gpus: int | None) -> None:
    from gpusize import plan

    if gpus is not None and gpus not in plan.TP_SIZES:
        raise UsageError(f"invalid --gpus {gpus}: one server runs 1, 2, 4 or 8 GPUs")


def _prepare(
    model: str,
    ctx: str,
    dtype: str,
    kv_dtype: str,
    engine: str | None,
    utilization: float | None,
    mtp: bool,
    best_effort: bool,
    revision: str | None = None,
) -> tuple[Any, Any, Any, Any]:
    """Shared parsing of fit/serve options: (origin, spec, counts, workload). Warnings -> stderr."""
    from gpusize import plan, report, source
    from gpusize.model import parse_config
    from gpusize.params import count_params
    from gpusize.units import canonical_dtype, parse_tokens

    context = parse_tokens(ctx)
    if utilization is not None and not 0 < utilization <= 1:
        raise UsageError(f"invalid --gpu-memory-utilization {utilization}: must be in (0, 1]")
    chosen_engine = _choice(engine, ENGINES, "engine") if engine else None
    weight_dtype = _choice(dtype, DTYPES, "--dtype")
    weight_dtype = weight_dtype if weight_dtype == "auto" else canonical_dtype(weight_dtype)
    kv = _choice(kv_dtype, KV_DTYPES, "--kv-dtype")
    resolved = source.resolve_model(model, revision)
    chosen_engine = chosen_engine or ("llamacpp" if resolved.source == "gguf" else "vllm")
    spec = parse_config(resolved.config, best_effort=best_effort)
    counts = count_params(spec)
    work = plan.Workload(
        context,
        1,
        weight_dtype,
        kv,
        utilization or plan.DEFAULT_GPU_MEMORY_UTILIZATION,
        mtp,
        resolved.checkpoint_bytes,
        chosen_engine,
    )
    warning = report.checkpoint_warning(spec, counts, work)
    if warning:
        sys.stderr.write(f"gpusize: warning: {warning}\n")
    origin = report.origin_of(resolved)
    return origin, spec, counts, work


@app.command()
def serve(
    model: str = typer.Argument(
        ..., help="Catalog name, Hub id in the catalog, or a local config.json / folder."
    ),
    ctx: str = typer.Option("8k", "--ctx", help="Context length per sequence (prompt + output)."),
    users: int | None = typer.Option(None, "--users", help="Concurrent users (sequences in flight)."),
    rps: float | None = typer.Option(None, "--rps", help="Requests per second (instead of --users)."),
    prompt: str = typer.Option("1k", "--prompt-tokens", help="Prompt length per request (with --rps, TTFT)."),
    output: str = typer.Option("256", "--output-tokens", help="Output tokens per request (with --rps)."),
    gpu: str = typer.Option("H100", "--gpu", help="GPU type of the server."),
    gpus: int = typer.Option(4, "--gpus", help="GPUs in the server (1, 2, 4 or 8)."),
    dtype: str = typer.Option("auto", "--dtype", help=f"Weights: {', '.join(DTYPES)}."),
    kv_dtype: str = typer.Option("auto", "--kv-dtype", help=f"KV cache: {', '.join(KV_DTYPES)}."),
    engine: str | None = typer.Option(None, "--engine", help="vllm (default) or sglang."),
    utilization: float | None = typer.Option(None, "--gpu-memory-utilization", help="vLLM 0.19 default 0.9."),
    revision: str | None = _revision_option(),
    models_file: str | None = _models_file_option(),
    gpus_file: str | None = _gpus_file_option(),
    quiet: bool = _QUIET,
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Compare replicas and tensor parallel on one server: capacity, speed, resilience and cost."""
    from gpusize import serve_report, serving
    from gpusize.units import parse_tokens

    _check_count(gpus)
    _user_catalogs(models_file, gpus_file)
    if (users is None) == (rps is None):
        raise UsageError("give exactly one of --users N or --rps R")
    if (users is not None and users <= 0) or (rps is not None and rps <= 0):
        raise UsageError("--users and --rps must be greater than zero")
    origin, spec, counts, work = _prepare(
        model, ctx, dtype, kv_dtype, engine, utilization, False, False, revision
    )
    if work.engine not in ("vllm", "sglang"):
        raise UsageError(f"serve compares vLLM or SGLang layouts; --engine {work.engine} is sized by 'fit'")
    demand = serving.Demand(
        work.context, users, rps, parse_tokens(prompt, "prompt length"), parse_tokens(output, "output length")
    )
    result = serve_report.build_serve_report(origin, spec, counts, _find_gpu(gpu)[0], gpus, work, demand)
    if quiet:
        pass
    elif as_json:
        typer.echo(json.dumps(result.model_dump(mode="json"), indent=2))
    else:
        from gpusize.render import render_serve

        render_serve(result, _stdout())
    raise typer.Exit(0 if result.fits else 1)


_QUOTE_GPUS = typer.Option(None, "--gpu", help="GPU types to compare (repeat); default a standard set.")


@app.command("quote")
def quote_cmd(
    model: str = typer.Argument(..., help="Catalog name, Hub id, local config.json / folder or .gguf."),
    ctx: str = typer.Option("8k", "--ctx", help="Context length per sequence."),
    users: int | None = typer.Option(None, "--users", help="Concurrent users to serve."),
    gpu: list[str] | None = _QUOTE_GPUS,
    dtype: str = typer.Option("auto", "--dtype", help=f"Weights: {', '.join(DTYPES)}."),
    kv_dtype: str = typer.Option("auto", "--kv-dtype", help=f"KV cache: {', '.join(KV_DTYPES)}."),
    engine: str | None = typer.Option(None, "--engine", help="vllm (default) or sglang."),
    fmt: str = typer.Option("table", "--format", help="table, markdown, csv, json or html."),
    output: str | None = typer.Option(None, "--output", "-o", help="Write to this file instead of stdout."),
    svg: str | None = typer.Option(None, "--svg", help="Also save the terminal rendering as SVG."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Print nothing; the exit code is the answer."),
    models_file: str | None = _models_file_option(),
    gpus_file: str | None = _gpus_file_option(),
) -> None:
    """A ranked side-by-side of the server options for a model: fit, capacity, speed, price, power."""
    from gpusize import quote, quote_report

    _user_catalogs(models_file, gpus_file)
    form = _choice(fmt, ("table", "markdown", "csv", "json", "html"), "--format")
    if users is not None and users <= 0:
        raise UsageError("--users must be greater than zero")
    origin, spec, counts, work = _prepare(model, ctx, dtype, kv_dtype, engine, None, False, False)
    if work.engine not in ("vllm", "sglang"):
        raise UsageError(f"quote compares vLLM or SGLang servers; --engine {work.engine} is sized by 'fit'")
    names = gpu or list(quote.DEFAULT_QUOTE_GPUS)
    gpus = [_find_gpu(name)[0] for name in names]
    result = quote_report.build_quote(origin, spec, counts, gpus, work, users)
    _emit(result, form, output, svg, quiet)
    raise typer.Exit(0 if result.fits else 1)


def _emit(result: Any, form: str, output: str | None, svg: str | None, quiet: bool) -> None:
    from gpusize import export

    if form == "table":
        from gpusize.render import render_quote

        with open(os.devnull, "w") as sink:
            silent = quiet or output is not None
            width = int(os.environ.get("COLUMNS", "0")) or None
            console = Console(record=True, width=width, file=sink if silent else None)
            render_quote(result, console)
            if svg:
                console.save_svg(svg, title="gpusize quote", clear=False)
            if output:
                _write(output, console.export_text())
        return
    text = {"markdown": export.to_markdown, "csv": export.to_csv, "html": export.to_html}.get(
        form, lambda r: json.dumps(r.model_dump(mode="json"), indent=2) + "\n"
    )(result)
    if output:
        _write(output, text)
    elif not quiet:
        sys.stdout.write(text)


def _write(path: str, text: str) -> None:
    from pathlib import Path

    target = Path(path)
    if target.exists() and target.is_dir():
        raise UsageError(f"--output {path}: is a folder")
    target.write_text(text, encoding="utf-8")


@app.command("curve")
def curve_cmd(
    model: str = typer.Argument(..., help="Catalog name, Hub id, local config.json / folder."),
    gpu: str = typer.Option("H100", "--gpu", help="GPU type."),
    gpus: int = typer.Option(1, "--gpus", help="GPUs (tensor parallel size): 1, 2, 4 or 8."),
    dtype: str = typer.Option("auto", "--dtype", help=f"Weights: {', '.join(DTYPES)}."),
    kv_dtype: str = typer.Option("auto", "--kv-dtype", help=f"KV cache: {', '.join(KV_DTYPES)}."),
    svg: str | None = typer.Option(None, "--svg", help="Also save the rendering as SVG."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Maximum concurrent sequences against context length for one plan."""
    from dataclasses import asdict

    from gpusize import quote

    _check_count(gpus)
    origin, spec, counts, work = _prepare(model, "1k", dtype, kv_dtype, None, None, False, False)
    points = quote.concurrency_curve(spec, counts, _find_gpu(gpu)[0], gpus, work, points=12)
    if as_json:
        typer.echo(
            json.dumps(
                {"model": origin.id, "gpu": gpu, "num_gpus": gpus, "points": [asdict(p) for p in points]},
                indent=2,
            )
        )
        raise typer.Exit(0 if any(p.fits for p in points) else 1)
    from gpusize.render import curve_chart

    console = Console(record=bool(svg), width=int(os.environ.get("COLUMNS", "0")) or None)
    console.print(Text(f"{origin.id} on {gpus}x {gpu}: concurrent sequences by context (vLLM 0.19 KV pool)"))
    console.print(curve_chart(points))
    if svg:
        console.save_svg(svg, title="gpusize curve")
    raise typer.Exit(0 if any(p.fits for p in points) else 1)


@app.command("which")
def which_cmd(
    gpu: str = typer.Option(..., "--gpu", help="GPU type, or 'local' for this machine's GPUs."),
    gpus: int = typer.Option(1, "--gpus", help="GPUs in the server (1, 2, 4 or 8)."),
    ctx: str = typer.Option("8k", "--ctx", help="Context length per sequence."),
    dtype: str = typer.Option("auto", "--dtype", help=f"Weights: {', '.join(DTYPES)}."),
    kv_dtype: str = typer.Option("auto", "--kv-dtype", help=f"KV cache: {', '.join(KV_DTYPES)}."),
    show_all: bool = typer.Option(False, "--all", help="Also list the models that do not fit."),
    models_file: str | None = _models_file_option(),
    gpus_file: str | None = _gpus_file_option(),
    quiet: bool = _QUIET,
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Every catalog model that fits this hardware, with headroom and concurrency, fastest first."""
    from gpusize import catalog, plan, reverse
    from gpusize.units import canonical_dtype, parse_tokens

    _check_count(gpus)
    _user_catalogs(models_file, gpus_file)
    weight = _choice(dtype, DTYPES, "--dtype")
    work = plan.Workload(
        parse_tokens(ctx),
        1,
        weight if weight == "auto" else canonical_dtype(weight),
        _choice(kv_dtype, KV_DTYPES, "--kv-dtype"),
    )
    spec, local_count = _find_gpu(gpu)
    count = min(gpus, local_count) if local_count else gpus
    entries = [(e.name, e.hf_id, e.config) for e in catalog.load_models()]
    rows = reverse.models_that_fit(entries, spec, count, work)
    if quiet:
        raise typer.Exit(0 if any(r.fits for r in rows) else 1)
    if as_json:
        from dataclasses import asdict

        typer.echo(
            json.dumps(
                {
                    "gpu": spec.name,
                    "num_gpus": count,
                    "context_tokens": work.context,
                    "models": [asdict(r) for r in rows if r.fits or show_all],
                },
                indent=2,
            )
        )
        raise typer.Exit(0 if any(r.fits for r in rows) else 1)
    from gpusize.render import render_which

    render_which(rows, spec, count, work.context, show_all, _stdout())
    raise typer.Exit(0 if any(r.fits for r in rows) else 1)


def _register_train() -> None:
    from gpusize import cli_train

    app.command("train")(cli_train.train)


_register_train()


@app.command("models")
def models_cmd(
    query: str | None = typer.Argument(None, help="Filter by substring."),
    models_file: str | None = _models_file_option(),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """List the model catalog (bundled + user files)."""
    from gpusize import catalog

    _user_catalogs(models_file, None)

    rows = [
        {
            "name": e.name,
            "hf_id": e.hf_id,
            "model_type": e.config.get("model_type"),
            "params_published": e.params_published,
            "source": e.source,
        }
        for e in catalog.load_models()
        if not query or query.lower() in (e.name + " " + e.hf_id).lower()
    ]
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    from gpusize.render import render_list

    render_list(rows, ["name", "hf_id", "model_type", "params_published"], f"{len(rows)} models", _stdout())


@app.command("gpus")
def gpus_cmd(
    gpus_file: str | None = _gpus_file_option(),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """List the GPU catalog (bundled + user files)."""
    from gpusize import catalog

    _user_catalogs(None, gpus_file)

    rows = [
        {
            "name": g.name,
            "full_name": g.full_name,
            "memory_mib": g.memory_mib,
            "visible_bytes": g.visible_bytes,
            "visible_measured": g.visible_is_measured,
            "bandwidth_gbps": g.bandwidth_gbps,
            "bf16_tflops": g.bf16_tflops,
            "interconnect": g.interconnect,
            "tdp_w": g.tdp_w,
            "price_usd_per_hour": g.price_usd_per_hour,
            "aliases": list(g.aliases),
        }
        for g in catalog.load_gpus()
    ]
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    from gpusize.render import render_list

    render_list(
        rows,
        [
            "name",
            "full_name",
            "memory_mib",
            "bandwidth_gbps",
            "bf16_tflops",
            "interconnect",
            "tdp_w",
            "price_usd_per_hour",
        ],
        f"{len(rows)} GPUs (prices indicative, USD per GPU-hour, 2026-04-10)",
        _stdout(),
    )


def main() -> None:
    """Entry point: translate errors once, here; never let an exception read as 'does not fit'."""
    try:
        code = app(standalone_mode=False)
    except GpusizeError as exc:
        _fail(str(exc), exc.hint)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        sys.exit(2)
    except Exception as exc:  # noqa: BLE001 - the CLI boundary
        if isinstance(exc, _click_usage_errors()):
            _fail(exc.format_message(), None)  # type: ignore[attr-defined]
        if os.environ.get("GPUSIZE_DEBUG") == "1":
            raise
        _fail(
            f"internal error: {type(exc).__name__}: {exc} (set GPUSIZE_DEBUG=1 for a "
            f"traceback; please report it)",
            None,
            code=3,
        )
    sys.exit(code if isinstance(code, int) else 0)


def _click_usage_errors() -> tuple[type[BaseException], ...]:
    """Click's usage errors, from typer's vendored copy (typer >= 0.2x) and/or click itself."""
    found: list[type[BaseException]] = []
    for module in ("typer._click.exceptions", "click.exceptions"):
        try:
            found.append(__import__(module, fromlist=["ClickException"]).ClickException)
        except (ImportError, AttributeError):
            continue
    return tuple(found)


def _fail(message: str, hint: str | None, code: int = 2) -> None:
    if os.environ.get("GPUSIZE_DEBUG") == "1" and code == 3:
        raise
    tail = f" ({hint})" if hint else ""
    sys.stderr.write(f"gpusize: error: {message}{tail}\n")
    sys.exit(code)
