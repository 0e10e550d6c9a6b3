"""Text for a terminal: control characters made visible, colour only where it is wanted, the width.

A config.json, a GGUF header, a Hub answer, nvidia-smi or a user catalog can carry ESC sequences
that would retitle the window, clear the screen or recolour text; `safe` shows them as `\\x1b` instead.
Colour never carries meaning alone (the words yes/NO do) and is off unless stdout is a terminal and
NO_COLOR is unset.
"""

from __future__ import annotations

import os
import re
import unicodedata
from typing import TextIO

from gpusize.dataclass import dataclass

__all__ = [
    "DEFAULT_WIDTH",
    "Style",
    "block",
    "paragraph",
    "safe",
    "said_once",
    "shell_command",
    "terminal_width",
]

DEFAULT_WIDTH = 80
# Unicode categories `safe` escapes beyond the C0/C1 controls: format (Cf), surrogate (Cs), line and
# paragraph separators (Zl, Zp). https://www.unicode.org/reports/tr44/#General_Category_Values
_HIDDEN = frozenset({"Cf", "Cs", "Zl", "Zp"})
_CODES = {"bold": "1", "dim": "2", "red": "31", "green": "32", "yellow": "33", "cyan": "36"}


def safe(text: str, keep_newlines: bool = False, limit: int = 10_000) -> str:
    """Every character a terminal would act on or hide shown as an escape: control characters (C0 but
    tab, DEL, C1, and newlines unless kept) as `\\x1b`; format characters (Unicode category Cf: bidi
    controls such as U+202E, zero-width joiners and spaces, U+FEFF), line and paragraph separators and
    lone surrogates (Cs, which no UTF-8 stream can carry) as `\\u200d`."""
    if text.isascii() and text.isprintable():  # nothing to escape (most text): the loop's answer
        return text if len(text) <= limit else text[:limit] + "..."
    out = []
    for ch in text[:limit]:
        code = ord(ch)
        if ch == "\n" and keep_newlines:
            out.append(ch)
        elif code < 0x20 or 0x7F <= code < 0xA0:
            out.append(f"\\x{code:02x}")
        elif code > 0xA0 and unicodedata.category(ch) in _HIDDEN:
            out.append(f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}")
        else:
            out.append(ch)
    return "".join(out) + ("..." if len(text) > limit else "")


def terminal_width(stream: TextIO) -> int:
    """COLUMNS when it is a sane number, else the terminal's width, else 80 (a pipe or a file)."""
    raw = os.environ.get("COLUMNS", "")
    if raw.strip().isdigit() and 20 <= int(raw) <= 1000:
        return int(raw)
    if hasattr(stream, "isatty") and stream.isatty():
        return max(20, min(_columns(stream) or DEFAULT_WIDTH, 1000))
    return DEFAULT_WIDTH


def _columns(stream: TextIO) -> int:
    """The terminal's width as `shutil.get_terminal_size` reads it (0: unknown), without importing
    shutil (and the archive modules it imports) on every start."""
    try:
        return os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, ValueError, OSError):
        return 0


@dataclass(frozen=True)
class Style:
    """ANSI styling, or none."""

    color: bool = False

    @classmethod
    def for_stream(cls, stream: TextIO) -> Style:
        wanted = not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"
        return cls(wanted and hasattr(stream, "isatty") and stream.isatty())

    def __call__(self, text: str, *styles: str) -> str:
        if not self.color or not styles or not text:
            return text
        codes = ";".join(_CODES[s] for s in styles)
        return f"\x1b[{codes}m{text}\x1b[0m"


def paragraph(text: str, width: int) -> str:
    """Prose made safe and wrapped to the terminal, continuation lines indented by two spaces."""
    shown, limit = safe(text), max(width, 20)
    if _plain(shown):  # the lines textwrap makes, found by str.rfind: 3 us a line against its 50
        return _greedy(shown, limit)
    import textwrap  # start-up: its import compiles five patterns; most prose is plain (`_greedy`)

    return textwrap.fill(
        shown, width=limit, subsequent_indent="  ", break_long_words=False, break_on_hyphens=False
    )


#: The whitespace textwrap splits on (textwrap._whitespace) beside the single space between words.
_SPACES = ("\t", "\n", "\x0b", "\x0c", "\r", "  ")


def _plain(text: str) -> bool:
    """ASCII words split by single spaces, none at either end: textwrap's chunks are then the words
    and the spaces between them, each line the longest run of words that fits (a word of Unicode
    spaces alone, which textwrap drops at a line's ends, is not ASCII)."""
    return text.isascii() and not (
        text.startswith(" ") or text.endswith(" ") or any(w in text for w in _SPACES)
    )


