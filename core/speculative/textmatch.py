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

import re
import unicodedata
from dataclasses import dataclass


def _kept(ch: str) -> bool:
    return ch.isalnum()


#: Markup whose letters are not content: HTML tags (``<td>`` vs ``<th>``) and LaTeX command names
#: (the output's ``68.3 $ \\pm $ 19.7`` is an OCR draft's ``68.3 ± 19.7``).
_MARKUP = re.compile(r"<[^<>]{0,40}>|\\[A-Za-z]+")


@dataclass
class NormalizedText:
    """A raw text with its normalised character stream and, per normalised char, its raw index."""

    raw: str
    norm: str
    raw_index: list[int]

    @classmethod
    def of(cls, raw: str) -> "NormalizedText":
        markup = [False] * len(raw)
        for m in _MARKUP.finditer(raw):
            markup[m.start():m.end()] = [True] * (m.end() - m.start())
        chars, index = [], []
        for i, ch in enumerate(raw):
            if markup[i]:
                continue
            for c in unicodedata.normalize("NFKC", ch):
                if _kept(c):
                    chars.append(c)
                    index.append(i)
        return cls(raw, "".join(chars), index)


_SEPARATOR_RUN = re.compile(r"[\W_]+")


class TextMatcher:
    """Finds continuations of an output text inside raw text drafts (see module docstring).

    It also learns how the output renders the drafts' separators: wherever a matched window shows the
    draft writing ``" ± "`` or ``"</td><td>"`` between two characters where the output wrote
    ``" $ \\pm $ "`` or ``"</td>\\n <td>"``, later continuations are proposed with the output's form.
    """

    def __init__(self, drafts: list[str], min_chars: int = 6, max_chars: int = 48,
                 max_hits: int = 8):
        self.drafts = [NormalizedText.of(d) for d in drafts]
        self.min_chars, self.max_chars, self.max_hits = min_chars, max_chars, max_hits
        self.rewrites: dict[str, str] = {}  # draft separator -> the output's, where they differ

    def __bool__(self) -> bool:
        return any(d.norm for d in self.drafts)

    def set_text(self, d: int, text: str) -> None:
        """Replace draft ``d``'s text."""
        self.drafts[d] = NormalizedText.of(text)

    def continuations(self, output_tail: str, max_chars_out: int = 400) -> list[tuple[str, int, int]]:
        """Raw draft texts that plausibly follow ``output_tail``.

        Returns up to ``max_hits`` ``(text, draft_id, norm_end)``, the longest-context hits first;
        the window of normalised characters grows from ``min_chars`` until the hits agree.
        """
        out_text = NormalizedText.of(output_tail)
        tail = out_text.norm
        if len(tail) < self.min_chars:
            return []
        sep = output_tail[out_text.raw_index[-1] + 1:]
        best: list[tuple[int, int]] = []
        window = n = self.min_chars
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
            best, window = hits, n
            if len({self._raw_after(d, e, sep, 32) for d, e in hits}) <= 1:
                break
            n += 4
        if best:
            self._learn(out_text, *best[0], window)
        out, seen = [], set()
        for d, end in best:
            cont = self._raw_after(d, end, sep, max_chars_out)
            if cont and cont not in seen:
                seen.add(cont)
                out.append((cont, d, end))
            if len(out) >= self.max_hits:
                break
        return out

    def _learn(self, out: NormalizedText, d: int, norm_end: int, n: int) -> None:
        """Record the separators of the ``n`` matched characters: draft form -> output form."""
        draft = self.drafts[d]
        oi, di = out.raw_index[-n:], draft.raw_index[norm_end - n:norm_end]
        for k in range(n - 1):
            if oi[k] == oi[k + 1] or di[k] == di[k + 1]:
                continue  # one raw character gave two normalised ones (NFKC)
            mine, theirs = out.raw[oi[k] + 1:oi[k + 1]], draft.raw[di[k] + 1:di[k + 1]]
            if not mine or not theirs:
                continue  # "TiO2" vs "TiO}_{2": never rewrite between adjacent characters
            if mine != theirs:
                self.rewrites[theirs] = mine
            else:
                self.rewrites.pop(theirs, None)

    def _rewrite(self, text: str) -> str:
        if not self.rewrites:
            return text
        return _SEPARATOR_RUN.sub(lambda m: self.rewrites.get(m.group(0), m.group(0)), text)

    def _raw_after(self, d: int, norm_end: int, sep: str, limit: int) -> str:
        """Draft text after normalised position ``norm_end`` in the output's form (separators
        rewritten), starting where the output's own separator ``sep`` leaves off."""
        text = self.drafts[d]
        if norm_end >= len(text.raw_index):
            return ""
        nxt = text.raw_index[norm_end]
        gap = text.raw[text.raw_index[norm_end - 1] + 1:nxt]
        gap = self.rewrites.get(gap, gap)
        if sep:
            # the output began its separator: propose the rest of it, or resume at the next character
            gap = gap[len(sep):] if gap.startswith(sep) else ""
        return (gap + self._rewrite(text.raw[nxt:nxt + limit]))[:limit]
