"""`paragraph`'s greedy wrap of plain prose (issue 24: a quote over 1,000 GPU types wraps 1,000 lines)
answers what textwrap.fill answers, for random words, widths and spacing, long words included; any
other text takes textwrap's own path."""

from __future__ import annotations

import random
import textwrap

import pytest

from gpusize.render.text import _greedy, _plain, paragraph, safe


def _fill(text: str, width: int) -> str:
    """`paragraph` as written before the greedy wrap."""
    return textwrap.fill(
        safe(text),
        width=max(width, 20),
        subsequent_indent="  ",
        break_long_words=False,
        break_on_hyphens=False,
    )


#: Letters, punctuation and hyphens (none of them a textwrap split); half the time also a no-break
#: space, a wide and an accented character (textwrap's path).
ASCII = "abcXYZ019-,.;:()$/%'\""
LETTERS = ASCII + "\u00a0\u540d\u00e9"


@pytest.mark.parametrize("seed", range(6))
def test_the_greedy_wrap_is_textwrap(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(400):
        pool = ASCII if rng.random() < 0.5 else LETTERS
        words = [
            "".join(rng.choice(pool) for _ in range(rng.choice((1, 3, 8, 15, 30, 90))))
            for _ in range(rng.randrange(0, 30))
        ]
        text = " ".join(words)
        for width in (0, 20, 21, 37, 80, 100):
            assert paragraph(text, width) == _fill(text, width), (text, width)
            if text.isascii():
                assert _plain(text)
                assert _greedy(text, max(width, 20)) == _fill(text, width)


@pytest.mark.parametrize(
    ("text", "plain"),
    [
        *((t, False) for t in (" lead", "trail ", "two  spaces", "nbsp \u00a0 x", "\u540d x")),
        *(
            (t, True) for t in ("tab\there", "a\nb c", "cr\rx", "ff\x0cx", "esc\x1b[2J x")
        ),  # safe escapes them first
    ],
)
def test_other_text_is_left_to_textwrap(text: str, plain: bool) -> None:
    """Other whitespace than single spaces between words, or a character beyond ASCII, takes
    textwrap's own path; controls are escaped before the wrap, and then plain."""
    assert _plain(safe(text)) is plain
    assert paragraph(text, 20) == _fill(text, 20)
