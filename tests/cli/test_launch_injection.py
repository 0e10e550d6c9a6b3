"""Printed launch commands are inert: pasted into bash they run the engine and nothing else.

Each hostile model path is a real folder holding a config.json; `serve` prints its launch commands;
every command is run by bash with `vllm`, `python` and `llama-server` stubbed by scripts that record
their argv. The test proves that no other command ran (no PWNED file) and that the engine received
the path as one argument, unchanged. `serve` runs in this process (tests.helpers.run_in_process);
bash runs the printed commands.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REFERENCE
from tests.helpers import run_in_process

HOSTILE = [
    "m;touch PWNED;#",
    "$(touch PWNED)",
    "`touch PWNED`",
    "with space",
    "quote'single",
    'quote"double',
    "new\nline;touch PWNED",
    "-dash & touch PWNED",
    "glob*?[x]",
]

STUB = """#!/bin/sh
for a in "$@"; do printf '%s\\0' "$a"; done >> "$ARGV_LOG"
printf '\\001' >> "$ARGV_LOG"
"""


def _serve_json(model: str, engine: str, env: dict[str, str]) -> dict[str, object]:
    args = ["serve", model, "--users", "4", "--gpu", "H100", "--gpus", "2", "--engine", engine, "--json"]
    out = run_in_process(*args, env=env)
    assert out.code == 0, out.stderr
    data: dict[str, object] = json.loads(out.stdout)
    return data


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
@pytest.mark.parametrize("name", HOSTILE)
def test_printed_commands_run_only_the_engine(tmp_path: Path, name: str, engine: str) -> None:
    config = json.loads((REFERENCE / "configs" / "Qwen__Qwen3-8B.json").read_text())["config"]
    folder = tmp_path / "models" / name
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps(config))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for exe in ("vllm", "python", "llama-server"):
        stub = bin_dir / exe
        stub.write_text(STUB)
        stub.chmod(0o755)
    work = tmp_path / "cwd"
    work.mkdir()
    log = tmp_path / "argv.log"
    env = {"NO_COLOR": "1", "COLUMNS": "200"}
    data = _serve_json(str(folder), engine, env)
    launch = data["launch"]
    assert isinstance(launch, dict) and engine in launch
    bash = shutil.which("bash")
    assert bash is not None
    for name_, entry in launch.items():
        command = entry["command"]
        if command is None:
            continue
        log.unlink(missing_ok=True)
        run_env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "ARGV_LOG": str(log), "HOME": str(tmp_path)}
        done = subprocess.run([bash, "-c", command], cwd=work, env=run_env, capture_output=True, timeout=30)
        assert done.returncode == 0, (command, done.stderr)
        assert not (work / "PWNED").exists(), f"{name_} command ran injected code: {command!r}"
        assert list(work.iterdir()) == [], f"{name_} command created files: {command!r}"
        calls = [call for call in log.read_bytes().split(b"\x01") if call]
        assert len(calls) == 1, f"{name_} command ran {len(calls)} engine processes"
        assert str(folder).encode() in calls[0].split(b"\0"), "the model path did not arrive as one argument"


@pytest.mark.parametrize("hf_id", ["acme/m;touch PWNED;#", "acme/$(touch PWNED)", "acme/`touch PWNED`"])
def test_hub_id_from_a_user_models_file_is_inert(tmp_path: Path, hf_id: str) -> None:
    """A user models file's `hf_id` goes into the printed command the same way a folder name does."""
    config = json.loads((REFERENCE / "configs" / "Qwen__Qwen3-8B.json").read_text())["config"]
    models = tmp_path / "models.yaml"
    models.write_text(json.dumps([{"name": "Evil-8B", "hf_id": hf_id, "source": "test", "config": config}]))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    stub = bin_dir / "vllm"
    stub.write_text(STUB)
    stub.chmod(0o755)
    work, log = tmp_path / "cwd", tmp_path / "argv.log"
    work.mkdir()
    env = {"NO_COLOR": "1", "GPUSIZE_MODELS": str(models)}
    command = _serve_json("Evil-8B", "vllm", env)["launch"]["vllm"]["command"]  # type: ignore[index]
    bash = shutil.which("bash")
    assert bash is not None and isinstance(command, str)
    run_env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "ARGV_LOG": str(log), "HOME": str(tmp_path)}
    done = subprocess.run([bash, "-c", command], cwd=work, env=run_env, capture_output=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert list(work.iterdir()) == [], f"the command ran injected code: {command!r}"
    assert hf_id.encode() in log.read_bytes().split(b"\0")
