"""Failing surroundings: a full disk, a read-only or missing folder, a closed pipe, a closed stdout or
stderr, a machine whose nvidia-smi lies. The exit code is still the verdict (0 fits, 1 does not fit),
or 2 with one line naming the path, never 1 or 3 by accident. Cases about the process's own file
descriptors (standard output on a full disk, closed, a pipe closed early, its encoding) run a real
process; output files and nvidia-smi run in this process (tests.helpers.run_in_process).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from gpusize.sources.catalog import find_model
from tests.conftest import ROOT
from tests.helpers import CLI_ENV, CliResult, run_in_process

ENV = {
    **os.environ,
    "NO_COLOR": "1",
    "COLUMNS": "120",
    "HF_HUB_OFFLINE": "1",
    "HF_HOME": tempfile.mkdtemp(),
}
FITS = ["fit", "Qwen3-8B", "--gpu", "H100"]
DOES_NOT_FIT = ["fit", "DeepSeek-V3", "--gpu", "L4"]


def gpusize(
    *args: str, shell_tail: str = "", env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`python -m gpusize ARGS` run by sh, so that redirections such as `>&-` are real."""
    words = " ".join(_quote(a) for a in [sys.executable, "-m", "gpusize", *args])
    return subprocess.run(
        ["sh", "-c", f"{words} {shell_tail}"],
        capture_output=True,
        text=True,
        env=env or ENV,
        cwd=ROOT,
        timeout=60,
    )


def in_process(*args: str, env: dict[str, str] | None = None) -> CliResult:
    """The command in this process, under ENV's NO_COLOR and COLUMNS (plus `env`)."""
    return run_in_process(*args, env={**CLI_ENV, **(env or {})}, cwd=ROOT)


def _quote(word: str) -> str:
    return "'" + word.replace("'", "'\\''") + "'"


def assert_one_line(r: subprocess.CompletedProcess[str] | CliResult, *fragments: str) -> None:
    code = r.code if isinstance(r, CliResult) else r.returncode
    assert code == 2, (code, r.stderr)
    assert r.stderr.startswith("gpusize: error: ") and r.stderr.count("\n") == 1, r.stderr
    assert "Traceback" not in r.stderr
    for fragment in fragments:
        assert fragment in r.stderr, r.stderr


# --------------------------------------------------------------------------- output files


@pytest.mark.parametrize(
    "args",
    [
        ["quote", "Qwen3-8B", "--format", "csv", "-o", "{target}"],
        ["quote", "Qwen3-8B", "--svg", "{target}"],
        ["curve", "Qwen3-8B", "--svg", "{target}"],
    ],
)
@pytest.mark.parametrize(
    "target, fragment",
    [
        ("{tmp}/full", "No space left"),
        ("/proc/gpusize-read-only/out.csv", "does not exist"),
        ("/proc/out.csv", "/proc/out.csv"),
        ("{tmp}", "is a folder"),
        ("{tmp}/missing/out.csv", "does not exist"),
    ],
)
def test_unwritable_outputs_exit_2_naming_the_path(
    tmp_path: Path, args: list[str], target: str, fragment: str
) -> None:
    # /dev/full through a link: an old gpusize renamed its temp file over the target, which would
    # have replaced the device itself; through a link only the link could be lost.
    (tmp_path / "full").symlink_to("/dev/full")
    where = target.replace("{tmp}", str(tmp_path))
    r = in_process(*[a.replace("{target}", where) for a in args])
    assert_one_line(r, fragment.replace("{tmp}", str(tmp_path)))
    assert [p.name for p in tmp_path.iterdir()] == ["full"]  # no half-written file, no temp file
    assert (tmp_path / "full").is_symlink() and Path("/dev/full").is_char_device()


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_read_only_folder_exits_2(tmp_path: Path) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        assert_one_line(in_process("quote", "Qwen3-8B", "-o", str(folder / "q.md")), "cannot write")
    finally:
        folder.chmod(0o755)


def test_output_file_is_replaced_atomically(tmp_path: Path) -> None:
    out = tmp_path / "quote.csv"
    out.write_text("old")
    r = in_process("quote", "Qwen3-8B", "--format", "csv", "-o", str(out))
    assert r.code == 0 and out.read_text().startswith("model,")
    assert [p.name for p in tmp_path.iterdir()] == ["quote.csv"]


@pytest.mark.parametrize(
    "output, svg",
    [("F", "F"), ("link", "F"), ("F", "sub/../F"), ("new", "new")],
)
def test_two_outputs_naming_one_file_exit_2(tmp_path: Path, output: str, svg: str) -> None:
    """-o and --svg on one file: the second write replaced the first answer, exit 0 (issue 18)."""
    (tmp_path / "F").write_text("old")
    (tmp_path / "link").symlink_to(tmp_path / "F")
    (tmp_path / "sub").mkdir()
    r = in_process("quote", "Qwen3-8B", "-o", str(tmp_path / output), "--svg", str(tmp_path / svg))
    assert_one_line(r, str(tmp_path / output), "-o and --svg")
    assert r.stdout == ""
    assert (tmp_path / "F").read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["F", "link", "sub"]


