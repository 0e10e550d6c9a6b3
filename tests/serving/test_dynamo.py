"""serving/dynamo.py: a pool's own launch command as a Dynamo worker (pure)."""

from __future__ import annotations

import shlex

from gpusize.serving.dynamo import NIXL_KV_CONFIG, dynamo_launch
from gpusize.serving.launch import LaunchCommand


def test_only_the_leading_assignments_are_the_environment() -> None:
    # a later NAME=VALUE word is a flag's value (here a revision), kept in place after its flag
    own = LaunchCommand("A=1 vllm serve org/m --revision B=2 --tensor-parallel-size 2", None, "0.31.0")
    got = dynamo_launch("vllm", "0.31.0", own, own)
    words = shlex.split(got["prefill"].command or "")
    assert words[:6] == ["A=1", "python3", "-m", "dynamo.vllm", "--model", "org/m"]
    assert words[6:10] == ["--revision", "B=2", "--tensor-parallel-size", "2"]
    assert words[10:] == ["--disaggregation-mode", "prefill", "--kv-transfer-config", NIXL_KV_CONFIG]


def test_no_command_stays_its_note_and_an_unknown_release_is_one_note() -> None:
    none = LaunchCommand(None, "int4 from a 16-bit checkpoint cannot be expressed")
    got = dynamo_launch("vllm", "0.31.0", none, none)
    assert got["prefill"] == none and got["decode"] == none and got["frontend"].command is not None
    only = dynamo_launch("vllm", "0.30.0", none, none)
    assert list(only) == ["frontend"] and only["frontend"].command is None
    (no_worker,) = dynamo_launch("sglang", "0.5.21", none, none).values()  # a note that it is not written
    assert no_worker.command is None and no_worker.note and "not for SGLang" in no_worker.note
