"""Small helpers shared by the test modules."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from gpusize.cli import register
from gpusize.cli.app import run_command
from gpusize.core.engines import engine, prepare
from gpusize.core.parse import parse_config
from gpusize.core.plan import Candidate, smallest_fit
from gpusize.core.spec import ModelSpec, ParamCounts
from gpusize.core.workload import EngineSettings, Request, Workload
from gpusize.sources.catalog import find_gpu, find_model


def catalog_spec(name: str) -> ModelSpec:
    return parse_config(find_model(name).config)


def workload(
    spec: ModelSpec,
    ctx: int,
    batch: int = 1,
    dtype: str = "auto",
    kv_dtype: str = "auto",
    engine_name: str = "vllm",
    **settings: object,
) -> Workload:
    request = Request(
        context_tokens=ctx,
        batch=batch,
        dtype=dtype,
        kv_dtype=kv_dtype,
        engine=EngineSettings(name=engine_name, **settings),  # type: ignore[arg-type]
    )
    return prepare(spec, request)


def evaluate(name: str, gpu: str, tp: int, ctx: int, batch: int = 1, dtype: str = "auto") -> Candidate:
    spec = catalog_spec(name)
    return engine("vllm").evaluate(spec, find_gpu(gpu), tp, workload(spec, ctx, batch, dtype))


def smallest(name: str, gpu: str, ctx: int, dtype: str = "auto", engine_name: str = "vllm") -> Candidate:
    spec = catalog_spec(name)
    work = workload(spec, ctx, 1, dtype, engine_name=engine_name)
    return smallest_fit(spec, find_gpu(gpu), work, engine(engine_name).evaluate)[-1]


def catalog_counts(name: str) -> tuple[ModelSpec, ParamCounts]:
    spec = catalog_spec(name)
    return spec, spec.params


@dataclass(frozen=True)
class CliResult:
    code: int
    stdout: str
    stderr: str


def run_in_process(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> CliResult:
    """The CLI called in this process (register + run_command), stdout and stderr captured: what
    `gpusize ARGS` does, a hundred times faster than a subprocess. `env` entries are set for the call
    (an empty string removes a variable); `cwd` is the working folder for the call."""
    argv = list(args)
    saved = {key: os.environ.get(key) for key in (env or {})}
    out, err = io.StringIO(), io.StringIO()
    here = os.getcwd()
    try:
        if cwd is not None:
            os.chdir(cwd)
        for key, value in (env or {}).items():
            if value:
                os.environ[key] = value
            else:
                os.environ.pop(key, None)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            register(argv)
            code = run_command(argv)
    finally:
        os.chdir(here)
        for key, old in saved.items():
            if old is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = old
    return CliResult(code, out.getvalue(), err.getvalue())


#: What the CLI tests read the output under: no colour and 120 columns (COLUMNS wins over a terminal).
CLI_ENV = {"NO_COLOR": "1", "COLUMNS": "120"}


def cli(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> CliResult:
    """`gpusize ARGS` in this process under CLI_ENV (plus `env`): what a subprocess test ran with
    NO_COLOR=1 COLUMNS=120."""
    return run_in_process(*args, env={**CLI_ENV, **(env or {})}, cwd=cwd)


def offline_hub(monkeypatch: pytest.MonkeyPatch, folder: Path) -> None:
    """The Hub offline with an empty cache in `folder`, for this test: what HF_HUB_OFFLINE=1 and
    HF_HOME=folder do to a new process. huggingface_hub reads those variables once, at import, so an
    in-process test sets its constants instead."""
    from huggingface_hub import constants

    hub_cache = folder / "hub"
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(constants, "HF_HOME", str(folder))
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(hub_cache))
    monkeypatch.setattr(constants, "HUGGINGFACE_HUB_CACHE", str(hub_cache))
    monkeypatch.setattr(constants, "HF_TOKEN_PATH", str(folder / "token"))


#: JSON keys whose value may be negative: the memory left over (below zero when a plan does not fit).
SIGNED_KEYS = ("headroom_bytes",)


def negative_numbers(data: Any, path: str = "") -> list[str]:
    """Paths of every negative number in a JSON document: no byte count, price or rate is negative
    (only a headroom, which is negative for a plan that does not fit)."""
    if isinstance(data, dict):
        return [
            p
            for key, value in data.items()
            if key not in SIGNED_KEYS
            for p in negative_numbers(value, f"{path}.{key}")
        ]
    if isinstance(data, list):
        return [p for i, value in enumerate(data) for p in negative_numbers(value, f"{path}[{i}]")]
    if isinstance(data, (int, float)) and not isinstance(data, bool) and data < 0:
        return [f"{path}={data}"]
    return []


def screenshot(chromium: str, page: Path, shot: Path, size: str) -> None:
    """A headless Chromium screenshot of `page` (a file) into `shot`, in a throwaway profile."""
    subprocess.run(
        [
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            f"--user-data-dir={shot.parent / 'profile'}",
            f"--screenshot={shot}",
            f"--window-size={size}",
            page.as_uri(),
        ],
        capture_output=True,
        timeout=120,
        check=False,
    )


def qwen3_next_step_gains(
    monkeypatch: pytest.MonkeyPatch, **changes: float
) -> dict[int, tuple[float, float]]:
    """What a tried speed constant adds to a decode step of Qwen3-Next-80B-A3B on H200 under SGLang
    (8 sequences, 3,000 tokens of context) at TP=2 and TP=8: (step, fixed part of the step), seconds,
    with `changes` set on the engine's constants for the second evaluation only."""
    from dataclasses import replace

    from gpusize.serving import calibrated, throughput

    spec = catalog_spec("Qwen3-Next-80B-A3B-Instruct")
    work = workload(spec, 4096, engine_name="sglang")
    h200 = find_gpu("H200-SXM")
    before = {tp: throughput.decode_step(spec, work, h200, tp, 8, 3000) for tp in (2, 8)}
    changed = replace(calibrated.engine_speed("sglang"), **changes)
    monkeypatch.setitem(calibrated.ENGINE_SPEED, "sglang", changed)
    after = {tp: throughput.decode_step(spec, work, h200, tp, 8, 3000) for tp in (2, 8)}
    gains = {}
    for tp in (2, 8):
        b, a = before[tp], after[tp]
        assert b is not None and a is not None
        gains[tp] = (a.step_s - b.step_s, a.fixed_s - b.fixed_s)
    return gains