def _greedy(text: str, width: int) -> str:
    """`textwrap.fill(text, width, subsequent_indent="  ", break_long_words=False,
    break_on_hyphens=False)` of a `_plain` text: a word joins the line when it and its space fit;
    a word longer than a line stands alone (never broken). `paragraph` wraps a line of every option
    of a quote (1,000 buy-versus-rent lines over 1,000 GPU types: tests/render/test_wrap.py holds it
    to textwrap)."""
    lines: list[str] = []
    rest, room = text, width
    while len(rest) > room:
        cut = rest.rfind(" ", 0, room + 1)  # the last space that leaves the line's words within room
        if cut < 0:  # a first word longer than the line: alone on it
            cut = rest.find(" ")
            if cut < 0:
                break
        lines.append(rest[:cut])
        rest, room = rest[cut + 1 :], width - 2  # continuation lines are indented by two spaces
    lines.append(rest)
    return "\n  ".join(lines)


def block(text: str, width: int) -> str:
    """Lines of preformatted text (a topology sketch) made safe and each wrapped to the terminal,
    continuation lines indented two spaces past the line's own indent."""
    import textwrap  # start-up: imported where used (`paragraph`)

    out = []
    for line in text.split("\n"):
        indent = " " * (len(line) - len(line.lstrip(" ")))
        out.append(
            textwrap.fill(
                safe(line.strip()),
                width=max(width, 20),
                initial_indent=indent,
                subsequent_indent=indent + "  ",
                break_long_words=False,
                break_on_hyphens=False,
            )
        )
    return "\n".join(out)


def shell_command(lead: str, command: str, width: int) -> str:
    """`lead` and a shell command, broken before its options into lines ending in ` \\` so that it still
    pastes into a shell as one command; a flag stays with its value."""
    import shlex  # start-up: only a command with a launch line prints one (its import compiles a pattern)

    try:
        words = [shlex.quote(w) for w in shlex.split(command)]
    except ValueError:  # not a command line shlex can read: plain wrapped text
        return paragraph(f"{lead}{command}", width)
    groups: list[str] = []
    for word in words:  # a flag keeps its value; other words stand alone
        if groups and not word.startswith("-") and groups[-1].startswith("-") and " " not in groups[-1]:
            groups[-1] += " " + word
        else:
            groups.append(word)
    first, *rest = [safe(g) for g in groups] or [""]
    lead = safe(lead)
    fits = len(lead) + len(first) + 2 <= width
    lines = [f"{lead}{first}"] if fits else [lead.rstrip(), first]
    for group in rest:
        if len(lines[-1]) + 1 + len(group) + 2 <= width:
            lines[-1] += " " + group
        else:
            lines[-1] += " \\"
            lines.append("    " + group)
    return "\n".join(lines)


#: A number in a note (`said_once`), compiled where first used (`re`'s cache), not on import (start-up).
_NUMBER = r"\d[\d,]*(?:\.\d+)?"


def said_once(notes: list[tuple[str, str]], ranges: bool = True) -> list[str]:
    """Notes of several rows, each said once, naming every row it applies to. With `ranges` (caveats),
    notes whose words are the same, numbers aside, are one line with each number shown as the range it
    takes over the rows ("RTX4090 x1, L4 x1: ... ~2.3 GiB outside the budget, 1.5-2.2 GiB left ...");
    without (a row's own figures, which pair up), only identical notes are merged."""
    groups: dict[str, list[tuple[str, str]]] = {}
    for who, text in notes:
        groups.setdefault(re.sub(_NUMBER, "#", text) if ranges else text, []).append((who, text))
    lines = []
    for members in groups.values():
        whos = ", ".join(dict.fromkeys(who for who, _ in members))
        lines.append(f"{whos}: {_ranges([text for _, text in members])}")
    return lines


def _ranges(texts: list[str]) -> str:
    """The first text with each number replaced by its range over all the texts (same template)."""
    columns = list(zip(*(re.findall(_NUMBER, t) for t in texts), strict=True))
    pieces = re.split(_NUMBER, texts[0])
    out = [pieces[0]]
    for values, piece in zip(columns, pieces[1:], strict=True):
        low = min(values, key=lambda v: float(v.replace(",", "")))
        high = max(values, key=lambda v: float(v.replace(",", "")))
        out.append(low if float(low.replace(",", "")) == float(high.replace(",", "")) else f"{low}-{high}")
        out.append(piece)
    return "".join(out)
