"""Exports that stand alone (issue 23): a CSV of plain numbers with the question on every row,
Markdown without HTML entities, an SVG chart of the options, an HTML page whose curve marks the
quoted context and users and whose assumptions are plain words. The commands run in this process."""

from __future__ import annotations

import csv
import io
import json
import re
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from gpusize.sources.catalog import find_model
from tests.helpers import CliResult, run_in_process, screenshot

LOAD = (
    "Llama-3.3-70B",
    "--users",
    "200",
    "--ctx",
    "8k",
    "--gpu",
    "H100",
    "--gpu",
    "B200",
    "--gpu",
    "RTX4090",
)
SVG = "{http://www.w3.org/2000/svg}"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
#: The text columns of the quote CSV; every other column holds numbers (or is empty: unknown).
TEXT_COLUMNS = {
    "model",
    "engine",
    "weights dtype",
    "KV cache dtype",
    "GPU",
    "GPU name",
    "fits",
    "holds every user at once",
    "buy price dated",
    "PSU",
    "interconnect",
    "caveats",
}


def run(*args: str) -> CliResult:
    r = run_in_process(*args, env={"NO_COLOR": "1", "COLUMNS": "160"})
    assert r.code in (0, 1), r.stderr
    return r


@pytest.fixture(scope="module")
def rows() -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(run("quote", *LOAD, "--format", "csv").stdout)))


def test_quote_csv_cells_are_plain_numbers(rows: list[dict[str, str]]) -> None:
    """Numbers were quoted text with thousands separators ("1,643,232"), ranges in one cell and
    suffixes; every numeric cell now reads with float(), and numeric headers name their unit."""
    assert len(rows) == 3
    numeric = [h for h in rows[0] if h not in TEXT_COLUMNS]
    assert len(numeric) > 25
    for row in rows:
        for header in numeric:
            if row[header]:
                float(row[header])  # raises on "1,643,232", "25 (20-31)", "56.3B", "26.9x"
    units = ("(", "tok/s", "GPUs", "replicas", "tensor parallel", "servers", "users")
    assert all(any(u in h for u in units) for h in numeric), numeric


def test_quote_csv_says_what_it_quotes(rows: list[dict[str, str]]) -> None:
    """The quote CSV had no model, context, users, servers, fleet $/h, $/user-hour, $/1M tokens, buy
    price or break-even columns."""
    for row in rows:
        assert row["model"] == "meta-llama/Llama-3.3-70B-Instruct"
        assert row["context (tokens)"] == "8192" and row["users at once"] == "200"
        assert row["engine"].startswith("vLLM ")
    fitting = [r for r in rows if r["fits"] == "yes"]
    assert fitting
    for row in fitting:
        for header in (
            "servers for the users",
            "fleet price ($/h)",
            "price ($/user-hour)",
            "price best ($/1M tokens)",
        ):
            assert float(row[header]) > 0, header
        low, best, high = (float(row[f"tok/s per request {x}"]) for x in ("low", "best", "high"))
        assert low <= best <= high
    bought = [r for r in fitting if r["buy price of the GPUs ($ per server)"]]
    assert bought and all(float(r["break-even (months)"]) > 0 for r in bought)


#: (command, the text columns of its CSV, a column that holds the question's context).
SHEETS = [
    (
        ["serve", "Llama-3.3-70B", "--users", "64", "--gpu", "H100", "--gpus", "4"],
        {"model", "engine", "GPU", "layout", "fits", "holds every user at once", "if one GPU fails"},
    ),
    (
        ["which", "--gpu", "RTX4090", "--gpus", "2", "--ctx", "32k", "--all"],
        {"GPU", "model", "Hub id", "released (YYYY-MM)", "weights dtype", "fits", "thin margin", "why not"},
    ),
]


@pytest.mark.parametrize("args, text", SHEETS, ids=["serve", "which"])
def test_serve_and_which_csv_cells_are_plain_numbers(args: list[str], text: set[str]) -> None:
    """`serve` put ranges in one cell ("25 (20-31)") and `which` suffixes ("56.3B", "26.9x") and
    thousands separators; every numeric cell now reads with float()."""
    rows = list(csv.DictReader(io.StringIO(run(*args, "--format", "csv").stdout)))
    assert rows and all(row["context (tokens)"] == rows[0]["context (tokens)"] != "" for row in rows)
    numeric = [h for h in rows[0] if h not in text]
    assert set(text) <= set(rows[0]) and len(numeric) >= 8
    filled = 0
    for row in rows:
        for header in numeric:
            if row[header]:
                float(row[header])
                filled += 1
    assert filled > len(rows) * 4


def test_markdown_has_no_html_entities_and_no_empty_bullet() -> None:
    """`&#96;serve&#96;` and `GPUs&#x27;` leaked into the Markdown, and `- notes:` was an empty
    bullet."""
    text = run("quote", "Qwen3-8B", "--ctx", "8k", "--gpu", "L4", "--format", "markdown").stdout
    assert not re.search(r"&(#\d+|#x[0-9a-f]+|[a-z]+);", text), text
    assert not re.search(r"^- [^:]*:\s*$", text, re.M), text
    assert "\\`serve\\`" in text and "GPUs' purchase price" in text


