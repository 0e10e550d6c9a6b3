"""`safe`'s shortcut for printable ASCII (issue 24: quote over 1,000 GPU types escaped 14,000 strings
a character at a time) answers what the character loop answers, at and around the length limit."""

from __future__ import annotations

import random
import unicodedata

import pytest

from gpusize.render.text import _HIDDEN, safe


def _loop(text: str, keep_newlines: bool = False, limit: int = 10_000) -> str:
    """`safe` as written before the shortcut, one character at a time."""
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


ALPHABET = [chr(c) for c in range(0x100)] + ["\u202e", "\u200d", "\ufeff", "\u2028", "é", "名"]


@pytest.mark.parametrize("seed", range(4))
def test_safe_is_the_character_loop(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(500):
        pool = ALPHABET if rng.random() < 0.5 else [chr(c) for c in range(0x20, 0x7F)]
        text = "".join(rng.choice(pool) for _ in range(rng.randrange(0, 40)))
        for limit in (5, 20, 10_000):
            for keep in (False, True):
                assert safe(text, keep, limit) == _loop(text, keep, limit)