def test_two_outputs_may_share_a_character_device() -> None:
    r = in_process("quote", "Qwen3-8B", "-o", "/dev/null", "--svg", "/dev/null")
    assert r.code == 0, r.stderr


@pytest.mark.parametrize("option", ["-o", "--svg"])
@pytest.mark.parametrize("via_link", [False, True])
def test_read_only_output_file_is_not_replaced(tmp_path: Path, option: str, via_link: bool) -> None:
    """A 0444 file in a writable folder: the rename replaced it, even though the user (root too, as
    these tests run) made it read-only (issue 18)."""
    out = tmp_path / "quote.csv"
    out.write_text("old")
    out.chmod(0o444)
    named = out
    if via_link:
        named = tmp_path / "link"
        named.symlink_to(out)
    r = in_process("quote", "Qwen3-8B", "--format", "csv", option, str(named))
    assert_one_line(r, str(named), "read-only")
    assert out.read_text() == "old" and (out.stat().st_mode & 0o777) == 0o444
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted({"quote.csv", named.name})


# --------------------------------------------------------------------------- strings UTF-8 cannot hold


def _surrogate_config(tmp_path: Path) -> Path:
    """A config.json whose architectures and model_type hold a lone surrogate, written as the JSON
    escape that json.loads accepts."""
    config = dict(find_model("Qwen3-8B").config)
    text = json.dumps(config | {"architectures": ["Evil\ud800ForCausalLM"], "model_type": "mystery\udfff"})
    (tmp_path / "config.json").write_text(text)
    assert "\\ud800" in text
    return tmp_path


def _strings(data: object) -> list[str]:
    if isinstance(data, dict):
        return [*data, *(s for v in data.values() for s in _strings(v))]
    if isinstance(data, list):
        return [s for v in data for s in _strings(v)]
    return [data] if isinstance(data, str) else []


def test_lone_surrogate_never_reaches_the_json(tmp_path: Path) -> None:
    """json.dumps wrote "\\ud800", which strict parsers reject: every string must encode as UTF-8."""
    r = in_process("fit", str(_surrogate_config(tmp_path)), "--best-effort", "--json")
    assert r.code in (0, 1), r.stderr
    strings = _strings(json.loads(r.stdout))
    for text in strings:
        text.encode("utf-8")  # raises on a lone surrogate
    assert "Evil\ufffdForCausalLM" in strings


def test_lone_surrogate_is_shown_escaped_in_text(tmp_path: Path) -> None:
    """The text answer failed to encode ('cannot write to standard output', exit 2): a real process,
    whose standard output encodes as UTF-8."""
    r = gpusize("fit", str(_surrogate_config(tmp_path)), "--best-effort")
    assert r.returncode in (0, 1), r.stderr
    assert "mystery\\udfff" in r.stdout
    r = gpusize("fit", str(tmp_path))
    assert_one_line(r, "mystery\\udfff")


@pytest.mark.parametrize("args", [FITS, ["quote", "Qwen3-8B", "--format", "csv"], ["gpus"]])
def test_stdout_on_a_full_disk_exits_2(args: list[str]) -> None:
    assert_one_line(gpusize(*args, shell_tail="> /dev/full"), "standard output")


def test_closed_stdout_exits_2() -> None:
    assert_one_line(gpusize("quote", "Qwen3-8B", "--format", "csv", shell_tail=">&-"), "standard output")


def test_closed_stderr_keeps_exit_2() -> None:
    r = gpusize("fit", "nope-model", shell_tail="2>&-")
    assert r.returncode == 2 and r.stdout == ""


def test_closed_stderr_keeps_the_verdict() -> None:
    assert gpusize(*FITS, "--json", shell_tail="2>&-").returncode == 0
    assert gpusize(*DOES_NOT_FIT, "--json", shell_tail="2>&-").returncode == 1


# --------------------------------------------------------------------------- closed pipes


@pytest.mark.parametrize(
    "args, code",
    [
        (FITS, 0),
        (DOES_NOT_FIT, 1),
        (["train", "Qwen3-8B", "--method", "lora", "--gpu", "H100"], 0),
        (["train", "DeepSeek-V3", "--method", "full", "--gpu", "L4"], 1),
        (["serve", "Qwen3-8B", "--users", "8", "--gpu", "H100"], 0),
        (["curve", "Qwen3-8B", "--gpu", "H100"], 0),
        (["quote", "Qwen3-8B"], 0),
        (["quote", "Qwen3-8B", "--format", "csv"], 0),
        (["which", "--gpu", "H100"], 0),
    ],
)
@pytest.mark.parametrize("json_flag", [[], ["--json"]])
def test_closed_pipe_never_changes_the_verdict(args: list[str], code: int, json_flag: list[str]) -> None:
    """`gpusize fit ... | head -c1`: the reader goes away; the exit code is still the answer."""
    if json_flag and "--format" in args:
        pytest.skip("--json is --format json: one format per run")
    r = gpusize(*args, *json_flag, shell_tail="| head -c1 >/dev/null; exit ${PIPESTATUS:-0}")
    assert in_process(*args, *json_flag, "-q").code == code  # the answer, read where no pipe closes
    read, write = os.pipe()
    os.close(read)  # the reader has gone before the first byte: every write gets EPIPE
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "gpusize", *args, *json_flag],
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            env=ENV,
            cwd=ROOT,
            timeout=60,
        )
    finally:
        os.close(write)
    assert proc.returncode == code, proc.stderr
    assert "Traceback" not in proc.stderr and "error" not in proc.stderr
    assert r.returncode in (0, code)  # sh has no PIPESTATUS: head's status; the real check is above


