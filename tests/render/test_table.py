"""Tables and prose fitted to a width: kept columns whole, prose under the table, nothing cut, no line
longer than the width; commands broken so they still paste; caveats said once."""

from __future__ import annotations

import shlex

from hypothesis import given
from hypothesis import strategies as st

from gpusize.render.table import Column, render_table
from gpusize.render.text import block, said_once, shell_command

COLUMNS = [
    Column("GPU", keep=True),
    Column("GPUs", "right", keep=True),
    Column("fits", keep=True),
    Column("need GiB/GPU", "right", priority=8, short="need"),
    Column("KV pool tokens", "right", priority=5, short="KV tokens"),
    Column("$/h", "right", priority=3),
    Column("why not", prose=True),
]
ROWS = [
    ["RTX-PRO-6000-Server", "8 (TP=8)", "yes", "10.5", "158,144", "14.40", ""],
    ["RTX3090Ti", "8 (TP=8)", "NO", "10.5", "399,200", "2.16", "vLLM refuses to start: free memory " * 3],
]


def test_wide_enough_everything_is_inline() -> None:
    text = render_table("Splits", COLUMNS, ROWS, 400)
    assert text.splitlines()[1].split()[-2:] == ["why", "not"]
    assert "not shown" not in text


def test_narrow_prose_goes_below_then_columns_drop_never_the_kept_ones() -> None:
    text = render_table("Splits tried on every GPU type of the catalog, best first", COLUMNS, ROWS, 40)
    lines = text.splitlines()
    assert all(len(line) <= 40 for line in lines)
    assert lines[0] == "Splits tried on every GPU type of the"  # the title wraps
    assert any(line.startswith("RTX-PRO-6000-Server  8 (TP=8)  yes") for line in lines)
    assert any(line.startswith("RTX3090Ti: vLLM refuses to start") for line in lines)  # prose below
    assert "(not shown at this width: $/h, KV pool tokens, need" in " ".join(text.split())
    assert "..." not in text  # no cell is ever cut


@given(
    st.lists(
        st.tuples(
            st.text("ABCXYZ-0123456789", min_size=1, max_size=12),
            st.integers(0, 10**9),
            st.text("abc xyz,;:", max_size=120),
        ),
        min_size=1,
        max_size=8,
    ),
    st.integers(40, 160),
)
def test_no_line_is_longer_than_the_width_and_kept_cells_are_whole(
    rows: list[tuple[str, int, str]], width: int
) -> None:
    columns = [
        Column("name", keep=True),
        Column("fits", keep=True),
        Column("count", "right", priority=2),
        Column("note", prose=True),
    ]
    cells = [[name, "yes" if n % 2 else "NO", f"{n:,}", note] for name, n, note in rows]
    text = render_table("A title that is long enough to wrap on a narrow terminal", columns, cells, width)
    assert all(len(line) <= width for line in text.splitlines())
    for name, fits, _, _ in cells:
        assert any(line.split()[:2] == [name, fits] for line in text.splitlines())


def test_a_long_command_still_pastes_as_one() -> None:
    command = (
        "VLLM_USE_FLASHINFER_SAMPLER=1 vllm serve 'my org/My Model' --tensor-parallel-size 4 "
        "--max-model-len 8192 --gpu-memory-utilization 0.92 --enable-expert-parallel --quantization fp8"
    )
    for width in (40, 60, 80):
        text = shell_command("Launch (vllm): ", command, width)
        assert all(len(line) <= width for line in text.splitlines())
        pasted = text.split("\n", 1)[1] if not text.startswith("Launch (vllm): VLLM") else text[15:]
        assert shlex.split(pasted.replace("\\\n", " ")) == shlex.split(command)
        assert "--max-model-len 8192" in text  # a flag stays with its value


def test_a_sketch_keeps_its_indent_when_wrapped() -> None:
    text = block(
        "requests -> balancer\n  replica 1: [GPU0 <-NVLink-> GPU1 <-NVLink-> GPU2] each holds 1/4", 40
    )
    lines = text.splitlines()
    assert lines[0] == "requests -> balancer" and lines[1].startswith("  replica 1:")
    assert all(line.startswith("    ") for line in lines[2:]) and all(len(line) <= 40 for line in lines)


def test_a_caveat_is_said_once_with_its_range() -> None:
    notes = [
        ("A x1", "may need ~2.3 GiB outside the budget, 1.6 GiB left"),
        ("B x1", "may need ~2.3 GiB outside the budget, 1.5 GiB left"),
        ("C x2", "spans 2 servers"),
        ("D x1", "may need ~2.5 GiB outside the budget, 2.2 GiB left"),
    ]
    assert said_once(notes) == [
        "A x1, B x1, D x1: may need ~2.3-2.5 GiB outside the budget, 1.5-2.2 GiB left",
        "C x2: spans 2 servers",
    ]
    assert len(said_once(notes, ranges=False)) == 4  # a row's own figures stay paired
    assert said_once([("A", "same"), ("B", "same")], ranges=False) == ["A, B: same"]
