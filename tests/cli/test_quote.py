"""Quotes: ranked options, consistent numbers across fit / serve / quote, exports, headless render.
The commands run in this process (tests.helpers.run_in_process)."""

from __future__ import annotations

import csv
import io
import json
import re
import shutil
from pathlib import Path

import pytest

from tests.conftest import REFERENCE
from tests.helpers import CliResult, run_in_process, screenshot


def run(*args: str) -> CliResult:
    return run_in_process(*args, env={"NO_COLOR": "1", "COLUMNS": "160"})


@pytest.fixture(scope="module")
def quote() -> dict:  # type: ignore[type-arg]
    r = run("quote", "Llama-3.3-70B", "--ctx", "32k", "--format", "json")
    assert r.code == 0, r.stderr
    data: dict = json.loads(r.stdout)  # type: ignore[type-arg]
    return data


def test_quote_lists_the_standard_gpus(quote: dict) -> None:  # type: ignore[type-arg]
    gpus = {o["gpu"] for o in quote["options"]}
    assert {"H200-SXM", "H100-SXM", "B200", "A100-80GB", "L40S", "RTX4090"} <= gpus
    assert quote["recommendation"]["fits"] and quote["topology_mermaid"].startswith("flowchart")


def test_same_plan_same_numbers_in_fit_serve_and_quote(quote: dict) -> None:  # type: ignore[type-arg]
    option = next(o for o in quote["options"] if o["gpu"] == "B200")
    fit = json.loads(
        run(
            "fit",
            "Llama-3.3-70B",
            "--ctx",
            "32k",
            "--gpu",
            "B200",
            "--gpus",
            str(option["tensor_parallel"]),
            "--json",
        ).stdout
    )
    assert fit["plan"]["kv_cache_capacity_tokens"] == option["kv_cache_capacity_tokens"]
    assert fit["plan"]["per_gpu"]["weights_bytes"] == option["weights_bytes"]
    serve = json.loads(
        run(
            "serve",
            "Llama-3.3-70B",
            "--ctx",
            "32k",
            "--users",
            "1",
            "--gpu",
            "B200",
            "--gpus",
            str(option["num_gpus"]),
            "--json",
        ).stdout
    )
    layout = next(x for x in serve["layouts"] if x["tensor_parallel"] == option["tensor_parallel"])
    assert layout["kv_cache_capacity_tokens"] == option["kv_cache_capacity_tokens"]
    assert layout["usd_per_hour"] == option["usd_per_hour"]


def test_markdown_and_csv_parse() -> None:
    md = run(
        "quote", "Qwen3-8B", "--ctx", "8k", "--gpu", "L4", "--gpu", "H100", "--format", "markdown"
    ).stdout
    table = [line for line in md.splitlines() if line.startswith("|")]
    assert len({line.count("|") for line in table}) == 1 and len(table) == 4  # header, rule, 2 rows
    rows = list(
        csv.DictReader(
            io.StringIO(run("quote", "Qwen3-8B", "--gpu", "L4", "--gpu", "H100", "--format", "csv").stdout)
        )
    )
    assert sorted((r["GPUs per server"], r["GPU"]) for r in rows) == [("1", "H100-SXM"), ("1", "L4")]
    assert [r["fits"] for r in rows] == ["yes", "yes"]  # the cell text, not a truthy string


def test_html_is_self_contained(tmp_path: Path) -> None:
    out = tmp_path / "quote.html"
    r = run("quote", "Llama-3.3-70B", "--ctx", "32k", "--users", "8", "--format", "html", "-o", str(out))
    assert r.code == 0 and r.stdout == ""
    page = out.read_text()
    assert page.startswith("<!doctype html>") and "<svg" in page
    assert not re.search(r"(src|href)=['\"]?https?:", page)  # no network needed to open it


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium not installed (.ci/run installs it)")
def test_html_renders_in_headless_chromium(tmp_path: Path) -> None:
    from PIL import Image

    page, shot = tmp_path / "quote.html", tmp_path / "shot.png"
    assert run("quote", "Llama-3.3-70B", "--ctx", "32k", "--format", "html", "-o", str(page)).code == 0
    assert CHROMIUM is not None
    screenshot(CHROMIUM, page, shot, "1200,900")
    image = Image.open(shot).convert("L")
    low, high = image.getextrema()
    assert high - low > 100  # text and bars on a white page, not a blank screenshot
    histogram = image.resize((120, 90)).histogram()
    assert sum(1 for count in histogram if count) > 20


def test_svg_export_and_quiet(tmp_path: Path) -> None:
    svg = tmp_path / "quote.svg"
    r = run("quote", "Qwen3-8B", "--gpu", "L4", "--svg", str(svg), "--quiet")
    assert r.code == 0 and r.stdout == "" and svg.read_text().lstrip().startswith("<svg")


def test_curve_command() -> None:
    data = json.loads(run("curve", "Qwen3-32B", "--gpu", "H100", "--gpus", "2", "--json").stdout)
    points = data["points"]
    assert points[0]["context_tokens"] == 1024
    concurrency = [p["max_concurrency"] for p in points]
    assert concurrency == sorted(concurrency, reverse=True)


def _fp8_checkpoint_under_bf16_config(folder: Path) -> Path:
    """Qwen3-32B's config (torch_dtype bfloat16) beside a safetensors header storing every weight as
    FP8: what an FP8 re-upload with an unchanged config looks like. The data part is a sparse file."""
    config = json.loads((REFERENCE / "configs" / "Qwen__Qwen3-32B.json").read_text())["config"]
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(config))
    elements = 32_762_123_264
    header = {"w": {"dtype": "F8_E4M3", "shape": [elements], "data_offsets": [0, elements]}}
    raw = json.dumps(header).encode()
    raw += b" " * (-len(raw) % 8)
    path = folder / "model.safetensors"
    with path.open("wb") as handle:
        handle.write(len(raw).to_bytes(8, "little") + raw)
        handle.truncate(8 + len(raw) + elements)
    return folder


def test_curve_keeps_the_checkpoint_stored_bytes(tmp_path: Path) -> None:
    """The quote's option row and its own curve are one plan: the curve once rebuilt the workload field
    by field and dropped the stored FP8 bytes (19.12 sequences in the row, 3.87 at 8k in the curve)."""
    model = str(_fp8_checkpoint_under_bf16_config(tmp_path / "qwen3-32b-fp8"))
    data = json.loads(run("quote", model, "--gpu", "H100", "--ctx", "8k", "--format", "json").stdout)
    option = data["options"][0]
    at_8k = next(p for p in data["curve"] if p["context_tokens"] == 8192)
    assert option["num_gpus"] == 1 and option["tensor_parallel"] == 1
    assert at_8k["max_concurrency"] == option["max_concurrency"] > 15
    curve = json.loads(run("curve", model, "--gpu", "H100", "--gpus", "1", "--json").stdout)
    assert (
        next(p for p in curve["points"] if p["context_tokens"] == 8192)["max_concurrency"]
        == at_8k["max_concurrency"]
    )
