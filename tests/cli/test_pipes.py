"""A closed pipe never changes the verdict: `gpusize fit ... | head -1` exits as the answer does, with
nothing on stderr. Real pipes: each command's stdout is a pipe whose reader goes away, either after one
line (`head -1`) or before anything is written (EPIPE on the first write, every time)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile

import pytest

ENV = {**os.environ, "NO_COLOR": "1", "HF_HUB_OFFLINE": "1", "HF_HOME": tempfile.mkdtemp()}
ENV.pop("COLUMNS", None)

#: (arguments, the verdict the command answers with).
COMMANDS: list[tuple[list[str], int]] = [
    (["fit", "Qwen3-32B", "--ctx", "32k"], 0),
    (["fit", "Qwen3-32B", "--ctx", "32k", "--json"], 0),
    (["fit", "Llama-3.3-70B", "--gpu", "RTX3090", "--gpus", "2", "--ctx", "8k"], 1),
    (["quote", "Qwen3-32B", "--ctx", "16k", "--users", "20"], 0),
    (["quote", "Qwen3-32B", "--ctx", "16k", "--format", "csv"], 0),
    (["serve", "Qwen3-8B", "--gpu", "H100", "--gpus", "2", "--users", "8"], 0),
    (["which", "--gpu", "RTX4090", "--gpus", "2", "--ctx", "32k"], 0),
    (["curve", "Qwen3-8B", "--gpu", "H100"], 0),
    (["train", "Qwen3-8B", "--method", "lora", "--gpu", "H100"], 0),
    (["models"], 0),
    (["gpus"], 0),
    (["gpus", "--json"], 0),
    (["--help"], 0),
    (["fit", "--help"], 0),
    (["--version"], 0),
]


def _start(args: list[str]) -> tuple[subprocess.Popen[bytes], int]:
    read, write = os.pipe()
    proc = subprocess.Popen(
        [sys.executable, "-m", "gpusize", *args], stdout=write, stderr=subprocess.PIPE, env=ENV
    )
    os.close(write)
    return proc, read


def _finish(proc: subprocess.Popen[bytes]) -> tuple[int, bytes]:
    _, err = proc.communicate(timeout=120)
    return proc.returncode, err


@pytest.mark.parametrize("mode", ["closed before the answer", "head -1"])
def test_a_closed_pipe_keeps_the_verdict(mode: str) -> None:
    started = []
    for args, verdict in COMMANDS:  # all at once: each waits on its own pipe
        proc, read = _start(args)
        if mode == "closed before the answer":
            os.close(read)
        started.append((args, verdict, proc, read))
    got, wanted = [], []
    for args, verdict, proc, read in started:
        line = b"-"
        if mode == "head -1":
            with os.fdopen(read, "rb") as reader:
                line = reader.readline()
        code, err = _finish(proc)
        got.append((args, code, err, bool(line)))
        wanted.append((args, verdict, b"", True))
    assert got == wanted
