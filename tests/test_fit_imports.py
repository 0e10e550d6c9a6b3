"""What a plain run imports, measured in a fresh process as a user's run is (bench/RESULTS.md:
start-up). A module kept off a command's path is a start-up figure: typer and click (the line is
bound by `cli.bind`, ~80M of fit's ~520M instructions with them), the speed model on `fit` (which
prints no speed: ~5% of its instructions), the manifest modules and yaml on `serve` and `quote`
(only `--format k8s|compose` writes manifests), and the standard library's archive, temporary-file
and traceback modules (only a written file or an internal error needs them)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SPEED = ("gpusize.serving.load", "gpusize.serving.throughput", "gpusize.serving.speed_ranges")
EVERY_RUN = ("typer", "click", "yaml", "pydantic", "rich", "shutil", "tempfile", "traceback", "difflib")
MANIFESTS = ("gpusize.render.deploy", "gpusize.serving.deploy", "gpusize.serving.dynamo")


def _imported(argv: list[str], modules: tuple[str, ...]) -> list[str]:
    code = (
        "import contextlib, io, sys\n"
        "from gpusize.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try:\n"
        f"        main({argv!r})\n"
        "    except SystemExit as exc:\n"
        "        assert exc.code in (0, 1), exc.code\n"
        f"print(sorted(m for m in {modules!r} if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return eval(out.stdout.strip().splitlines()[-1])  # noqa: S307 - our own printed list


def test_a_fit_run_does_not_import_the_speed_model() -> None:
    assert _imported(["fit", "Qwen3-8B", "--gpu", "H100", "-q"], SPEED) == []


@pytest.mark.parametrize(
    "argv",
    [
        ["fit", "Qwen3-32B", "--ctx", "32k"],
        ["fit", "Qwen3-32B", "--ctx", "32k", "--json"],
        ["serve", "Qwen3-8B", "--users", "64", "--gpu", "L40S", "--gpus", "4"],
        ["quote", "Llama-3.3-70B", "--ctx", "32k"],
        ["which", "--gpu", "RTX4090", "--gpus", "2", "--ctx", "32k"],
        ["train", "Qwen3-8B", "--method", "lora", "--gpu", "H100"],
        ["models", "qwen3"],  # the counts from the specs stored with the catalog
    ],
    ids=lambda a: " ".join(a[:2]),
)
def test_a_plain_run_imports_no_parser_no_yaml_and_no_manifests(argv: list[str]) -> None:
    assert _imported(argv, EVERY_RUN + MANIFESTS) == []


#: What only an export or a plan across servers needs: the HTML escapes (html.entities is a large
#: table), the CSV writer, the exports and charts, and the multi-server layouts.
EXPORTS = ("html", "csv", "gpusize.render.export", "gpusize.render.chart", "gpusize.serving.nodes")


@pytest.mark.parametrize(
    "argv",
    [
        ["quote", "Llama-3.3-70B", "--ctx", "32k"],
        ["serve", "Qwen3-8B", "--users", "64", "--gpu", "L40S", "--gpus", "4"],
        ["curve", "Qwen3-8B", "--gpu", "H100"],
        ["which", "--gpu", "RTX4090", "--gpus", "2", "--ctx", "32k"],
    ],
    ids=lambda a: " ".join(a[:2]),
)
def test_a_table_run_imports_no_export_and_no_multinode_plan(argv: list[str]) -> None:
    assert _imported(argv, EXPORTS) == []


def test_an_export_imports_what_it_writes() -> None:
    argv = ["quote", "Llama-3.3-70B", "--ctx", "32k", "--format", "csv"]
    assert _imported(argv, EXPORTS) == ["csv", "gpusize.render.chart", "gpusize.render.export", "html"]


def test_the_check_sees_an_import() -> None:
    """The same check on a run that does write manifests: yaml is there (so [] above means absent)."""
    argv = ["serve", "Qwen3-8B", "--users", "64", "--gpu", "L40S", "--format", "k8s"]
    assert _imported(argv, ("yaml", "gpusize.render.deploy")) == ["gpusize.render.deploy", "yaml"]


#: What a `train` that fits does not need: the fixes (a job that fits nowhere), the plan over
#: servers (--nodes) and the fit command's report and rendering (train's table borrows only their
#: verdict styles, in render.table).
TRAIN_ONLY_WHEN_ASKED = (
    "gpusize.training.suggest",
    "gpusize.training.nodes",
    "gpusize.core.search",
    "gpusize.core.suggest",
    "gpusize.render.fit",
    "gpusize.reports.fit",
)


@pytest.mark.parametrize(
    "argv",
    [
        ["train", "Qwen3-8B", "--method", "lora", "--gpu", "H100"],
        ["train", "Qwen3-8B", "--method", "lora", "--gpu", "H100", "-q"],
        ["train", "Qwen3-8B", "--method", "qlora", "--gpu", "RTX4090", "--json"],
    ],
    ids=lambda a: " ".join(a[3:]),
)
def test_a_train_that_fits_imports_no_fixes_and_no_multinode_plan(argv: list[str]) -> None:
    assert _imported(argv, TRAIN_ONLY_WHEN_ASKED) == []


def test_a_train_imports_the_fixes_and_the_server_plan_when_it_needs_them() -> None:
    nowhere = ["train", "Llama-3.3-70B", "--method", "full", "--gpu", "RTX4090", "--gpus", "1"]
    assert "gpusize.training.suggest" in _imported(nowhere, TRAIN_ONLY_WHEN_ASKED)
    servers = ["train", "Qwen3-8B", "--method", "full", "--gpu", "H100", "--nodes", "2"]
    assert "gpusize.training.nodes" in _imported(servers, TRAIN_ONLY_WHEN_ASKED)


#: What `curve` does not need: the quote's layouts, speeds and prices (the curve has its own module,
#: serving.curve, and its bars are drawn by render.curve).
QUOTE_STACK = (
    "gpusize.serving.quote",
    "gpusize.serving.layouts",
    "gpusize.serving.economics",
    "gpusize.reports.quote",
    "gpusize.render.quote",
) + SPEED


@pytest.mark.parametrize(
    "argv",
    [
        ["curve", "Qwen3-8B", "--gpu", "H100"],
        ["curve", "Qwen3-8B", "--gpu", "H100", "--json"],
        ["curve", "Qwen3-32B", "--gpu", "L40S", "--gpus", "2", "-q"],
    ],
    ids=lambda a: " ".join(a[3:]),
)
def test_a_curve_imports_no_quote_and_no_speed_model(argv: list[str]) -> None:
    assert _imported(argv, QUOTE_STACK + EVERY_RUN + MANIFESTS) == []


def test_a_quote_imports_the_curve_it_draws() -> None:
    argv = ["quote", "Llama-3.3-70B", "--ctx", "32k"]
    assert _imported(argv, ("gpusize.serving.curve", "gpusize.render.curve")) == [
        "gpusize.render.curve",
        "gpusize.serving.curve",
    ]
