"""What each user must get from a server: a decode speed floor and, where given, a longest time to
first token (pure). `serve` picks its layout and `quote` ranks its options by it, and both say it."""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["READING_TOKENS_PER_S", "Targets"]

#: The default per-user speed floor, tokens/s: about twice silent reading speed, so a reader is never
#: kept waiting by the stream. Adults read English non-fiction silently at 238 words per minute on
#: average (Brysbaert, "How many words do we read per minute? A review and meta-analysis of reading
#: rate", Journal of Memory and Language 109, 2019), about 5.3 tokens/s at 0.75 words per token
#: (OpenAI's tokenizer rule of thumb, help.openai.com "What are tokens and how to count them?").
READING_TOKENS_PER_S = 10.0


class Targets(NamedTuple):
    """What each user must get for an option to meet the quote: a decode speed floor and, where given,
    a longest time to first token."""

    min_tokens_per_s_per_user: float = READING_TOKENS_PER_S
    max_ttft_s: float | None = None

    def met_by(self, tokens_per_s: float | None, ttft_s: float | None) -> bool:
        if tokens_per_s is None or tokens_per_s < self.min_tokens_per_s_per_user:
            return False
        return self.max_ttft_s is None or (ttft_s is not None and ttft_s <= self.max_ttft_s)

    def words(self) -> str:
        """The targets as the output states them."""
        ttft = f" and a first token within {self.max_ttft_s:g} s" if self.max_ttft_s is not None else ""
        return f"at least {self.min_tokens_per_s_per_user:g} tok/s each{ttft}"
