"""Text as the matcher compares it: letters and digits only, each mapped back to its raw span.

``NormalizedText.of("Totals: **12.5** %")`` keeps ``Totals125``; ``raw_index`` / ``raw_end`` say where
each kept character came from, so a position found in the normalised stream is a position in the raw
text. Markup is skipped (HTML tags, LaTeX command names, a command naming a letter kept as that
letter: ``\\alpha`` is ``α``), and any other character becomes its NFKC form's letters and digits.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from array import array
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from core.speculative.latex import LETTER_OF_COMMAND


def _kept(ch: str) -> bool:
    return ch.isalnum()


#: Markup whose letters are not content: HTML tags (``<td>`` vs ``<th>``) and LaTeX command names
#: (the output's ``68.3 $ \\pm $ 19.7`` is an OCR draft's ``68.3 ± 19.7``). Only the tags a page's
#: Markdown or HTML rendering uses: a listing's own elements (``<ejb-name>`` in an XML example) are
#: its text, which the drafts hold too.
_HTML_TAGS = ("table|thead|tbody|tfoot|tr|td|th|caption|colgroup|col|br|hr|p|div|span|b|i|u|s|em|strong|"
              "sub|sup|small|big|img|a|ul|ol|li|dl|dt|dd|h[1-6]|html|body|head|code|pre|blockquote|figure|"
              "figcaption|center|font|mark|del|ins|math|mi|mn|mo|mrow|msup|msub|mfrac")
_MARKUP = re.compile(r"</?(?i:" + _HTML_TAGS + r")\b[^<>]{0,40}>|<!--[^<>]{0,40}-->|\\[A-Za-z]+")


#: LaTeX commands that name a letter normalise to that letter (``core.speculative.latex``): the
#: output's ``$\\alpha=90^{\\circ}$`` and a draft's ``α=90°`` are one stream (``α90``), so matching
#: goes on through the formula.
_LATEX_LETTERS = LETTER_OF_COMMAND


@dataclass
class NormalizedText:
    """A raw text with its normalised character stream and, per normalised char, the raw span it
    came from: ``raw[raw_index[k]:raw_end[k]]`` (one character, or a command such as ``\\alpha``)."""

    raw: str
    norm: str
    raw_index: Sequence[int]  # a list, or for a long text an ``array('q')``
    raw_end: Sequence[int]

    @classmethod
    def of(cls, raw: str) -> "NormalizedText":
        """Markup is skipped (a LaTeX command naming a letter kept as that letter), ASCII letters and
        digits kept, any other character replaced by its NFKC form's letters and digits. A text of
        ``_LONG_TEXT`` characters or more (an output's tail, a joined draft of a whole page) is
        folded with array operations (``_fold_long``); a shorter one character by character, where
        those would cost more. The texts seen last are answered from a cache: a page's drafts are
        normalised again each time they are rebuilt (the early lines of a scan, chunk by chunk).
        The records are shared: never changed once made."""
        return _normalized(raw)

    @classmethod
    def _build(cls, raw: str) -> "NormalizedText":
        spans = [(m.start(), m.end(), _LATEX_LETTERS.get(m.group(0)[1:]) if m.group(0)[0] == "\\" else None)
                 for m in _MARKUP.finditer(raw)]
        if len(raw) >= _LONG_TEXT:
            folded = _fold_long(raw, spans)
            if folded is not None:
                return cls(raw, *folded)
        chars: list[str] = []
        index: list[int] = []
        end: list[int] = []
        pos = 0
        for a, b, letter in spans + [(len(raw), len(raw), None)]:
            for i in range(pos, a):
                ch = raw[i]
                kept = (ch if ch.isalnum() else "") if ch < "\x80" else _fold(ch)
                for c in kept:
                    chars.append(c)
                    index.append(i)
                    end.append(i + 1)
            if letter:
                chars.append(letter)
                index.append(a)
                end.append(b)
            pos = b
        return cls(raw, "".join(chars), index, end)

    def gap(self, k: int) -> str:
        """The raw text between normalised characters ``k`` and ``k + 1``."""
        return self.raw[self.raw_end[k]:self.raw_index[k + 1]]


@functools.lru_cache(maxsize=1024)
def _normalized(raw: str) -> NormalizedText:
    return NormalizedText._build(raw)


#: Characters from which ``NormalizedText.of`` folds with array operations (cheaper from about 100).
_LONG_TEXT = 128
#: Per non-ASCII character: its NFKC form's letters and digits ("" for punctuation, "fi" for "ﬁ").
_FOLDS: dict[str, str] = {}
#: Per character of the Basic Multilingual Plane, the code its fold is (0: dropped), or one of:
_UNSEEN, _SEVERAL = 0xFFFFFFFF, 0xFFFFFFFE  # not folded yet; folds to several characters
_FOLD_CODES = np.full(0x10000, _UNSEEN, dtype=np.uint32)
_FOLD_CODES[:128] = [c if chr(c).isalnum() else 0 for c in range(128)]


def _fold(ch: str) -> str:
    kept = _FOLDS.get(ch)
    if kept is None:
        kept = _FOLDS[ch] = "".join(c for c in unicodedata.normalize("NFKC", ch) if _kept(c))
    return kept


def _fold_long(raw: str, spans: list[tuple[int, int, str | None]]):
    """``NormalizedText.of`` of a long text as ``(norm, raw_index, raw_end)`` by array operations
    over its character codes (None for a text with characters beyond the BMP: the walk does those)."""
    try:
        codes = np.frombuffer(raw.encode("utf-32-le"), dtype=np.uint32)
    except UnicodeEncodeError:  # a lone surrogate
        return None
    if not len(codes) or int(codes.max()) > 0xFFFF:
        return None
    out = _FOLD_CODES[codes]
    unseen = out == _UNSEEN
    if unseen.any():
        for c in np.unique(codes[unseen]).tolist():
            kept = _fold(chr(c))
            _FOLD_CODES[c] = ord(kept) if len(kept) == 1 else _SEVERAL if kept else 0
        out = _FOLD_CODES[codes]
    ends = {}
    for a, b, letter in spans:
        out[a:b] = 0
        if letter:
            out[a], ends[a] = ord(letter), b
    index = np.flatnonzero(out)
    chars = out[index]
    several = chars == _SEVERAL
    if several.any():  # "ﬁ" -> "fi", "½" -> "12": one entry per character of the fold
        at = index[several]
        folds = [_fold(raw[i]) for i in at.tolist()]
        index = np.concatenate([index[~several], np.repeat(at, [len(f) for f in folds])])
        chars = np.concatenate([chars[~several], np.array([ord(c) for f in folds for c in f], dtype=np.uint32)])
        order = np.argsort(index, kind="stable")
        index, chars = index[order], chars[order]
    end = index + 1
    if ends:
        end[np.searchsorted(index, list(ends))] = list(ends.values())
    # array('q') from the bytes: a copy, where a list would make ten thousand int objects
    return (chars.tobytes().decode("utf-32-le"), array("q", index.astype(np.int64).tobytes()),
            array("q", end.astype(np.int64).tobytes()))


@functools.lru_cache(maxsize=4096)
def _norm(text: str) -> str:
    """The normalised characters of a short text (a word and its learned form), remembered."""
    return NormalizedText.of(text).norm
