"""Page-level re-synchronisation on normalised characters.

Token n-grams fail where the draft and the output tokenise the same text differently (a region
boundary, a space the drafter collapsed, a full-width comma). Matching on letters, digits and CJK
only absorbs all of that: find the output's last few normalised characters in a draft, map the hit
back to the raw draft text, and tokenise what follows with the target's tokenizer.

Worked example: output ``"... totals: **12.5**"``, draft ``"Totals: 12.5 % of revenue"``:
normalised output tail ``"otals125"`` occurs in the normalised draft ``"Totals125ofrevenue"``; it
ends at raw index 12 (after "5"). The output's raw tail after its last kept character is ``"**"``,
which the draft does not continue with, so the proposal starts at the draft's next kept character
after its own separator: ``" % of revenue"`` becomes ``"% of revenue"`` ... tokenised and proposed.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass


def _kept(ch: str) -> bool:
    return ch.isalnum()


@dataclass
class NormalizedText:
    """A raw text with its normalised character stream and, per normalised char, its raw index."""

    raw: str
    norm: str
    raw_index: list[int]

    @classmethod
    def of(cls, raw: str) -> "NormalizedText":
        chars, index = [], []
        for i, ch in enumerate(raw):
            for c in unicodedata.normalize("NFKC", ch):
                if _kept(c):
                    chars.append(c)
                    index.append(i)
        return cls(raw, "".join(chars), index)


def _raw_tail_after_kept(text: str) -> str:
    """The characters after the last kept character: ``"abc, **"`` -> ``", **"``."""
    for i in range(len(text) - 1, -1, -1):
        if _kept(text[i]):
            return text[i + 1:]
    return text


class TextMatcher:
    """Finds continuations of an output text inside raw text drafts (see module docstring)."""

    def __init__(self, drafts: list[str], min_chars: int = 6, max_chars: int = 48,
                 max_hits: int = 8):
        self.drafts = [NormalizedText.of(d) for d in drafts]
        self.min_chars, self.max_chars, self.max_hits = min_chars, max_chars, max_hits

    def __bool__(self) -> bool:
        return any(d.norm for d in self.drafts)

    def set_text(self, d: int, text: str) -> None:
        """Replace draft ``d``'s text."""
        self.drafts[d] = NormalizedText.of(text)

    def continuations(self, output_tail: str, max_chars_out: int = 400) -> list[tuple[str, int, int]]:
        """Raw draft texts that plausibly follow ``output_tail``.

        Returns up to ``max_hits`` ``(text, draft_id, raw_start)``, the longest-context hits first;
        the window of normalised characters grows from ``min_chars`` until the hits agree.
        """
        tail = NormalizedText.of(output_tail).norm
        if len(tail) < self.min_chars:
            return []
        sep = _raw_tail_after_kept(output_tail)
        best: list[tuple[int, int]] = []
        n = self.min_chars
        while n <= min(self.max_chars, len(tail)):
            key = tail[-n:]
            hits = []
            for d, text in enumerate(self.drafts):
                start = text.norm.find(key)
                while start != -1 and len(hits) < 4 * self.max_hits:
                    hits.append((d, start + n))
                    start = text.norm.find(key, start + 1)
            if not hits:
                break
            best = hits
            if len({self._raw_after(d, e, sep, 32) for d, e in hits}) <= 1:
                break
            n += 4
        out, seen = [], set()
        for d, end in best:
            cont = self._raw_after(d, end, sep, max_chars_out)
            if cont and cont not in seen:
                seen.add(cont)
                out.append((cont, d, end))
            if len(out) >= self.max_hits:
                break
        return out

    def _raw_after(self, d: int, norm_end: int, sep: str, limit: int) -> str:
        """Raw draft text after normalised position ``norm_end``, aligned with the output's separator."""
        text = self.drafts[d]
        raw_pos = text.raw_index[norm_end - 1] + 1
        rest = text.raw[raw_pos:raw_pos + limit + len(sep)]
        if sep and rest.startswith(sep):
            return rest[len(sep):limit + len(sep)]
        if sep:
            # The output already wrote its own separator: resume at the draft's next kept character.
            i = 0
            while i < len(rest) and not _kept(rest[i]):
                i += 1
            return rest[i:i + limit]
        return rest[:limit]