# --------------------------------------------------------------------------- exit codes


def test_internal_error_with_debug_exits_3_with_a_traceback() -> None:
    code = (
        "import sys, gpusize.reports.fit as f\n"
        "def boom(*a, **k): raise RuntimeError('boom')\n"
        "f.build_fit_report = boom\n"
        "import gpusize.cli.fit as c; c.build_fit_report = boom\n"
        "from gpusize.cli import main\n"
        "main(['fit', 'Qwen3-8B', '--gpu', 'H100'])\n"
    )
    for debug, traceback in (("1", True), ("", False)):
        env = {**ENV, "GPUSIZE_DEBUG": debug}
        r = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT, timeout=60
        )
        assert r.returncode == 3, r.stderr
        assert ("Traceback" in r.stderr) is traceback
        assert r.stderr.strip().splitlines()[-1].startswith("gpusize: error: internal error: RuntimeError")
        closed = subprocess.run(
            [sys.executable, "-c", code],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            timeout=60,
        )
        assert closed.returncode == 3


def test_no_arguments_prints_help_and_exits_0() -> None:
    r = gpusize()
    assert r.returncode == 0 and "Usage" in r.stdout and r.stderr == ""


# --------------------------------------------------------------------------- --gpu local


def _fake_smi(folder: Path, lines: str) -> dict[str, str]:
    script = folder / "nvidia-smi"
    script.write_text("#!/bin/sh\ncat <<'EOF'\n" + lines + "EOF\n")
    script.chmod(0o755)
    return {"PATH": f"{folder}{os.pathsep}{ENV['PATH']}"}


def test_local_gpu_count_bounds_every_command(tmp_path: Path) -> None:
    env = _fake_smi(tmp_path, "NVIDIA GeForce RTX 4090, 24564, 23810\n")
    r = in_process("fit", "Qwen3-32B", "--gpu", "local", "--gpus", "8", env=env)
    assert_one_line(r, "this machine has 1")
    r = in_process("serve", "Qwen3-8B", "--gpu", "local", "--gpus", "8", "--users", "4", env=env)
    assert_one_line(r, "this machine has 1")
    served = in_process("serve", "Qwen3-8B", "--gpu", "local", "--users", "4", "--json", env=env)
    assert served.code in (0, 1), served.stderr
    data = json.loads(served.stdout)
    assert "tensor-parallel-size 8" not in served.stdout and "--tp 8" not in served.stdout
    assert all(o["num_gpus"] <= 1 for o in data.get("options", [])) if "options" in data else True
    for users in ([], ["--users", "64"]):
        quote = in_process("quote", "Qwen3-8B", "--gpu", "local", *users, "--json", env=env)
        assert quote.code in (0, 1), quote.stderr
        options = json.loads(quote.stdout)["options"]
        assert options and all(o["num_gpus"] <= 1 for o in options)
    fit = in_process("fit", "Qwen3-32B", "--gpu", "local", "--json", env=env)
    assert fit.code == 1 and json.loads(fit.stdout)["fits"] is False


@pytest.mark.parametrize(
    "line",
    [
        "NVIDIA H100, 0, 0",
        "NVIDIA H100, 81559, -5",
        "NVIDIA H100, inf, 80000",
        "NVIDIA H100, 81559, nan",
        "NVIDIA H100, 81559, 90000",
        "NVIDIA H100, 1e300, 1",
    ],
)
def test_impossible_nvidia_smi_figures_exit_2(tmp_path: Path, line: str) -> None:
    r = in_process("fit", "Qwen3-8B", "--gpu", "local", env=_fake_smi(tmp_path, line + "\n"))
    assert_one_line(r, "nvidia-smi")


def test_nvidia_smi_gpu_name_with_escapes_is_shown_safely(tmp_path: Path) -> None:
    env = _fake_smi(tmp_path, "NVIDIA \x1b]0;pwned\x07\x1b[2JGPU, 81559, 80000\n")
    r = in_process("fit", "Qwen3-8B", "--gpu", "local", env=env)
    assert r.code == 0, r.stderr
    assert "\x1b" not in r.stdout + r.stderr and "\x07" not in r.stdout + r.stderr


def test_output_to_a_device_is_written_in_place() -> None:
    """-o /dev/stdout is a device: written through, never replaced by a rename."""
    r = gpusize("quote", "Qwen3-8B", "--format", "csv", "-o", "/dev/stdout")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("model,") and Path("/dev/stdout").exists()
