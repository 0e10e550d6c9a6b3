"""`to_data` (one conversion per type, found once: reports/serialize.py) writes what the plain walk
over every value writes: the walk is kept here as the reference."""

from __future__ import annotations

import enum
import json
import math
import re
from dataclasses import dataclass, field, fields, is_dataclass
from typing import Any, NamedTuple

import gpusize
from gpusize.reports.serialize import _SURROGATE, json_lines, to_data


def walked(value: Any) -> Any:
    """The serializer as it was: isinstance tests for every value."""
    if is_dataclass(value) and not isinstance(value, type):
        names = [f.name for f in fields(value) if f.metadata.get("json", True)]
        names += list(getattr(type(value), "__json_properties__", ()))
        return {name: walked(getattr(value, name)) for name in names}
    if isinstance(value, tuple) and hasattr(value, "_asdict"):
        return {name: walked(v) for name, v in value._asdict().items()}
    if isinstance(value, dict):
        return {re.sub(_SURROGATE, "\ufffd", str(k)): walked(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, frozenset, set)):
        return [walked(v) for v in (sorted(value) if isinstance(value, (frozenset, set)) else value)]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, str):
        return re.sub(_SURROGATE, "\ufffd", value)
    return value


class Pair(NamedTuple):
    name: str
    size: float


class Colour(enum.Enum):
    RED = "red"


class Word(str, enum.Enum):
    HI = "hi\ud800"


@dataclass(frozen=True)
class Inner:
    pairs: tuple[Pair, ...]
    hidden: int = field(default=3, metadata={"json": False})

    __json_properties__ = ("double",)

    @property
    def double(self) -> float:
        return 2.0 * len(self.pairs)


@dataclass(frozen=True)
class Outer:
    inner: Inner
    tags: frozenset[str]
    table: dict[Any, Any]
    kind: type
    word: Word
    colour: Colour
    numbers: list[float]


def test_edge_values_are_written_as_the_walk_writes_them() -> None:
    value = Outer(
        inner=Inner((Pair("a\ud801", math.inf), Pair("b", -0.0))),
        tags=frozenset({"z", "a", "m"}),
        table={1: [math.nan, {2, 1}], "k\udfff": (True, None)},
        kind=Inner,
        word=Word.HI,
        colour=Colour.RED,
        numbers=[1.0, 1, True, 10**30],
    )
    assert to_data(value) == walked(value)
    assert repr(to_data(value)) == repr(walked(value))  # 1 and 1.0 and True kept apart


def test_reports_are_written_as_the_walk_writes_them() -> None:
    reports = [
        gpusize.fit("Qwen3-32B", ctx="32k", gpu="H100"),
        gpusize.fit("DeepSeek-V3", gpu="RTX4090"),
        gpusize.fit("Llama-3.3-70B", gpu="H100", engine="llamacpp"),
        gpusize.serve("Qwen3-8B", users=64, gpu="L40S", gpus=4),
        gpusize.train("Llama-3.1-8B", method="lora", gpu="H100"),
    ]
    for report in reports:
        assert repr(to_data(report)) == repr(walked(report))


@dataclass(frozen=True)
class Held:
    """A value many rows share: JSON Lines write its text once (`json_lines`)."""

    name: str
    inner: Inner | None = None

    __json_shared__ = True


@dataclass(frozen=True)
class Row:
    first: Held
    again: Held
    text: str
    rest: tuple[Held, ...]


def test_json_lines_write_each_value_as_json_dumps_does() -> None:
    """Shared values (one object in many rows, twice in a row, one inside another's field, unequal
    objects of the class) and strings that hold what a placeholder holds (a NUL, the word the
    placeholder starts with) give the lines `json.dumps` writes value by value."""
    one = Held("one\u00e9", Inner((Pair("p", 1.5),)))
    other = Held("\x00gpusize-shared-0\x00")
    rows = [
        Row(one, one, "\x00gpusize-shared-0\x00", (other, Held("x"))),
        Row(other, one, "plain", ()),
        Row(Held("one\u00e9", Inner((Pair("p", 1.5),))), other, "\x00", (one, one)),
    ]
    expected = "".join(json.dumps(walked(row), allow_nan=False) + "\n" for row in rows)
    assert json_lines(rows) == expected
    assert json_lines(rows) == expected  # a second writing starts afresh
    assert to_data(one) == walked(one)  # outside json_lines a shared value is written in full


def test_batch_lines_are_the_reports_dumped() -> None:
    """A batch over rows that share a model and settings: each line is json.dumps of the row."""
    from gpusize.cli.batch import run_rows
    from gpusize.sources.batch_file import BatchRow

    rows = [
        BatchRow(number=i + 2, values={"command": "fit", "model": model, "gpu": "H100", "ctx": ctx})
        for i, (model, ctx) in enumerate(
            [("Qwen3-8B", "4k"), ("Qwen3-8B", "8k"), ("Llama-3.1-8B", "4k"), ("Qwen3-8B", "4k")]
        )
    ]
    answers = run_rows(rows)
    lines = json_lines(answers).splitlines()
    assert lines == [json.dumps(walked(a), allow_nan=False) for a in answers]
