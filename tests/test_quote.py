"""Quotes: ranked options, consistent numbers across fit / serve / quote, exports, headless render."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ENV = {**os.environ, "NO_COLOR": "1", "COLUMNS": "160"}


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gpusize", *args], capture_output=True, text=True, env=ENV, timeout=120
    )


@pytest.fixture(scope="module")
def quote() -> dict:  # type: ignore[type-arg]
    r = run("quote", "Llama-3.3-70B", "--ctx", "32k", "--format", "json")
    assert r.returncode == 0, r.stderr
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
    assert layout["cost_per_hour"] == option["price_per_hour"]


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
    assert [r["GPU"] for r in rows] and all(r["fits"] for r in rows)


def test_html_is_self_contained(tmp_path: Path) -> None:
    out = tmp_path / "quote.html"
    r = run("quote", "Llama-3.3-70B", "--ctx", "32k", "--users", "8", "--format", "html", "-o", str(out))
    assert r.returncode == 0 and r.stdout == ""
    page = out.read_text()
    assert page.startswith("<!doctype html>") and "<svg" in page
    assert not re.search(r"(src|href)=['\"]?https?:", page)  # no network needed to open it


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium not installed (.ci/run installs it)")
def test_html_renders_in_headless_chromium(tmp_path: Path) -> None:
    from PIL import Image

    page, shot = tmp_path / "quote.html", tmp_path / "shot.png"
    assert run("quote", "Llama-3.3-70B", "--ctx", "32k", "--format", "html", "-o", str(page)).returncode == 0
    assert CHROMIUM is not None
    subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            f"--user-data-dir={tmp_path / 'profile'}",
            f"--screenshot={shot}",
            "--window-size=1200,900",
            page.as_uri(),
        ],
        capture_output=True,
        timeout=120,
        check=False,
    )
    image = Image.open(shot).convert("L")
    low, high = image.getextrema()
    assert high - low > 100  # text and bars on a white page, not a blank screenshot
    histogram = image.resize((120, 90)).histogram()
    assert sum(1 for count in histogram if count) > 20


def test_svg_export_and_quiet(tmp_path: Path) -> None:
    svg = tmp_path / "quote.svg"
    r = run("quote", "Qwen3-8B", "--gpu", "L4", "--svg", str(svg), "--quiet")
    assert r.returncode == 0 and r.stdout == "" and svg.read_text().lstrip().startswith("<svg")


def test_curve_command() -> None:
    data = json.loads(run("curve", "Qwen3-32B", "--gpu", "H100", "--gpus", "2", "--json").stdout)
    points = data["points"]
    assert points[0]["context_tokens"] == 1024
    concurrency = [p["max_concurrency"] for p in points]
    assert concurrency == sorted(concurrency, reverse=True)
