"""CLI: exit codes first, then JSON, then the human text (fixed width, NO_COLOR). In this process
(tests.helpers.cli); the first test runs the real `python -m gpusize` for its exit code."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.conftest import REFERENCE
from tests.helpers import cli as run
from tests.helpers import offline_hub

#: No test touches the internet: the Hub is offline and its cache is empty for these tests.
ENV = {**os.environ, "NO_COLOR": "1", "COLUMNS": "120", "HF_HUB_OFFLINE": "1", "HF_HOME": tempfile.mkdtemp()}


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    offline_hub(monkeypatch, tmp_path / "hf")


def test_does_not_fit_exits_1_and_still_reports() -> None:
    r = subprocess.run(
        [sys.executable, "-m", "gpusize", "fit", "DeepSeek-V3", "--gpu", "H100", "--gpus", "8", "--json"],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=60,
    )
    assert r.returncode == 1
    d = json.loads(r.stdout)
    assert d["fits"] is False and d["candidates"][0]["reason"]


def test_human_output_headline_and_footer() -> None:
    r = run("fit", "Qwen3-32B", "--ctx", "32k", "--gpu", "H100", "--engine-version", "0.19.0")
    assert r.code == 0
    assert "Qwen3-32B at 32k context needs 2x NVIDIA H100 SXM5 80GB (TP=2)" in r.stdout
    assert "GiB" in r.stdout and "Assumptions: vLLM 0.19.0" in r.stdout
    assert "largest context that fits is" in r.stdout  # the 1-GPU miss says how far it got
    assert "\x1b[" not in r.stdout


def test_the_release_changes_the_answer_and_is_named() -> None:
    # 0.20 raised the default utilization to 0.92 (with CUDA graphs counted inside it): one H100
    # now holds Qwen3-32B at 32k; the assumptions name the release the answer is for.
    r = run("fit", "Qwen3-32B", "--ctx", "32k", "--gpu", "H100")
    assert r.code == 0
    assert "needs 1x NVIDIA H100 SXM5 80GB (TP=1)" in r.stdout
    assert "Assumptions: vLLM 0.33.0, gpu_memory_utilization 0.92" in r.stdout
    assert "CUDA graphs inside the budget" in r.stdout


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["fit", "Qwen3-33B"], "unknown model 'Qwen3-33B'; did you mean"),
        (["fit", "Qwen3-32B", "--gpu", "H10"], "unknown GPU 'H10'"),
        (["fit", "Qwen3-32B", "--ctx", "32q"], "invalid context '32q'"),
        (["fit", "Qwen3-32B", "--ctx", "0"], "must be greater than zero"),
        (["fit", "Qwen3-32B", "--ctx", "-5"], "invalid context"),
        (["fit", "Qwen3-32B", "--batch", "0"], "invalid --batch"),
        (["fit", "Qwen3-32B", "--gpus", "3"], "1, 2, 4 or 8"),
        (["fit", "Qwen3-32B", "--gpu-memory-utilization", "1.5"], "(0, 1]"),
        (["fit", "Qwen3-32B", "--gpu-memory-utilization", "0"], "(0, 1]"),
        (["fit", "Qwen3-32B", "--dtype", "int3"], "unknown --dtype"),
        (["fit", "Qwen3-32B", "--engine", "tgi"], "unknown --engine"),
        (["fit", "some-org/not-a-model"], "not in the local Hub cache"),
        (["fit", "not-a-model-name"], "unknown model"),
        (["fit", "./missing/config.json"], "no such file"),
        # an engine refuses a setting it does not read instead of echoing it as if used
        (
            ["fit", "Qwen3-8B", "--engine", "sglang", "--gpu-memory-utilization", "0.5"],
            "does not apply to --engine sglang",
        ),
        (
            ["fit", "Qwen3-8B", "--engine", "transformers", "--gpu-memory-utilization", "0.5"],
            "does not apply",
        ),
        (
            ["fit", "Qwen3-8B", "--engine", "llamacpp", "--max-num-seqs", "8"],
            "does not apply to --engine llamacpp",
        ),
        (["fit", "Qwen3-8B", "--mem-fraction-static", "0.8"], "--engine sglang"),
    ],
)
def test_bad_input_exits_2_with_one_line(args: list[str], fragment: str) -> None:
    r = run(*args)
    assert r.code == 2, (r.stdout, r.stderr)
    assert r.stdout == ""
    assert fragment in r.stderr and r.stderr.count("\n") == 1
    assert "Traceback" not in r.stderr


@pytest.mark.parametrize(
    "content, fragment",
    [
        ("{not json", "not valid JSON"),
        ("", "not valid JSON"),
        ("{}", "non-empty JSON object"),
        ('{"model_type": "llama", "hidden_size": 4096}', "missing 'num_hidden_layers'"),
    ],
)
def test_bad_local_configs_exit_2(tmp_path: Path, content: str, fragment: str) -> None:
    path = tmp_path / "config.json"
    path.write_text(content)
    before = path.read_bytes()
    r = run("fit", str(path))
    assert r.code == 2 and fragment in r.stderr and r.stdout == ""
    assert path.read_bytes() == before  # never modified


def test_folder_without_config_exits_2(tmp_path: Path) -> None:
    r = run("fit", str(tmp_path))
    assert r.code == 2 and "no config.json" in r.stderr


def test_local_folder_sized_like_catalog(tmp_path: Path) -> None:
    src = REFERENCE / "configs" / "Qwen__Qwen3-8B.json"
    (tmp_path / "config.json").write_text(json.dumps(json.loads(src.read_text())["config"]))
    local = json.loads(run("fit", str(tmp_path), "--gpu", "L4", "--json").stdout)
    catalog = json.loads(run("fit", "Qwen3-8B", "--gpu", "L4", "--json").stdout)
    assert local["memory"] == catalog["memory"] and local["model"]["source"] == "local"


def test_models_and_gpus_lists() -> None:
    models = json.loads(run("models", "--json").stdout)["models"]
    gpus = json.loads(run("gpus", "--json").stdout)["gpus"]
    assert len(models) >= 40 and len(gpus) >= 30
    assert run("--version").stdout.startswith("gpusize ")


def test_missing_argument_is_a_usage_error() -> None:
    r = run("fit")
    assert r.code == 2 and "Missing argument" in r.stderr and "internal error" not in r.stderr


def test_unknown_architecture_error_and_best_effort(tmp_path: Path) -> None:
    config = {
        "model_type": "mystery",
        "architectures": ["MysteryForCausalLM"],
        "hidden_size": 2048,
        "num_hidden_layers": 16,
        "num_attention_heads": 16,
        "vocab_size": 32000,
        "intermediate_size": 5632,
    }
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    refused = run("fit", str(path), "--gpu", "L4")
    assert refused.code == 2 and "'mystery'" in refused.stderr and "--best-effort" in refused.stderr
    r = run("fit", str(path), "--gpu", "L4", "--best-effort", "--json")
    data = json.loads(r.stdout)
    assert r.code == 0 and data["assumptions"]["best_effort"] is True
    assert "weights_bytes" in data["assumptions"]["estimates"]
    assert any("BEST-EFFORT" in note for note in data["assumptions"]["notes"])
    incomplete = {"model_type": "mystery", "hidden_size": 2048}
    path.write_text(json.dumps(incomplete))
    r = run("fit", str(path))
    assert r.code == 2 and "missing standard fields: num_hidden_layers" in r.stderr
