"""Where a page's passes go: each page-level (Stage 2) pass charged to the cause that ended it.

A pass ends at its bonus token: the first token no proposal had right. Under replay the output is
the reference, so that token's place in the reference says what the drafts were missing there:

* ``formula``: inside math (``$ $``, ``$$ $$``, ``\\( \\)``, ``\\[ \\]``, ``\\begin{...}``): the OCR reads
  no LaTeX, the model writes it;
* ``table``: inside an HTML or pipe table (cell markup, a recogniser's structure differing);
* ``markup and style``: a token with no letter, digit or CJK character outside math and tables:
  blank lines, heading marks, list bullets, fences, emphasis, separators the draft writes another way;
* ``text no draft holds``: text that occurs in no draft with ``WINDOW`` normalised characters on
  either side (the drafts joined in reading order): a region the layout missed, an OCR misreading, a word the model invented;
* ``text the drafts hold``: the rest: region boundaries, reading order, tokenisation, a proposal
  cut short by its budget.

``gained`` counts the tokens those passes wrote, so ``gained / passes`` is each cause's accepted length.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter

CAUSES = ("formula", "table", "markup and style", "text no draft holds", "text the drafts hold")
#: Normalised characters on each side of a pass's end that must occur in a draft for it to hold the text.
WINDOW = 6

_MATH = re.compile(r"\$\$.*?\$\$|\$[^$\n]+?\$|\\\(.*?\\\)|\\\[.*?\\\]|\\begin\{(\w+\*?)\}.*?\\end\{\1\}", re.DOTALL)
_TABLE = re.compile(r"<table\b.*?</table>|(?:^[ \t]*\|.*\|[ \t]*(?:\n|$))+", re.DOTALL | re.MULTILINE | re.IGNORECASE)
_MASK = re.compile(r"<[^<>]{0,40}>|\\[A-Za-z]+")


def _spans(pattern: re.Pattern, text: str) -> list[bool]:
    inside = [False] * (len(text) + 1)
    for m in pattern.finditer(text):
        inside[m.start():m.end()] = [True] * (m.end() - m.start())
    return inside


def _norm(text: str) -> tuple[str, list[int]]:
    """Letters, digits and CJK of ``text`` (markup masked), with each one's raw index."""
    masked = _MASK.sub(lambda m: "\0" * len(m.group(0)), text)
    chars, index = [], []
    for i, ch in enumerate(masked):
        for c in unicodedata.normalize("NFKC", ch) if ch != "\0" else ():
            if c.isalnum():
                chars.append(c.lower())
                index.append(i)
    return "".join(chars), index


class PageCauses:
    """Classifies positions of one page's reference (``reference``) against its drafts."""

    def __init__(self, reference: str, drafts: list[str]):
        self.reference = reference
        self.math = _spans(_MATH, reference)
        self.table = _spans(_TABLE, reference)
        self.norm, self.index = _norm(reference)
        self.drafts = "".join(_norm(d)[0] for d in drafts)  # in reading order: boundaries count as held
        self._before = []  # per raw position: how many normalised characters precede it
        k = 0
        for i in range(len(reference) + 1):
            while k < len(self.index) and self.index[k] < i:
                k += 1
            self._before.append(k)

    def cause(self, start: int, end: int) -> str:
        """The cause of a pass whose bonus token spans raw characters ``start .. end`` of the reference."""
        if any(self.math[start:end]):
            return "formula"
        if any(self.table[start:end]):
            return "table"
        k0, k1 = self._before[start], self._before[min(end, len(self.reference))]
        if k0 == k1:
            return "markup and style"
        lo, hi = max(0, k0 - WINDOW), min(len(self.norm), k1 + WINDOW)
        held = self.norm[lo:k1] in self.drafts or self.norm[k0:hi] in self.drafts
        return "text the drafts hold" if held else "text no draft holds"


def page_causes(reference: str, drafts: list[str], ref_ids: list[int], gains: list[int], decode) -> dict:
    """``{cause: {"passes": n, "gained": tokens, "one_token": n}}`` for one page's Stage 2 ``gains``
    (tokens per pass, in order) over the reference's token ids ``ref_ids``."""
    pc = PageCauses(reference, drafts)
    # raw character offset of each token boundary (decoding prefixes keeps multi-byte tokens honest)
    offsets = [0]
    for i, t in enumerate(ref_ids):
        piece = decode([t])
        offsets.append(offsets[-1] + len(piece) if "\ufffd" not in piece else len(decode(ref_ids[:i + 1])))
    out = {c: Counter() for c in CAUSES}
    at = 0
    for g in gains:
        if g <= 0:
            continue
        last = min(at + g, len(ref_ids))
        start, end = offsets[last - 1], max(offsets[last], offsets[last - 1] + 1)
        c = pc.cause(start, end)
        out[c]["passes"] += 1
        out[c]["gained"] += g
        out[c]["one_token"] += g == 1
        at += g
    return {c: dict(v) for c, v in out.items()}


def add(total: dict, page: dict) -> dict:
    for c, v in page.items():
        t = total.setdefault(c, Counter())
        t.update(v)
    return total


def markdown_table(total: dict, pages: int) -> list[str]:
    """The causes table over ``pages`` pages."""
    passes = sum(v.get("passes", 0) for v in total.values()) or 1
    lines = ["| cause | Stage 2 passes | share | tokens written | tokens per pass | one-token passes |",
             "|---|---|---|---|---|---|"]
    for c in CAUSES:
        v = total.get(c, {})
        n, g = v.get("passes", 0), v.get("gained", 0)
        lines.append(f"| {c} | {n} | {100 * n / passes:.0f} % | {g} | {g / n if n else 0:.1f} | "
                     f"{v.get('one_token', 0)} |")
    lines.append(f"| all ({pages} pages) | {passes} | 100 % | {sum(v.get('gained', 0) for v in total.values())} | "
                 f"{sum(v.get('gained', 0) for v in total.values()) / passes:.1f} | "
                 f"{sum(v.get('one_token', 0) for v in total.values())} |")
    return lines
