"""`cli.bind` binds a plain command line exactly as typer does, and leaves every other line to typer.

The reference is typer itself: each command's declared signature is given to a typer app whose
command records the keyword arguments typer (and the click it vendors) passes; the same line bound
by `cli.bind` must give the same names, values and types. Lines are built from every flag of every
command (each alias, `--flag value` and `--flag=value`, both forms of a switch) and drawn at random
(hypothesis), so a new option is checked without a new test.
"""

from __future__ import annotations

import inspect
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpusize.cli import register
from gpusize.cli.bind import _table, bind, switch_flags
from gpusize.cli.declare import COMMANDS_DECLARED, typer_command

register([])

#: A word of each type, as a user types it (and as click converts it).
WORDS: dict[type, list[str]] = {
    int: ["3", "+7", " 12 ", "0", "1_000"],
    float: ["0.5", "1e-3", "7", "nan", "-0.0"],
    str: ["8k", "x y", "", "é", "1"],
}


def _typer_kwargs(name: str, argv: list[str]) -> dict[str, Any] | None:
    """What typer passes to command `name` for `argv` (None: typer refuses the line)."""
    import typer

    seen: list[dict[str, Any]] = []
    function = COMMANDS_DECLARED[name].function

    def recorder(**kwargs: Any) -> None:
        seen.append(kwargs)

    recorder.__signature__ = inspect.signature(function, eval_str=True)  # type: ignore[attr-defined]
    app = typer.Typer()
    app.command(name)(typer_command(recorder))

    @app.callback()
    def _root() -> None:  # a group, as gpusize's app is
        pass

    try:
        app([name, *argv], standalone_mode=False)
    except Exception:  # noqa: BLE001 - click refused the line
        return None
    return seen[0] if seen else None


def _typed(kwargs: dict[str, Any]) -> dict[str, tuple[type, Any]]:
    def key(v: Any) -> Any:
        return repr(v)  # nan == nan, -0.0 vs 0.0 told apart

    return {k: (type(v), key(v)) for k, v in kwargs.items()}


def _same(name: str, argv: list[str]) -> bool:
    """Whether the line was bound here (then as typer binds it); a line left to typer is typer's."""
    bound = bind([name, *argv])
    if bound is None:
        return False
    expected = _typer_kwargs(name, argv)
    assert expected is not None, f"bound a line typer refuses: {argv}"
    assert _typed(bound.kwargs) == _typed(expected), argv
    return True


def _lines(name: str) -> list[list[str]]:
    """One line per flag form of command `name`, with its arguments given."""
    table = _table(COMMANDS_DECLARED[name].function)
    assert table is not None, f"{name}: a declaration cli.bind does not model"
    arguments = ["Qwen3-8B"] * len(table.arguments)
    lines = []
    for flag, (param, switch) in table.flags.items():
        required = ["--method", "lora"] if name == "train" and param.name != "method" else []
        base = arguments + required
        if switch is not None:
            lines.append([*base, flag])
            continue
        kind = next(t for t, c in ((int, int), (float, float), (str, str)) if param.convert is c)
        for word in WORDS[kind][:3]:
            lines.append([*base, flag, word])
            lines.append([*base, f"{flag}={word}"] if flag.startswith("--") else [*base, flag, word])
    return lines


@pytest.mark.parametrize("name", sorted(COMMANDS_DECLARED))
def test_every_flag_of_every_command_binds_as_typer_passes_it(name: str) -> None:
    for argv in _lines(name):
        assert _same(name, argv), f"a plain line left to typer: {argv}"


@pytest.mark.parametrize("name", sorted(COMMANDS_DECLARED))
def test_every_command_is_bound_here(name: str) -> None:
    """No command falls back to typer for its plain lines (a declaration bind does not model)."""
    assert _table(COMMANDS_DECLARED[name].function) is not None


@st.composite
def _random_line(draw: Callable[..., Any]) -> tuple[str, list[str]]:
    name = draw(st.sampled_from(sorted(COMMANDS_DECLARED)))
    table = _table(COMMANDS_DECLARED[name].function)
    assert table is not None
    words: list[str] = list(draw(st.lists(st.sampled_from(["Qwen3-8B", "a.yaml", "-"]), max_size=2)))
    flags = sorted(table.flags)
    for flag in draw(st.lists(st.sampled_from(flags), max_size=6)):
        param, switch = table.flags[flag]
        if switch is not None:
            words.append(flag)
            continue
        kind = next(t for t in (int, float, str) if param.convert is t)
        pool = WORDS[kind] + ["-1", "x", "--gpu"]
        words += [flag, draw(st.sampled_from(pool))]
    return name, draw(st.permutations(words))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_random_line())
def test_random_lines_bind_as_typer_passes_them(line: tuple[str, list[str]]) -> None:
    _same(*line)


@pytest.mark.parametrize(
    "argv",
    [
        ["fit", "Qwen3-8B", "--help"],
        ["fit", "Qwen3-8B", "--colour", "red"],
        ["fit", "Qwen3-8B", "--ctx", "8k", "--ctx", "32k"],  # click keeps the last: typer answers
        ["fit", "Qwen3-8B", "--ctx", "8k", "--max-model-len", "32k"],
        ["fit", "Qwen3-8B", "--batch", "two"],
        ["fit", "Qwen3-8B", "--reserved-mib", "-5"],  # a value like a flag: click decides
        ["fit", "Qwen3-8B", "--mtp=true"],
        ["fit", "Qwen3-8B", "--ctx"],
        ["fit"],  # the model is required
        ["fit", "A", "B"],
        ["fit", "Qwen3-8B", "--", "--gpu"],
        ["fit", "Qwen3-8B", "-qq"],
        ["which", "--gpu", "L4", "--top", "0"],  # out of --top's range (1-1000)
        ["train", "Qwen3-8B"],  # --method is required
        ["--version"],
        ["nonsense"],
        [],
    ],
    ids=lambda a: " ".join(a) or "(empty)",
)
def test_an_irregular_line_is_left_to_typer(argv: list[str]) -> None:
    assert bind(argv) is None


def test_completion_is_left_to_typer(monkeypatch: pytest.MonkeyPatch) -> None:
    assert bind(["fit", "Qwen3-8B"]) is not None
    monkeypatch.setenv("_GPUSIZE_COMPLETE", "complete_bash")
    assert bind(["fit", "Qwen3-8B"]) is None
    # a batch row or a library call is never a shell's completion: bound all the same
    assert bind(["fit", "Qwen3-8B"], from_shell=False) is not None


def test_switches_are_the_flags_typer_builds() -> None:
    from gpusize.cli.invoke import _click_app

    for name, command in _click_app().commands.items():  # type: ignore[attr-defined]
        expected = {}
        for param in command.params:
            if getattr(param, "is_flag", False):
                off = next((o for o in param.secondary_opts if o.startswith("--")), None)
                expected |= {o: off for o in param.opts if o.startswith("--")}
        assert switch_flags(name) == expected, name


def test_a_plain_fit_does_not_import_typer() -> None:
    code = (
        "import sys\nfrom gpusize.cli import main\n"
        "try:\n    main(['fit', 'Qwen3-8B', '--gpu', 'H100', '-q'])\n"
        "except SystemExit as e:\n    print(e.code, 'typer' in sys.modules, 'click' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["0", "False", "False"]


def test_help_and_bad_lines_still_get_typer_s_answers() -> None:
    from gpusize.cli.app import run_command

    assert run_command(["fit", "--help"]) == 0
    assert run_command(["fit", "Qwen3-8B", "--colour", "red"]) == 2
    assert run_command(["which", "--gpu", "L4", "--top", "0"]) == 2
