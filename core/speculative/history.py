"""The document's earlier pages as a draft: what the model wrote there, it often writes again.

A manual's tables share their markup and rows across pages (``│ spam │ 42 │`` under every format of
tabulate's README), a report repeats its running header, a paper its notation. No drafter sees
that: an OCR reads no box rules at all. The verified output of the pages already converted is free
and exactly in the model's own tokens, so Stage 1 and Stage 2 rows of later pages also look there.

``OutputHistory`` is one growing token draft (all earlier pages, in order), searched as
``tokenmatch.DraftIndex`` searches. Two limits keep it cheap on long documents:

* a lookup returns only the ``recent`` latest occurrences of an n-gram (``"\\n\\n"`` may occur
  thousands of times; the latest are the likeliest to repeat, and each hit costs a slice per pass);
* at most ``max_tokens`` tokens are kept; past that, the oldest half is dropped (a lookup that
  finds fewer than ``recent`` occurrences searches the whole history).
"""

from __future__ import annotations

from core.speculative.tokenmatch import DraftIndex, Found, pack_tokens
from core.tuning import HISTORY_RECENT, HISTORY_TOKENS, MAX_NGRAM


class OutputHistory(DraftIndex):
    def __init__(self, max_ngram: int = MAX_NGRAM, max_tokens: int = HISTORY_TOKENS, recent: int = HISTORY_RECENT):
        super().__init__([[]], max_ngram)
        self.max_tokens, self.recent = max_tokens, recent

    def add_page(self, tokens: list[int]) -> None:
        """Append one page's verified output (the model's tokens, prompt excluded)."""
        if not tokens:
            return
        kept = self.drafts[0]
        if len(kept) + len(tokens) > self.max_tokens:
            tail = (kept + list(tokens))[-(self.max_tokens // 2):]
            self.set_draft(0, tail)
        else:
            self.extend(0, list(tokens))

    def find(self, suffix: tuple[int, ...], length: int = 0) -> Found:
        """The ``recent`` latest occurrences, searched from the end, in order of position."""
        if not suffix or len(suffix) > self.max_ngram:
            return Found([], [])
        buffer = self._packed_buffer()
        pattern, stop, places = pack_tokens(suffix), len(buffer) - 4, []
        i = buffer.rfind(pattern)
        while i != -1 and len(places) < self.recent:
            if not i % 4:  # on a token's first byte
                places.append((0, i + len(pattern), stop))
            i = buffer.rfind(pattern, 0, i + len(pattern) - 1)  # the one before (overlapping too)
        return self._with_continuations(places[::-1], length)

    def narrow(self, found: Found, suffix: tuple[int, ...], length: int) -> Found:
        """Searched again: the latest occurrences of the longer n-gram may lie before the shorter
        one's ``recent`` latest."""
        return self.find(suffix, length)

    def __len__(self) -> int:
        return len(self.drafts[0])
