"""Text for a terminal: control characters made visible, colour only where it is wanted, the width.

A config.json, a GGUF header, a Hub answer, nvidia-smi or a user catalog can carry ESC sequences
that would retitle the window, clear the screen or recolour text; `safe` shows them as `\\x1b` instead.
Colour never carries meaning alone (the words yes/NO do) and is off unless stdout is a terminal and
NO_COLOR is unset.
"""

from __future__ import annotations

import os
import shutil
import textwrap
from dataclasses import dataclass
from typing import TextIO

__all__ = ["DEFAULT_WIDTH", "Style", "paragraph", "safe", "terminal_width"]

DEFAULT_WIDTH = 80
_CODES = {"bold": "1", "dim": "2", "red": "31", "green": "32", "yellow": "33", "cyan": "36"}


def safe(text: str, keep_newlines: bool = False, limit: int = 10_000) -> str:
    """Every control character (C0 but tab, DEL, C1, and newlines unless kept) shown as an escape."""
    out = []
    for ch in text[:limit]:
        code = ord(ch)
        if ch == "\n" and keep_newlines:
            out.append(ch)
        elif code < 0x20 or 0x7F <= code < 0xA0:
            out.append(f"\\x{code:02x}")
        elif code in (0x2028, 0x2029, 0x202E, 0x2066, 0x2067, 0x2068, 0x2069):  # line/paragraph, bidi
            out.append(f"\\u{code:04x}")
        else:
            out.append(ch)
    return "".join(out) + ("..." if len(text) > limit else "")


def terminal_width(stream: TextIO) -> int:
    """COLUMNS when it is a sane number, else the terminal's width, else 80 (a pipe or a file)."""
    raw = os.environ.get("COLUMNS", "")
    if raw.strip().isdigit() and 20 <= int(raw) <= 1000:
        return int(raw)
    if hasattr(stream, "isatty") and stream.isatty():
        return max(20, min(shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns, 1000))
    return DEFAULT_WIDTH


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
    return textwrap.fill(
        safe(text),
        width=max(width, 20),
        subsequent_indent="  ",
        break_long_words=False,
        break_on_hyphens=False,
    )
