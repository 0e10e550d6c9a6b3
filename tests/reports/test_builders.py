"""The report builders called with core values (a catalog spec, a prepared workload, catalog GPUs),
without the command line: each gives the figures the CLI's --json gives for the same inputs, and
serializes to exactly that document (the CLI adds only the parsing of its options)."""

from __future__ import annotations

import json
from typing import Any

from gpusize.core.engines import prepare
from gpusize.core.model import ResolvedModel
from gpusize.core.workload import EngineSettings, Request, Workload
from gpusize.reports.curve import build_curve
from gpusize.reports.fit import build_fit_report
from gpusize.reports.quote import build_quote
from gpusize.reports.serialize import to_data
from gpusize.reports.serve import build_serve_report
from gpusize.reports.which import build_which
from gpusize.serving.layouts import Demand
from gpusize.sources.catalog import find_gpu, find_model, load_gpus, load_models
from tests.helpers import catalog_spec, cli

GIB = 1 << 30


def resolved(name: str) -> ResolvedModel:
    """A catalog model as the CLI resolves it (sources.resolve: the Hub id, the catalog's config)."""
    entry = find_model(name)
    return ResolvedModel(entry.hf_id, "catalog", entry.config, catalog_name=entry.name)


def request(ctx: int, engine: str = "vllm", **settings: object) -> Request:
    return Request(context_tokens=ctx, engine=EngineSettings(name=engine, **settings))  # type: ignore[arg-type]


def work_for(name: str, ctx: int, engine: str = "vllm", **settings: object) -> Workload:
    return prepare(catalog_spec(name), request(ctx, engine, **settings))


def cli_json(*args: str) -> dict[str, Any]:
    r = cli(*args, "--json")
    assert r.code in (0, 1), r.stderr
    data: dict[str, Any] = json.loads(r.stdout)
    return data


def as_json(report: object) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(json.dumps(to_data(report)))
    return data


# --------------------------------------------------------------------------- fit


def test_fit_report_on_one_gpu_type_is_the_cli_answer() -> None:
    spec = catalog_spec("Qwen3-32B")
    report = build_fit_report(
        resolved("Qwen3-32B"), spec, work_for("Qwen3-32B", 32 * 1024), [find_gpu("H100")], others=load_gpus()
    )
    data = cli_json("fit", "Qwen3-32B", "--ctx", "32k", "--gpu", "H100")
    assert report.fits is data["fits"] is True
    assert report.plan is not None
    assert report.plan.num_gpus == data["plan"]["num_gpus"] == 1
    assert report.memory.total_bytes == data["memory"]["total_bytes"]
    assert report.plan.kv_cache_capacity_tokens == data["plan"]["kv_cache_capacity_tokens"]
    assert as_json(report) == data


def test_fit_report_that_does_not_fit_carries_the_cli_suggestions() -> None:
    name = "Llama-3.3-70B"
    report = build_fit_report(
        resolved(name), catalog_spec(name), work_for(name, 8192), [find_gpu("RTX3090")], 2, others=load_gpus()
    )
    data = cli_json("fit", name, "--gpu", "RTX3090", "--gpus", "2", "--ctx", "8k")
    assert report.fits is data["fits"] is False
    assert [s.summary for s in report.suggestions] == [s["summary"] for s in data["suggestions"]]
    assert as_json(report) == data


# --------------------------------------------------------------------------- serve


def test_serve_report_is_the_cli_answer() -> None:
    name, gpu = "Qwen3-8B", find_gpu("H100")
    report = build_serve_report(
        resolved(name), catalog_spec(name), gpu, 2, work_for(name, 4096), Demand(users=8)
    )
    data = cli_json("serve", name, "--gpu", "H100", "--gpus", "2", "--users", "8", "--ctx", "4k")
    assert [(x.replicas, x.tensor_parallel, x.max_concurrency) for x in report.layouts] == [
        (x["replicas"], x["tensor_parallel"], x["max_concurrency"]) for x in data["layouts"]
    ]
    assert as_json(report) == data


# --------------------------------------------------------------------------- quote


def test_quote_report_is_the_cli_answer() -> None:
    name = "Qwen3-8B"
    gpus = [find_gpu("L4"), find_gpu("H100")]
    report = build_quote(resolved(name), catalog_spec(name), gpus, work_for(name, 8192), None)
    data = cli_json("quote", name, "--gpu", "L4", "--gpu", "H100", "--ctx", "8k")
    assert report.fits is data["fits"]
    assert [(o.gpu, o.num_gpus) for o in report.options] == [
        (o["gpu"], o["num_gpus"]) for o in data["options"]
    ]
    assert as_json(report) == data


def test_quote_for_a_load_is_the_cli_answer() -> None:
    name = "Qwen3-8B"
    report = build_quote(resolved(name), catalog_spec(name), [find_gpu("H100")], work_for(name, 8192), 200)
    data = cli_json("quote", name, "--gpu", "H100", "--ctx", "8k", "--users", "200")
    assert as_json(report)["options"] == data["options"]
    assert as_json(report) == data


# --------------------------------------------------------------------------- curve


def test_curve_report_is_the_cli_answer() -> None:
    name = "Qwen3-8B"
    report = build_curve(resolved(name), catalog_spec(name), find_gpu("H100"), 1, work_for(name, 1024))
    data = cli_json("curve", name, "--gpu", "H100")
    assert [(p.context_tokens, p.max_concurrency) for p in report.points] == [
        (p["context_tokens"], p["max_concurrency"]) for p in data["points"]
    ]
    assert as_json(report) == data


# --------------------------------------------------------------------------- which


def test_which_report_is_the_cli_answer() -> None:
    report = build_which(load_models(), find_gpu("RTX4090"), 2, request(32 * 1024))
    data = cli_json("which", "--gpu", "RTX4090", "--gpus", "2", "--ctx", "32k")
    fitting = [m.name for m in report.models if m.fits]
    assert fitting == [m["name"] for m in data["models"] if m["fits"]] and "Qwen3-8B" in fitting
    assert as_json(report) == data
