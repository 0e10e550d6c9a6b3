"""How an engine setting is declared and checked (pure): the `Setting` a field carries, the field
helper, the part classes `EngineSettings` is assembled from, and the range check of a typed value."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import field
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

from gpusize.core.registry import EngineName
from gpusize.dataclass import dataclass
from gpusize.errors import InputError

__all__ = ["Setting", "assemble_settings", "checked", "setting", "settings_part"]

if TYPE_CHECKING:
    from typing_extensions import dataclass_transform
else:  # no typing_extensions import at start-up: the decorator only informs the type checker

    def dataclass_transform(**_: Any) -> Callable[[Any], Any]:
        return lambda decorator: decorator


_T = TypeVar("_T")


class Setting(NamedTuple):
    """How one engine setting is taken: `flag` (the engine's own name for it, and gpusize's option),
    the engines that read it (any other refuses it), one line of help, and its bounds: `low`/`high`
    for numbers (an int in [low, high], a float in (low, high] or [low, high] when not `low_open`),
    `choices` for a word; `off`, a count below `low` the engine takes as "off" (SGLang's
    --chunked-prefill-size -1). `launch` is the flag a launch command prints it under when the user gave it
    (None: the command prints it another way: a budget with its effective value, llama-server's own
    short flags, an environment switch). `since`: the first release of the engine that has it.

    A NamedTuple, not a frozen dataclass: it is built on every start and a NamedTuple class is made
    about ten times faster (bench: 0.3 vs 3.4 ms per class under load); it is never serialized."""

    flag: str
    engines: tuple[EngineName, ...]
    help: str
    aliases: tuple[str, ...] = ()
    low: float | None = None
    high: float | None = None
    low_open: bool = True
    choices: tuple[str, ...] = ()
    off: int | None = None
    launch: str | None = None
    #: (engine, first release) where the `launch` flag exists later than the engines' first modelled
    #: release: an older release's command leaves it out.
    launch_since: tuple[tuple[EngineName, str], ...] = ()
    #: The flag a launch command prints for a switch the user turned off (argparse's
    #: BooleanOptionalAction `--no-` form); None: an off switch is left out.
    launch_off: str | None = None
    #: The value is several space-separated words, each its own argument (argparse nargs="*").
    many: bool = False
    #: The first release of its engine that takes the flag (None: every release modelled); an older
    #: release refuses it and its launch command leaves it out.
    since: str | None = None
    #: The environment variable a launch command sets before the program when the user gave the
    #: setting (a boolean as 1 / 0), where the engine reads it from the environment, not a flag.
    env: str | None = None
    #: The first release that no longer reads `env` (None: every release modelled reads it): a
    #: command for it or a later one leaves the assignment out.
    env_until: str | None = None
    #: The launch command prints the value in capitals (SGLang's --speculative-algorithm: argparse
    #: choices EAGLE, ... before 0.5.12, which takes any case; gpusize accepts any case).
    upper: bool = False


def setting(*, default: Any, **declaration: Any) -> Any:
    """A settings field: its default and its `Setting` declaration (`default` by keyword: the type
    checker reads a field specifier's default only by that name)."""
    return field(default=default, metadata={"setting": Setting(**declaration)})


@dataclass_transform(kw_only_default=True, frozen_default=True, field_specifiers=(setting,))
def settings_part(cls: type[_T]) -> type[_T]:
    """A group of settings fields (one engine's, or one concern's), declared in its own module and
    made a field of `EngineSettings` by `assemble_settings`. At run time it stays a plain class: the
    fields are turned into a dataclass once, in the assembled class (each dataclass costs about 1 ms
    of start-up, measured); the decorator tells the type checker the fields it holds."""
    return cls


@dataclass_transform(kw_only_default=True, frozen_default=True, field_specifiers=(setting,))
def assemble_settings(cls: type[_T]) -> type[_T]:
    """The frozen, keyword-only dataclass of `cls`'s own fields after every part's it derives from,
    in reverse base order (as dataclasses order inherited fields)."""
    annotations: dict[str, Any] = {}
    for part in reversed(cls.__mro__[1:-1]):
        for name, annotation in part.__dict__.get("__annotations__", {}).items():
            annotations[name] = annotation
            setattr(cls, name, part.__dict__[name])
    annotations.update(cls.__dict__.get("__annotations__", {}))
    cls.__annotations__ = annotations
    return dataclass(frozen=True, kw_only=True)(cls)


def checked(value: Any, s: Setting) -> Any:
    """`value` as typed, checked against its declaration; InputError names the flag and its range."""
    if isinstance(value, bool):
        return value
    if s.many:
        return _words(str(value), s)
    if s.choices:
        key = str(value).strip().lower()
        if key not in s.choices:
            raise InputError(f"unknown {s.flag} '{str(value)[:40]}'; use one of {', '.join(s.choices)}")
        return key
    if isinstance(value, int) and s.low is not None:
        return _count(value, s)
    if isinstance(value, float) and s.low is not None and s.high is not None:
        inside = (value > s.low if s.low_open else value >= s.low) and value <= s.high
        if not math.isfinite(value) or not inside:
            bracket = "(" if s.low_open else "["
            raise InputError(f"invalid {s.flag} {value}: must be in {bracket}{s.low:g}, {s.high:g}]")
    return value


def _words(value: str, s: Setting) -> str:
    """A `many` value: printable words, none read as an option; InputError names the flag."""
    words = value.split()
    if not words:
        raise InputError(f"invalid {s.flag}: give at least one value")
    for word in words:
        if word.startswith("-") or not word.isprintable():
            raise InputError(
                f"invalid {s.flag} value {ascii(word)[:60]}: each adapter is a printable NAME=PATH or "
                "PATH, not an option"
            )
    return " ".join(words)


def _count(value: int, s: Setting) -> int:
    assert s.low is not None and s.high is not None
    if value == s.off:
        return value
    if value < s.low:
        floor = "greater than zero" if s.low == 1 else f"at least {s.low:g}"
        off = f", or {s.off} (off)" if s.off is not None else ""
        raise InputError(f"invalid {s.flag} {value}: must be {floor}{off}")
    if value > s.high:
        raise InputError(f"invalid {s.flag} {value}: at most {int(s.high):,}")
    return value
