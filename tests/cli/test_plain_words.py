"""Default output in plain words (issue 23): the settings line names CUDA graphs, not the JSON key;
quote's ranking says 'do not fit', not 'misfits'; serve's assumptions are a few lines (the full
detail is the JSON's); the table title says what a range is; "fewer GPUs" says of which type;
`which` with llama.cpp names no tensor parallel."""

from __future__ import annotations

from tests.helpers import CliResult, run_in_process


def run(*args: str) -> CliResult:
    return run_in_process(*args, env={"NO_COLOR": "1", "COLUMNS": "100"})


def _block(out: str, head: str) -> list[str]:
    lines = out.splitlines()
    i = next(n for n, line in enumerate(lines) if line.startswith(head))
    rest = []
    for line in lines[i + 1 :]:
        if not line.startswith("  "):
            break
        rest.append(line)
    return [lines[i], *rest]


def test_fit_settings_name_cuda_graphs_in_words() -> None:
    out = run("fit", "Qwen3-32B", "--ctx", "32k", "--gpu", "H100").stdout
    assert "cuda_graphs" not in out
    assert "block_size 16, CUDA graphs inside the budget" in " ".join(out.split())


def test_quote_ranking_says_do_not_fit() -> None:
    out = run("quote", "Llama-3.3-70B", "--users", "50", "--gpu", "H100", "--gpu", "L40S").stdout
    text = " ".join(out.split())
    assert "misfits" not in text and "then those that do not fit, last" in text


def test_serve_assumptions_are_short_and_plain() -> None:
    out = run("serve", "Llama-3.3-70B", "--users", "50", "--gpu", "H100").stdout
    para = _block(out, "Assumptions:")
    assert len(para) <= 3, para
    text = " ".join(" ".join(para).split())
    for jargon in ("Little's law", "residual", "leave-one-out"):
        assert jargon not in out, jargon
    assert "gpustack" not in text and "us per layer" not in text
    assert "details: --json" in text
    assert (
        "a range holds 8 in 10 of its group's errors on published benchmarks, out of sample by source"
        in " ".join(out.split())
    )


def test_serve_keeps_the_assumptions_the_users_flags_set() -> None:
    out = run("serve", "Qwen3-8B", "--users", "8", "--gpu", "H100", "--prefix-hit-rate", "0.5").stdout
    assert "50% of each prompt's tokens served by" in " ".join(_block(out, "Assumptions:"))


def test_fewer_gpus_says_of_the_same_type() -> None:
    out = run("fit", "Qwen3-32B", "--ctx", "32k", "--gpu", "A100-80GB", "--gpu", "A100-40GB").stdout
    assert "Fewer GPUs of the same type with a setting (fewer than that type's own split above" in " ".join(
        out.split()
    )


def test_which_with_llamacpp_names_no_tensor_parallel() -> None:
    out = run("which", "--gpu", "RTX4090", "--gpus", "2", "--engine", "llamacpp", "--top", "3").stdout
    header = next(line for line in out.splitlines() if line.startswith("model "))
    assert " TP " not in f"{header} " and "GPUs" in header
    assert "2 (layers)" in out
