"""`gpusize batch` and the library API: one configuration a row, answered exactly as the single
command answers it; errors are data and the batch goes on; the exit status is the worst row's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import gpusize
from gpusize.cli.invoke import argv_for
from gpusize.errors import InputError, UnknownNameError, UsageError
from gpusize.reports.batch import batch_exit_code
from gpusize.sources.batch_file import read_batch
from tests.helpers import cli

#: A sample of single-command configurations a batch row must answer identically.
SAMPLE = [
    ("fit", "Qwen3-32B", {"ctx": "32k", "gpu": "H100"}),
    ("fit", "Llama-3.3-70B", {"ctx": "8k", "gpu": "RTX4090", "gpus": "2"}),
    ("fit", "Qwen3-8B", {"engine": "sglang", "gpu": "L40S"}),
    ("serve", "Qwen3-8B", {"users": "64", "gpu": "L40S", "gpus": "4"}),
    ("quote", "Qwen3-8B", {"gpu": "L4"}),
    ("train", "Llama-3.1-8B", {"method": "lora", "gpu": "H100", "tokens": "1B"}),
    ("curve", "Qwen3-8B", {"gpu": "H100"}),
]


def _csv(tmp_path: Path, text: str, name: str = "rows.csv") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_each_row_answers_as_its_single_command(tmp_path: Path) -> None:
    lines = ["command,model,ctx,gpu,gpus,engine,users,method,tokens"]
    keys = ["ctx", "gpu", "gpus", "engine", "users", "method", "tokens"]
    lines += [",".join([c, m, *(o.get(k, "") for k in keys)]) for c, m, o in SAMPLE]
    out = cli("batch", _csv(tmp_path, "\n".join(lines) + "\n"), "--format", "jsonl")
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    assert len(rows) == len(SAMPLE)
    for row, (command, model, options) in zip(rows, SAMPLE, strict=True):
        alone = cli(*argv_for(command, model, options), "--json")
        assert row["exit_code"] == alone.code
        assert row["result"] == json.loads(alone.stdout), (command, model)
        assert sorted(row["argv"]) == sorted(argv_for(command, model, options))


#: All-distinct fit rows as bench/bench_batch.py draws them (issue 22): one GPU enough, several (with
#: the one-card and fewer-GPU suggestions), none (with the other GPU types), and other engines.
DISTINCT = [
    ("Qwen3-32B", "L40S", "1088", "vllm"),
    ("Qwen3-32B", "RTX4090", "9216", "vllm"),
    ("Llama-3.3-70B", "H100", "5120", "vllm"),
    ("Llama-3.3-70B", "A100-80GB", "16960", "vllm"),
    ("Llama-3.3-70B", "RTX4090", "3136", "vllm"),
    ("Qwen3-30B-A3B", "RTX4090", "12288", "vllm"),
    ("DeepSeek-V3", "H100", "1024", "vllm"),
    ("DeepSeek-V3", "L40S", "7232", "vllm"),
    ("DeepSeek-V3", "H200", "2112", "vllm"),
    ("gpt-oss-20b", "RTX4090", "15040", "vllm"),
    ("Mistral-7B-v0.1", "H100", "4160", "vllm"),
    ("Qwen3-32B", "L4", "6208", "sglang"),
    ("Llama-3.3-70B", "RTX4090", "8256", "llamacpp"),
]


def test_all_distinct_fit_rows_answer_as_their_single_commands(tmp_path: Path) -> None:
    """The bounded suggestion searches and the cached engine terms change no answer: each row of
    distinct configurations, among them the ones that search for suggestions, is the single command's
    JSON, byte for byte."""
    lines = ["command,model,gpu,ctx,engine"] + [f"fit,{m},{g},{c},{e}" for m, g, c, e in DISTINCT]
    out = cli("batch", _csv(tmp_path, "\n".join(lines) + "\n"), "--format", "jsonl")
    rows = out.stdout.splitlines()
    assert len(rows) == len(DISTINCT)
    for line, (model, gpu, ctx, engine) in zip(rows, DISTINCT, strict=True):
        alone = cli("fit", model, "--gpu", gpu, "--ctx", ctx, "--engine", engine, "--json")
        row = json.loads(line)
        assert row["exit_code"] == alone.code
        assert json.dumps(row["result"]) == json.dumps(json.loads(alone.stdout)), (model, gpu, ctx)
    suggested = [json.loads(line)["result"] for line in rows]
    assert any(r["suggestions"] for r in suggested) and any(r["one_gpu"] for r in suggested)


def test_a_row_that_fails_is_data_and_the_batch_goes_on(tmp_path: Path) -> None:
    text = "model,gpu,ctx\nQwen3-8B,H100,8k\nNo-Such-Model,H100,8k\nQwen3-8B,H100,9q\nQwen3-8B,L4,8k\n"
    out = cli("batch", _csv(tmp_path, text), "--json")
    data = json.loads(out.stdout)
    codes = [row["exit_code"] for row in data["rows"]]
    assert codes == [0, 2, 2, 0]
    assert data["rows"][1]["error"].startswith("unknown model 'No-Such-Model'")
    assert "invalid context '9q'" in data["rows"][2]["error"]
    assert data["rows"][1]["result"] is None
    assert [row["line"] for row in data["rows"]] == [2, 3, 4, 5]
    assert out.code == data["exit_code"] == 2
    assert data["counts"] == {"yes": 2, "no": 0, "error": 2, "internal": 0}
    assert out.stderr == ""  # the errors are in the answer, not on stderr


def test_the_exit_status_is_zero_only_when_every_row_is_yes() -> None:
    """0 all yes; else the most severe row: 3 internal > 2 could not answer > 1 does not fit."""
    assert batch_exit_code([0, 0]) == 0
    assert batch_exit_code([0, 1, 0]) == 1
    assert batch_exit_code([1, 2, 0]) == 2
    assert batch_exit_code([2, 3, 1]) == 3


def test_json_lines_input_takes_numbers_booleans_and_lists(tmp_path: Path) -> None:
    rows = [
        {"model": "Qwen3-8B", "gpu": "H100", "ctx": 32768, "enforce_eager": True},
        {"command": "which", "gpu": "L4", "gpus": 1},
        [1, 2],
    ]
    path = tmp_path / "rows.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n")
    data = json.loads(cli("batch", str(path), "--json").stdout)
    first, second, third = data["rows"]
    assert first["argv"] == ["fit", "Qwen3-8B", "--gpu", "H100", "--ctx", "32768", "--enforce-eager"]
    assert first["exit_code"] == 0
    assert second["command"] == "which" and second["exit_code"] == 0
    assert third["exit_code"] == 2 and "must be a JSON object" in third["error"]


def test_an_unknown_column_or_command_is_that_row_s_error(tmp_path: Path) -> None:
    text = "command,model,gpu,colour\nfit,Qwen3-8B,H100,red\nfly,Qwen3-8B,H100,\nbatch,x.csv,,\n"
    data = json.loads(cli("batch", _csv(tmp_path, text), "--json").stdout)
    first, second, third = data["rows"]
    assert first["exit_code"] == 2 and "--colour" in first["error"]
    assert second["exit_code"] == 2 and "unknown command 'fly'" in second["error"]
    assert third["exit_code"] == 2 and "cannot run another batch" in third["error"]


def test_repeated_rows_are_answered_once_and_keep_their_own_line(tmp_path: Path) -> None:
    text = "model,gpu\n" + "Qwen3-8B,H100\n" * 3
    data = json.loads(cli("batch", _csv(tmp_path, text), "--json").stdout)
    assert [row["line"] for row in data["rows"]] == [2, 3, 4]
    assert data["rows"][0]["result"] == data["rows"][2]["result"]


def test_table_and_csv_answer_one_line_per_row(tmp_path: Path) -> None:
    path = _csv(tmp_path, "model,gpu,ctx\nQwen3-32B,H100,32k\nNope-1B,H100,8k\n")
    table = cli("batch", path)
    assert "2 rows: 1 yes, 1 error" in table.stdout
    assert "Qwen3-32B at 32k context needs 1x NVIDIA H100" in table.stdout
    sheet = cli("batch", path, "--format", "csv").stdout.splitlines()
    assert sheet[0] == "line,command,model,exit_code,answer,warnings"
    assert sheet[1].startswith("2,fit,Qwen3-32B,0,Qwen3-32B at 32k context needs 1x")
    assert sheet[2].startswith("3,fit,Nope-1B,2,unknown model")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("", "empty batch file"),
        ("model,model\nx,y\n", "name each column once"),
        ("model,gpu\n", "no rows"),
        (b"model\n\xff\n", "not UTF-8"),
    ],
)
def test_a_file_that_cannot_be_read_is_one_line_and_exit_2(
    tmp_path: Path, content: str | bytes, message: str
) -> None:
    path = tmp_path / "bad.csv"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    out = cli("batch", str(path))
    assert out.code == 2 and out.stdout == ""
    assert message in out.stderr and out.stderr.count("\n") == 1


def test_a_missing_file_is_exit_2() -> None:
    out = cli("batch", "/nonexistent/rows.csv")
    assert out.code == 2 and "cannot read" in out.stderr


def test_a_csv_row_with_more_cells_than_the_header_is_an_error_row(tmp_path: Path) -> None:
    rows = read_batch(_csv(tmp_path, "model,gpu\nQwen3-8B,H100,extra\nQwen3-8B,H100\n"))
    assert rows[0].problem == "line 2: 3 cells for 2 columns"
    assert rows[1].values == {"model": "Qwen3-8B", "gpu": "H100"}


def test_the_library_returns_each_command_s_report() -> None:
    report = gpusize.fit("Qwen3-32B", ctx="32k", gpu="H100")
    assert type(report).__name__ == "FitReport" and report.fits and report.plan.num_gpus == 1
    assert type(gpusize.serve("Qwen3-8B", users=64, gpu="L40S", gpus=4)).__name__ == "ServeReport"
    assert type(gpusize.quote("Qwen3-8B", gpu="L4")).__name__ == "QuoteReport"
    assert type(gpusize.train("Llama-3.1-8B", method="lora", gpu="H100")).__name__ == "TrainReport"
    assert type(gpusize.which(gpu="L4")).__name__ == "WhichReport"
    assert type(gpusize.curve("Qwen3-8B", gpu="H100")).__name__ == "CurveReport"


def test_the_library_raises_the_error_the_command_prints() -> None:
    with pytest.raises(InputError, match="invalid context '9q'"):
        gpusize.fit("Qwen3-32B", ctx="9q")
    with pytest.raises(UnknownNameError, match="unknown model"):
        gpusize.fit("No-Such-Model")
    with pytest.raises(UsageError, match="No such option: --colour"):
        gpusize.fit("Qwen3-8B", colour="red")
    with pytest.raises(UsageError, match="not a finite number"):
        gpusize.fit("Qwen3-8B", gpu_memory_utilization=float("nan"))


def test_the_library_batch(tmp_path: Path) -> None:
    report = gpusize.batch(_csv(tmp_path, "model,gpu\nQwen3-8B,H100\n"))
    assert report.exit_code == 0 and report.rows[0].result.fits is True


#: Rows with a bad value, each refused by a different check: click's own type conversion (an
#: integer option), a gpusize parser (context), a setting's range, a choice, an unknown flag, a
#: value that looks like a flag; and a repeated flag (click keeps the last). (A switch's cell is true
#: or false, read by the batch itself: test_a_csv_cell_turns_a_switch_on_or_off.)
BAD_ROWS = [
    ["fit", "Qwen3-8B", "--gpus", "two"],
    ["fit", "Qwen3-8B", "--ctx", "9q"],
    ["fit", "Qwen3-8B", "--gpu-memory-utilization", "1.5"],
    ["fit", "Qwen3-8B", "--engine", "vllmx"],
    ["fit", "Qwen3-8B", "--colour", "red"],
    ["fit", "Qwen3-8B", "--ctx", "-5"],
    ["fit", "Qwen3-8B", "--gpu", "H100", "--gpu", "L4"],
    ["serve", "Qwen3-8B", "--users", "-3"],
    ["which", "Qwen3-8B"],
]


@pytest.mark.parametrize("argv", BAD_ROWS, ids=lambda a: " ".join(a))
def test_a_bad_row_is_refused_as_the_single_command_refuses_it(tmp_path: Path, argv: list[str]) -> None:
    """The same exit status and the same words as the command line alone, whichever check refuses
    it (rows bound without click's parser go to click for anything outside the plain shape)."""
    path = tmp_path / "rows.jsonl"
    row = {"command": argv[0], "model": argv[1]}
    words = argv[2:]
    for flag, value in zip(words[::2], words[1::2], strict=True):
        if flag[2:].replace("-", "_") in row:
            continue  # a repeated flag: written below as a list
        row[flag[2:].replace("-", "_")] = value
    if words.count("--gpu") == 2:
        row["gpu"] = ["H100", "L4"]  # type: ignore[assignment]
    path.write_text(json.dumps(row) + "\n")
    data = json.loads(cli("batch", str(path), "--json").stdout)["rows"][0]
    alone = cli(*argv, "--json")
    assert data["argv"] == argv and data["exit_code"] == alone.code
    if alone.code < 2:  # click takes the last of a repeated flag: an answer, as the line alone gives
        assert json.dumps(data["result"], indent=2) == alone.stdout.rstrip("\n")
    else:
        assert alone.stdout == "" and alone.stderr == f"gpusize: error: {data['error']}\n"


def test_rows_of_the_bench_grid_answer_as_their_single_commands(tmp_path: Path) -> None:
    """A sample of the all-distinct file of bench/bench_batch.py (models x GPUs x contexts): each
    row's JSON line is the single command's `--json` answer, byte for byte once re-indented."""
    models = ["Qwen3-32B", "Llama-3.3-70B", "gpt-oss-20b", "Qwen3-30B-A3B", "DeepSeek-V3"]
    gpus = ["H100", "RTX4090", "H200"]
    grid = [(m, g, str(1024 + 2048 * i)) for i, (m, g) in enumerate((m, g) for m in models for g in gpus)]
    text = "command,model,gpu,ctx,batch\n" + "".join(f"fit,{m},{g},{c},1\n" for m, g, c in grid)
    lines = cli("batch", _csv(tmp_path, text), "--format", "jsonl").stdout.splitlines()
    assert len(lines) == len(grid)
    for line, (model, gpu, ctx) in zip(lines, grid, strict=True):
        alone = cli("fit", model, "--gpu", gpu, "--ctx", ctx, "--batch", "1", "--json")
        row = json.loads(line)
        assert row["exit_code"] == alone.code
        assert json.dumps(row["result"], indent=2) == alone.stdout.rstrip("\n"), (model, gpu, ctx)


def test_a_csv_cell_turns_a_switch_on_or_off(tmp_path: Path) -> None:
    # a CSV cell is text: "true" was passed as `--enforce-eager true`, which click refuses
    rows = "model,gpu,enforce_eager,flash_attn,engine\nQwen3-8B,H100,true,,\nQwen3-8B,H100,no,,\n"
    rows += "Qwen3-8B,RTX4090,,false,llamacpp\nQwen3-8B,H100,maybe,,\n"
    (tmp_path / "rows.csv").write_text(rows)
    lines = cli("batch", str(tmp_path / "rows.csv"), "--format", "jsonl").stdout.splitlines()
    got = [json.loads(line) for line in lines]
    assert got[0]["argv"][-1] == "--enforce-eager" and got[0]["exit_code"] == 0
    assert got[1]["argv"][-1] == "--no-enforce-eager" and got[1]["exit_code"] == 0
    assert "--no-flash-attn" in got[2]["argv"] and got[2]["exit_code"] == 0
    assert got[3]["exit_code"] == 2 and "a switch takes true or false" in got[3]["error"]
    assert argv_for("fit", "Qwen3-8B", {"enforce_eager": True}) == ["fit", "Qwen3-8B", "--enforce-eager"]