def test_md_backslash_escapes_markdown() -> None:
    from gpusize.render.sheet import md

    assert md("a|b *c* _d_ `e` [f](g) <img src=x> & ~h~ $1") == (
        "a\\|b \\*c\\* \\_d\\_ \\`e\\` \\[f\\](g) \\<img src=x\\> \\& \\~h\\~ \\$1"
    )
    assert md("it's 1\nline \\ two") == "it's 1 line \\\\ two"


def _svg(tmp_path: Path, *args: str) -> tuple[Path, ET.Element]:
    path = tmp_path / "quote.svg"
    assert run("quote", *args, "--svg", str(path), "--quiet").stdout == ""
    return path, ET.fromstring(path.read_text())


def test_svg_is_a_labelled_chart_of_the_options(tmp_path: Path) -> None:
    """`--svg` was a monospace dump of the terminal text: now bars of memory per GPU, $/1M tokens and
    tok/s per user for each option, the question in its title."""
    _, root = _svg(tmp_path, *LOAD)
    title = root.findtext(f"{SVG}title") or ""
    assert "Llama-3.3-70B" in title and "8k context" in title and "200 users" in title and "vLLM" in title
    rects = root.iter(f"{SVG}rect")
    kinds = [r.get("class") for r in rects]
    fitting = 3
    assert kinds.count("memory") == 5 * fitting
    assert kinds.count("price") == fitting and kinds.count("speed") == fitting
    texts = " ".join(t.text or "" for t in root.iter(f"{SVG}text"))
    for label in (
        "Memory per GPU",
        "Price per million tokens",
        "tokens/s per user",
        "4x B200",
        "GiB per GPU",
    ):
        assert label in texts, label
    assert "\u2502" not in texts and "Options, best first" not in texts  # not the terminal table


def test_svg_escapes_the_model_id(tmp_path: Path) -> None:
    model = tmp_path / "<img src=x onerror=alert(1)>&"
    model.mkdir()
    (model / "config.json").write_text(json.dumps(find_model("Qwen3-8B").config))
    path, root = _svg(tmp_path, str(model), "--gpu", "H100")
    assert "<img" not in path.read_text()
    assert "<img src=x onerror=alert(1)>&" in (root.findtext(f"{SVG}title") or "")


def test_curve_svg_is_a_chart(tmp_path: Path) -> None:
    """`curve --svg` was the terminal text as monospace lines: now a line chart with round y ticks."""
    path = tmp_path / "curve.svg"
    r = run("curve", "Qwen3-32B", "--gpu", "H100", "--gpus", "2", "--svg", str(path), "--quiet")
    assert r.code == 0 and r.stdout == ""
    root = ET.fromstring(path.read_text())
    assert "Qwen3-32B on 2x" in (root.findtext(f"{SVG}title") or "")
    assert len(list(root.iter(f"{SVG}path"))) == 1 and len(list(root.iter(f"{SVG}circle"))) >= 5
    assert len([e for e in root.iter(f"{SVG}line") if e.get("class") == "ytick"]) > 2


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium not installed (.ci/run installs it)")
def test_svg_renders_in_headless_chromium(tmp_path: Path) -> None:
    """The chart's bars are drawn: each panel's colour is on the screenshot."""
    from PIL import Image

    path, _ = _svg(tmp_path, *LOAD)
    shot = tmp_path / "shot.png"
    assert CHROMIUM is not None
    screenshot(CHROMIUM, path, shot, "900,900")
    image = Image.open(shot).convert("RGB")
    colours = {colour for _, colour in image.getcolors(maxcolors=1 << 20) or []}
    for hex_colour in ("#3b6ea5", "#2e8b57", "#c0504d"):  # weights, $/1M tokens, tok/s per user
        assert tuple(int(hex_colour[i : i + 2], 16) for i in (1, 3, 5)) in colours, hex_colour


def _curve(page: str) -> ET.Element:
    match = re.search(r"<svg[^>]*aria-label=\"Concurrency against context\".*?</svg>", page, re.S)
    assert match, "no concurrency chart"
    return ET.fromstring(match.group(0))


def test_html_curve_marks_the_quoted_context_and_users() -> None:
    """The concurrency chart marked neither the quoted context nor the users, and its y axis had two
    ticks (0 and the top)."""
    page = run("quote", *LOAD, "--format", "html").stdout
    lines = {line.get("class") for line in _curve(page).iter(f"{SVG}line")}
    assert {"quoted-context", "quoted-users"} <= lines
    ticks = [line for line in _curve(page).iter(f"{SVG}line") if line.get("class") == "ytick"]
    assert len(ticks) > 2
    texts = " ".join(t.text or "" for t in _curve(page).iter(f"{SVG}text"))
    assert "quoted context 8k" in texts and "200 users" in texts


def test_html_assumptions_are_plain_words() -> None:
    """The assumptions carried "leave-one-out calibration residuals" and source nicknames."""
    page = run("quote", *LOAD, "--format", "html").stdout
    for jargon in ("leave-one-out", "residual", "gpustack", "dennislee22", "llm-perf-bench", "hbm3"):
        assert jargon not in page, jargon
    assert "published benchmark results" in page


def test_nice_ticks() -> None:
    from gpusize.render.chart import nice_ticks

    assert nice_ticks(1604.4) == [0, 500, 1000, 1500, 2000]
    assert nice_ticks(8.04) == [0, 2.5, 5, 7.5, 10]
    assert len(nice_ticks(0.3)) > 2 and len(nice_ticks(0)) > 2
