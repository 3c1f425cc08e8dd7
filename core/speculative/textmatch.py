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

Learning the output's notation, worked example: draft ``"with 8 wt%TiO2 and 2 wt%TiO2 powder"``,
output so far ``"with $8 \\mathrm{wt} \\% \\mathrm{TiO}_{2}$ and"``. Output and draft agree on the
normalised ``"with8wtTiO2and"``; cut at the draft's spaces, the draft word ``wt%TiO2`` reads
``\\mathrm{wt} \\% \\mathrm{TiO}_{2}$`` in the output (from after the output's last space before
``w`` to its first space after ``2``), and ``8`` reads ``$8``, which also teaches every number of that
shape (``2`` -> ``$2``). The rendered draft ``"... and $2 \\mathrm{wt} \\% \\mathrm{TiO}_{2}$ powder"``
is then proposed beside the raw one, and the next formula is accepted in one pass.

Misreadings, worked example: an OCR reads a blackletter ``k`` as ``t``, draft ``"die Obrigteit
zu Carrow ... der Obrigteit."``. Where the output writes ``"die Obrigk"``, no draft holds its
tail; read as a misreading of the draft's ``t`` (``_past_misreading``) it goes on with ``"eit zu
Carrow"`` at once. Once output and draft agree again past the word, the two line up letter for
letter and ``Obrigteit`` -> ``Obrigkeit`` is learned (``Notation.misread``): the later ``der
Obrigteit.`` is proposed as ``der Obrigkeit.`` beside the raw draft.

Letters a page keeps misreading: each misread word learned also counts its letter pairs
(``Notation.confusions``: ``t`` -> ``k`` in ``Obrigteit``, ``Volte``), against the words the output
wrote as drafted (``confirmed``). Once a letter is put right in two words or more, and in a fifth of
the written words that hold it, proposals also branch at that letter in words not seen yet
(``Notation.guesses``, ``TextMatcher._guessed``): the draft's ``am Martt`` (``Markt`` misread) is
proposed as read and with one ``t`` read ``k`` at a time, ``am Markt`` among them, in one tree: a
pass goes on past a first misreading that the page's habit predicts.
"""

from __future__ import annotations

import bisect
import functools
import re
import unicodedata
from array import array
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from rapidfuzz.distance import Hamming, Levenshtein

from core.speculative.latex import LETTER_OF_COMMAND, has_math_symbol, math_symbols, to_latex
from core.speculative.mathmode import inside_math
from core.tuning import (MISREAD_CHARS, MISREAD_GUESS_BRANCHES, MISREAD_GUESS_RATE, MISREAD_GUESS_SUPPORT,
                         MISREAD_LEARN_DRAFTS, MISREAD_SPACING, TEXT_MAX_CHARS, TEXT_MAX_HITS, TEXT_MIN_CHARS)


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


#: What lies between two kept characters of a raw text, markup included, as ``_learn`` records it:
#: ``%</td><td>`` is one separator (the tag letters are not content), not ``%</``, ``>``, ``<``, ``>``.
_SEPARATOR_RUN = re.compile(r"(?:" + _MARKUP.pattern + r"|[\W_])+")
_DIGITS = re.compile(r"\d+")
#: A word as punctuation around one run of letters and digits.
_LETTER_RUN = re.compile(r"(\W*)(\w+)(\W*)")
_RUN = re.compile(r"\w+")
_LINE_BREAK = re.compile(r"[ \t]*\n[ \t]*")
#: A separator that ends in a line's opening mark, written before its space: ``"\n\n###"``,
#: ``"\n  -"`` (the drafter put no mark there, or another level of it).
_OPEN_MARK = re.compile(r"\n[ \t]*(?:#{1,6}|[-*+•])$")


def _shape(separator: str) -> str:
    """A separator's key among the learned rewrites: a line break with the indentation around it
    is one line break. A listing's lines start at several indents; where the model joins the lines
    (``"'\\n   END"`` -> ``"' END"``) one rewrite learned at one indent then serves them all."""
    return _LINE_BREAK.sub("\n", separator) if "\n" in separator else separator


class Notation:
    """How the output writes the drafts' words, learned as it goes (see ``TextMatcher``).

    ``words``: draft word -> the output's form (``wt%TiO2`` -> ``\\mathrm{wt} \\% \\mathrm{TiO}_{2}$``).
    ``misread``: a draft's run of letters the output wrote with a letter or two put right, the same
    length (``Obrigteit`` -> ``Obrigkeit``), wherever it stands between punctuation.
    ``confusions``: per pair of a draft's letter and the output's in its place (``t`` -> ``k``), the
    misread runs of letters that showed it; with the runs the output confirmed as the draft has them
    (``confirmed``), how often a draft's letter is misread on this page (``guesses``).
    ``literal``: the math symbols the output writes as they are (``±`` in ``68.3 ± 19.7``), which are
    then not proposed as LaTeX commands inside formulas (``core.speculative.latex``).
    ``shapes``: for words with digits, the word with its digit runs as ``#`` -> what the output put
    around such a word (``700`` in ``$700 \\mathrm{MPa}$`` teaches ``#`` -> ``("$", "")``, which
    ``30`` then gets too). The last observation wins, so a form the output stops using is forgotten.
    One instance may serve every matcher of a page: a Stage 1 row that meets a unit first teaches
    the page row how it is written. ``version`` counts the changes of the rules; ``changes_since``
    says which words they touched, so a matcher re-renders only the drafts that hold one.
    """

    def __init__(self):
        self.words: dict[str, str] = {}
        self.misread: dict[str, str] = {}  # a draft's run of letters -> the output's (same length)
        self.shapes: dict[str, tuple[str, str]] = {}
        self.literal: set[str] = set()  # math symbols the output writes as they are, not as LaTeX
        self.confusions: dict[tuple[str, str], set[str]] = {}
        self.confirmed: set[str] = set()  # runs of letters the output wrote as the draft has them
        self._confirmed_with: dict[str, int] = {}  # letter -> confirmed runs holding it
        self._guessable: dict[str, tuple[str, float]] | None = None  # ``_guess_table``
        # The page's OCR second readings (``core.drafters.second_readings``): word -> [[index in the
        # word, letter, probability], ...]; set by the page (``PageJob.page_drafts``).
        self.second_readings: dict[str, list] = {}
        self._changes: list[str | None] = []  # per change: the word, or None for a digit shape
        self._pattern: re.Pattern | None = None  # the words that may render (``render_text``)
        self._misread_pattern: re.Pattern | None = None  # the misread runs of letters
        self._pattern_version = -1

    @property
    def version(self) -> int:
        return len(self._changes)

    def changes_since(self, version: int) -> list[str | None]:
        return self._changes[version:]

    def __bool__(self) -> bool:
        return bool(self.words or self.shapes or self.misread)

    def learn(self, word: str, form: str) -> None:
        if form != word and _norm(form) != _norm(word):
            self.learn_misreading(word, form)
            return  # a form keeps the word's letters and digits
        if form == word:
            self.learn_misreading(word, word)
        if self._set(self.words, word, None if form == word else form):
            self._changes.append(word)
        if _DIGITS.search(word):
            at = form.find(word)
            if form == word or (at >= 0 and form.count(word) == 1):
                template = None if form == word else (form[:at], form[at + len(word):])
                if self._set(self.shapes, _DIGITS.sub("#", word), template):
                    self._changes.append(None)

    def learn_misreading(self, word: str, form: str) -> None:
        """The output wrote the draft's ``word`` as ``form``, its letters one or two apart (an OCR's
        ``Obrigteit.`` for ``Obrigkeit.``): the run of letters is learned, without the punctuation
        around it, so that ``Obrigteit`` is put right wherever it stands. ``form == word`` forgets."""
        w, f = _LETTER_RUN.fullmatch(word), _LETTER_RUN.fullmatch(form)
        if not w or not f or w[1] != f[1] or w[3] != f[3]:
            return
        core, written = w[2], f[2]
        if written == core:
            self._confirm(core)
        elif not _same_stream(_norm(core), _norm(written)):
            return
        elif len(core) == len(written):
            for a, b in zip(core, written):
                if a != b and (a.isalpha() or b.isalpha()):  # one number for another is no misreading
                    self.confusions.setdefault((a, b), set()).add(core)
                    self._guessable = None
        if self._set(self.misread, core, None if written == core else written):
            self._changes.append(core)

    def _confirm(self, run: str) -> None:
        if run in self.confirmed or not run.isalpha():
            return
        self.confirmed.add(run)
        for ch in set(run):
            self._confirmed_with[ch] = self._confirmed_with.get(ch, 0) + 1
        if self.confusions:
            self._guessable = None

    def _guess_table(self) -> dict[str, tuple[str, float]]:
        """Per draft letter that this page has misread in ``MISREAD_GUESS_SUPPORT`` runs or more:
        the letter the output most often wrote for it, and the share of the letter's runs the
        output put right (misread runs over those and the confirmed runs that hold the letter)."""
        if self._guessable is None:
            table: dict[str, tuple[str, float]] = {}
            for (a, b), runs in self.confusions.items():
                if len(runs) < MISREAD_GUESS_SUPPORT:
                    continue
                rate = len(runs) / (len(runs) + self._confirmed_with.get(a, 0))
                if rate >= MISREAD_GUESS_RATE and rate > table.get(a, ("", 0.0))[1]:
                    table[a] = (b, rate)
            self._guessable = table
        return self._guessable

    def guesses(self, raw: str, start: int, stop: int) -> list[tuple[int, str, float]]:
        """Letters of ``raw[start:stop]`` the output may write otherwise, in order, as ``(index,
        that letter, how likely)``: those the page's OCR has often misread (``_guess_table``: how
        often the output put them right), and those it read a second way (``second_readings``:
        the second reading's probability, or the page's rate where it has put the letter right
        that way before, whichever is higher), at least ``MISREAD_GUESS_RATE``. Not in a run of
        letters the output has already written (confirmed, or learned misread and put right by
        the rendering)."""
        table, second = self._guess_table(), self.second_readings
        if not table and not second:
            return []
        found: dict[int, tuple[int, str, float]] = {}
        written = set(self.misread.values())

        def unseen(run: str) -> bool:
            return run not in self.confirmed and run not in self.misread and run not in written

        if table:
            for m in re.compile("[" + re.escape("".join(table)) + "]").finditer(raw, start, stop):
                i = m.start()
                a, b = i, i + 1
                while a > 0 and raw[a - 1].isalnum():
                    a -= 1
                while b < len(raw) and raw[b].isalnum():
                    b += 1
                if unseen(raw[a:b]):
                    found[i] = (i, *table[raw[i]])
        if second:
            for m in _RUN.finditer(raw, start, stop):
                readings = second.get(m.group(0))
                if not readings or not unseen(m.group(0)):
                    continue
                for at, alt, p in readings:
                    i = m.start() + at
                    learned = table.get(raw[i]) if i < len(raw) else None
                    p = max(p, learned[1]) if learned and learned[0] == alt else p
                    if p >= MISREAD_GUESS_RATE and p > found.get(i, (0, "", 0.0))[2]:
                        found[i] = (i, alt, p)
        return [found[i] for i in sorted(found)]

    def render_text(self, text: str) -> str:
        """``text`` with every word (what lies between spaces) rendered, and every misread run of
        letters put right. Only the words that may render are visited: the learned ones, and those
        with digits where digit shapes are known."""
        if not self:
            return text
        if self._pattern_version != self.version:
            words = "|".join(re.escape(w) for w in sorted(self.words, key=len, reverse=True))
            digits = r"\S*\d\S*" if self.shapes else ""
            either = "|".join(a for a in (words, digits) if a)
            self._pattern = re.compile(r"(?<!\S)(?:" + either + r")(?!\S)") if either else None
            misread = "|".join(re.escape(w) for w in sorted(self.misread, key=len, reverse=True))
            self._misread_pattern = re.compile(r"(?<!\w)(?:" + misread + r")(?!\w)") if misread else None
            self._pattern_version = self.version
        if self._misread_pattern is not None:
            text = self._misread_pattern.sub(lambda m: self.misread[m.group(0)], text)
        if self._pattern is not None:
            text = self._pattern.sub(lambda m: self.render(m.group(0)), text)
        return text

    def render(self, word: str) -> str:
        form = self.words.get(word)
        if form is not None:
            return form
        if self.shapes and _DIGITS.search(word):
            template = self.shapes.get(_DIGITS.sub("#", word))
            if template:
                return template[0] + word + template[1]
        return word

    @staticmethod
    def _set(rules: dict, key: str, value) -> bool:
        if rules.get(key) == value:
            return False
        if value is None:
            del rules[key]
        else:
            rules[key] = value
        return True


class TextMatcher:
    """Finds continuations of an output text inside raw text drafts (see module docstring).

    It also learns how the output writes what the drafts say, from the stretch where the output and
    the draft agree, and proposes later continuations that way too:

    * separators: where the draft writes ``" ± "`` or ``"</td><td>"`` between two characters and the
      output ``" $ \\pm $ "`` or ``"</td>\\n <td>"`` (``rewrites``);
    * words: where the draft writes ``wt%TiO2`` and the output ``\\mathrm{wt} \\% \\mathrm{TiO}_{2}$``
      (``words``; a word is what the draft has between spaces). Each draft is then also kept
      *rendered*, its words replaced by the output's forms, and a hit proposes the rendered
      continuation beside the raw one. A rendering keeps the word's letters and digits, so both
      texts share one normalised stream and one hit position.
    """

    def __init__(self, drafts: list[str], min_chars: int = TEXT_MIN_CHARS, max_chars: int = TEXT_MAX_CHARS,
                 max_hits: int = TEXT_MAX_HITS, notation: Notation | None = None):
        self.drafts = [NormalizedText.of(d) for d in drafts]
        self.min_chars, self.max_chars, self.max_hits = min_chars, max_chars, max_hits
        self.rewrites: dict[str, str] = {}  # draft separator -> the output's, where they differ
        # The output wrote the draft's last line break as a space: it joins a listing's lines, so a
        # break with no rewrite of its own is proposed as a space (back to breaks when it writes one).
        self.joins_lines = False
        self.notation = notation if notation is not None else Notation()
        # Rendered with what the notation already knows (a document's earlier pages taught it);
        # later changes re-render only the drafts they touch (``_render``).
        self._rendered: list[NormalizedText | None] = [self._rendering(d) for d in self.drafts]
        self._rendered_version = self.notation.version
        self._every: _Streams | None = None  # ``_streams``

    @property
    def words(self) -> dict[str, str]:
        return self.notation.words

    def __bool__(self) -> bool:
        return any(d.norm for d in self.drafts)

    def set_text(self, d: int, text: str) -> None:
        """Replace draft ``d``'s text."""
        self.drafts[d] = NormalizedText.of(text)
        self._rendered[d] = self._rendering(self.drafts[d])
        self._every = None

    def continuations(self, output_tail: str, max_chars_out: int = 400,
                      normalized: NormalizedText | None = None) -> list[tuple[str, int, int]]:
        """Raw draft texts that plausibly follow ``output_tail`` (``normalized``: its
        ``NormalizedText``, where the caller has it already).

        Returns up to ``max_hits`` ``(text, draft_id, norm_end)``, the longest-context hits first;
        the window of normalised characters grows from ``min_chars`` until the hits agree.
        """
        out_text = normalized if normalized is not None else NormalizedText.of(output_tail)
        tail = out_text.norm
        min_chars = min_window(tail, self.min_chars)
        if len(tail) < min_chars:
            return []
        streams = self._streams()
        sep = output_tail[out_text.raw_end[-1]:]
        best: list[tuple[int, int]] = []
        found: dict[int, tuple[int, int, str]] = {}  # per draft: its first hit's end, window, stream
        n = min_chars
        while n <= min(self.max_chars, len(tail)):
            key = tail[-n:]
            hits = []
            for i, end in streams.occurrences(key):
                if len(hits) >= 4 * self.max_hits:
                    break
                hit = (streams.drafts[i], end)
                if hit not in hits:
                    hits.append(hit)
                    if hit[0] not in found:
                        found[hit[0]] = (end, n, streams.norms[i])
            if not hits:
                break
            best = hits
            if len({self._raw_after(self.drafts[d], e, sep, 32) for d, e in hits}) <= 1:
                break
            n += 4
        # Learn from the best hit, and from the other drafts the tail is in (a few): where a Stage 1
        # reading holds the tail, the raw OCR draft beside it is what shows the misread words.
        if best:
            first = best[0][0]
            self._learn(out_text, first, best[0][1], *found[first][1:])
            for d in [d for d in found if d != first][:MISREAD_LEARN_DRAFTS]:
                self._learn_misreadings(out_text, d, *found[d])
        if self._rendered_version != self.notation.version:
            self._render()
        return self._continuing(best, output_tail, sep, max_chars_out)

    def continuations_past_misreading(self, output_tail: str, max_chars_out: int = 400,
                                      normalized: NormalizedText | None = None,
                                      whole: bool = False) -> list[tuple[str, int, int]]:
        """As ``continuations``, where no draft holds the output's tail: the drafts' texts after
        the output's last characters read as a misreading of a draft's (``_past_misreading``).
        Not inside a formula, whose LaTeX is no misreading of the draft's symbols. ``whole``: the
        tail is the whole output, which may then be a misreading of a draft's opening
        (``_misread_opening``)."""
        out_text = normalized if normalized is not None else NormalizedText.of(output_tail)
        tail = out_text.norm
        if not tail or _in_formula(output_tail):
            return []
        best = self._misread_opening(tail) if whole else []
        best = best or self._past_misreading(tail, min_window(tail, self.min_chars))
        return self._continuing(best, output_tail, output_tail[out_text.raw_end[-1]:], max_chars_out)

    def _misread_opening(self, tail: str) -> list[tuple[int, int]]:
        """Where the whole output so far is a draft's first characters but for a misread one or
        two (a title's ``Von`` that the OCR read ``Bon``; no six characters before it to find it
        by), the positions past them in each such draft. At least three characters, at most
        ``MISREAD_CHARS`` + six, within ``max(1, k // 4)`` edits (``k`` +- 1: a letter dropped or
        added), the last one agreeing: an output that has just left the draft is no misreading of
        it."""
        k = len(tail)
        if not 3 <= k <= MISREAD_CHARS + self.min_chars:
            return []
        allowed, hits = max(1, k // 4), []
        streams = self._streams()
        for d, norm in zip(streams.drafts, streams.norms):
            for j in (k, k + 1, k - 1):
                if norm[j - 1:j] == tail[-1] and Levenshtein.distance(tail, norm[:j], score_cutoff=allowed) <= allowed:
                    if (d, j) not in hits:
                        hits.append((d, j))
                    break
            if len(hits) >= self.max_hits:
                break
        return hits

    def _continuing(self, best: list[tuple[int, int]], output_tail: str, sep: str,
                    max_chars_out: int) -> list[tuple[str, int, int]]:
        """The texts after draft positions ``best``, rendered ones first, in the output's form."""
        # Inside a formula, the draft's Unicode symbols are also proposed as LaTeX commands (first),
        # except those the output has itself written as they are (``68.3 ± 19.7`` in a table).
        self.notation.literal.update(math_symbols(output_tail))
        in_formula = _in_formula(output_tail)
        out, seen = [], set()
        for d, end in best:
            for text in (self._rendered[d], self.drafts[d]):
                cont = self._raw_after(text, end, sep, max_chars_out) if text is not None else ""
                if not cont:
                    continue
                forms = [cont]
                if in_formula and has_math_symbol(cont):
                    forms.insert(0, to_latex(cont, keep=self.notation.literal))
                elif not out:
                    forms = self._guessed(text, end, sep, max_chars_out, cont)
                for form in forms:
                    if form not in seen:
                        seen.add(form)
                        out.append((form, d, end))
            if len(out) >= self.max_hits:
                break
        return out[:self.max_hits]

    def _guessed(self, text: NormalizedText, end: int, sep: str, max_chars_out: int, cont: str) -> list[str]:
        """``cont`` (``text`` after ``end``) as the output may write it where this page's OCR has
        misread letters before (``Notation.guesses``): first with each such letter as the output
        more often wrote it, then ``cont`` itself, then branches at the first
        ``MISREAD_GUESS_BRANCHES`` of them, each the first reading with that one letter the other
        way. Verified as one tree, a proposal passes one misread letter more than it would.

        Worked example: the output has put ``B`` right as ``V`` in 3 of the 4 runs holding it
        (``Bon``, ``Berordnung``, ``Bersammlung``; not ``Buerger``), ``t`` as ``k`` in 2 of 10;
        ``"die Berwaltung mit"`` is proposed as ``"die Verwaltung mit"``, then as it is, then
        with ``t`` read ``k`` at ``Verwalkung`` and in ``mik``."""
        if end >= len(text.raw_index):
            return [cont]
        nxt = text.raw_index[end]
        guesses = self.notation.guesses(text.raw, nxt, nxt + max_chars_out)
        if not guesses:
            return [cont]
        window = text.raw[nxt:nxt + max_chars_out]
        likely = list(window)
        for i, alt, rate in guesses:
            if rate > 0.5:
                likely[i - nxt] = alt
        branches = []
        for i, alt, rate in guesses[:MISREAD_GUESS_BRANCHES]:
            other = likely.copy()
            other[i - nxt] = window[i - nxt] if rate > 0.5 else alt
            branches.append(other)
        gap = self._gap_after(text, end, sep)
        forms = [(gap + self._rewrite("".join(chars)))[:max_chars_out] for chars in [likely, *branches]]
        return [forms[0], cont, *forms[1:]]

    def _past_misreading(self, tail: str, min_chars: int) -> list[tuple[int, int]]:
        """Where the output's last ``k`` characters differ from a draft by a misread character or
        two, the draft positions just past them: the output and a draft agree on ``min_chars``
        characters before those ``k``, and the ``k`` are within ``max(1, k // 4)`` edits of the
        draft's next ``k`` (or ``k`` +- 1: a letter the OCR dropped or added). The smallest such
        ``k`` wins.

        Worked example: draft ``"der Obrigteit zu"`` (an OCR's ``t`` for a blackletter ``k``),
        output ``"... der Obrigk"``: no draft holds ``"Obrigk"``; with ``k`` = 1, ``"rObrig"`` ends
        before draft ``t``, and ``k`` -> ``t`` is one edit, so ``"eit zu"`` is proposed at once, not
        after six more characters of the output have found the draft again."""
        streams = self._streams()
        for k in range(1, MISREAD_CHARS + 1):
            if len(tail) < k + min_chars:
                break
            key, mine, allowed = tail[-(k + min_chars):-k], tail[-k:], max(1, k // 4)
            hits: list[tuple[int, int]] = []
            for looked, (i, end) in enumerate(streams.occurrences(key)):
                if len(hits) >= self.max_hits or looked >= 4 * self.max_hits:
                    break  # a key a repetitive page holds hundreds of times is no place to look
                norm = streams.norms[i]
                for j in (k, k + 1, k - 1):
                    if Levenshtein.distance(mine, norm[end:end + j], score_cutoff=allowed) <= allowed:
                        if (streams.drafts[i], end + j) not in hits:
                            hits.append((streams.drafts[i], end + j))
                        break
            if hits:
                return hits
        return []

    def _streams(self) -> "_Streams":
        """The normalised streams the output's tail is looked up in, the renderings brought up to
        the notation first, kept until a draft or a rendering changes: every draft's, then each
        rendering's that differs from its draft's (where a rendering puts a misread word right, the
        output's tail is found in it; it has the draft's length, so the draft's positions)."""
        if self._rendered_version != self.notation.version:
            self._render()
        if self._every is None:
            drafts = list(range(len(self.drafts)))
            norms = [text.norm for text in self.drafts]
            for d, r in enumerate(self._rendered):
                if r is not None and r.norm != norms[d]:
                    drafts.append(d)
                    norms.append(r.norm)
            self._every = _Streams.of(drafts, norms)
        return self._every

    def _learn(self, out: NormalizedText, d: int, norm_end: int, n: int, found_in: str) -> None:
        """Learn from the matched stretch: the ``n`` matched characters, extended back as far as
        output and draft keep agreeing (``found_in``: the draft's stream the hit is in, raw or
        rendered). Records separator and word rewrites (draft -> output)."""
        draft = self.drafts[d]
        n = _common_suffix(out.norm, found_in[:norm_end], n)
        o0, d0 = len(out.norm) - n, norm_end - n
        self._learn_separators(out, o0, draft, d0, n)
        m = _aligned_before(out.norm, o0, found_in, d0)
        self._learn_words(out, o0 - m, draft, d0 - m, n + m, self.notation.learn)

    def _learn_misreadings(self, out: NormalizedText, d: int, norm_end: int, n: int, found_in: str) -> None:
        """``_learn`` from another draft that holds the output's tail, misread letters only: where
        a Stage 1 reading holds the tail too, the raw OCR draft beside it is what shows them (its
        separators and word forms are the best hit's business)."""
        n = _common_suffix(out.norm, found_in[:norm_end], n)
        if n >= min(len(out.norm), norm_end):
            return  # it agrees as far back as the tail goes: no letter of it reads otherwise
        o0, d0 = len(out.norm) - n, norm_end - n
        m = _aligned_before(out.norm, o0, found_in, d0)
        if m:
            self._learn_words(out, o0 - m, self.drafts[d], d0 - m, n + m, self._learn_misread_word)

    def _learn_misread_word(self, word: str, form: str) -> None:
        """A word of another draft than the best hit's: a run of digits there may be another number
        in another place (an equation's ``(2)`` where the output cites ``(8)``), not a misreading."""
        if any(c.isalpha() for c in word):
            self.notation.learn_misreading(word, form)

    def _learn_separators(self, out: NormalizedText, o0: int, draft: NormalizedText, d0: int, n: int) -> None:
        """The separators the output writes otherwise between the stretch's characters."""
        norm_end = d0 + n
        oi, oe = out.raw_index[o0:], out.raw_end[o0:]
        di, de = draft.raw_index[d0:norm_end], draft.raw_end[d0:norm_end]
        # Only where both texts have something between two characters: never rewrite between
        # adjacent ones ("TiO2" vs "TiO}_{2"), nor inside one raw character NFKC made two of.
        apart = [k for k, a, b, c, e in zip(range(n - 1), oe, oi[1:], de, di[1:]) if a < b and c < e]
        for k in apart:
            mine, theirs = out.gap(o0 + k), draft.gap(d0 + k)
            if theirs.isspace() and ("$" in mine or "\\" in mine):
                continue  # " " -> " $\\mathrm{": a formula's edge, the words' business (``Notation``)
            if "\n" in theirs and "\n\n" not in theirs:
                self.joins_lines = "\n" not in mine
            if mine != theirs:
                self.rewrites[_shape(theirs)] = mine
            else:
                self.rewrites.pop(_shape(theirs), None)

    def _learn_words(self, out: NormalizedText, o0: int, draft: NormalizedText, d0: int, n: int, learn) -> None:
        """Words of the draft that lie inside the agreeing stretch (``n`` normalised characters from
        ``out``'s ``o0`` and ``draft``'s ``d0``), with a matched character on each side: the output's
        form is its text from the last space before the word's first character to the first space
        after its last one (``"of $\\mathrm{TiO}_{2}$ powder"``: ``TiO2`` -> ``$\\mathrm{TiO}_{2}$``)."""
        di, de = draft.raw_index[d0:d0 + n], draft.raw_end[d0:d0 + n]
        # spaced[j]: the draft has white space between the stretch's characters j and j + 1
        raw, space = draft.raw, _SPACE.search
        spaced = [e < s and space(raw, e, s) is not None for e, s in zip(de, di[1:])]
        # The stretch's first character starts a word too where it is the draft's first (after a
        # heading mark at most) and the output has a space before it: a title's first word, an
        # OCR's ``Bon`` for ``Von``.
        opening = out.raw[out.raw_end[o0 - 1] if o0 else 0:out.raw_index[o0]] if n else ""
        draft_before = raw[draft.raw_end[d0 - 1] if d0 else 0:di[0]] if n else ""
        k = 0 if n and not d0 and opening[-1:].isspace() and not draft_before.strip("# ") else 1
        while k < n - 1:
            a = k
            if a and not spaced[a - 1]:
                k += 1
                continue  # not the first character of a word
            b = a
            while b + 1 < n and di[b + 1] != di[b] and not spaced[b]:
                b += 1
            k = b + 1
            if b >= n - 1:
                break  # the word runs past the stretch: its end is not seen yet
            before, after = (out.gap(o0 + a - 1) if a else opening), out.gap(o0 + b)
            cut_b = max((i for i, c in enumerate(before) if c.isspace()), default=-1)
            cut_a = next((i for i, c in enumerate(after) if c.isspace()), -1)
            if cut_b < 0 or cut_a < 0:
                continue  # the output ran this word into a neighbour
            word = draft.raw[_word_start(draft.raw, di[a]):_word_end(draft.raw, di[b])]
            form = out.raw[out.raw_index[o0 + a]:out.raw_end[o0 + b]]
            learn(word, before[cut_b + 1:] + form + after[:cut_a])

    def _render(self) -> None:
        """Rebuild the rendered drafts the notation's latest changes touch: those holding a changed
        word, and for a changed digit shape those holding a digit (a superset: exact, and most
        drafts of a page are left alone when one unit's form is learned)."""
        changed = self.notation.changes_since(self._rendered_version)
        self._rendered_version = self.notation.version
        self._every = None
        words = [w for w in changed if w is not None]
        digits = len(words) < len(changed)
        for d, text in enumerate(self.drafts):
            if (digits and _DIGITS.search(text.raw)) or any(w in text.raw for w in words):
                self._rendered[d] = self._rendering(text)

    def _rendering(self, text: NormalizedText) -> NormalizedText | None:
        """``text`` with the learned word forms, or None where none applies."""
        if not self.notation:
            return None
        raw = self.notation.render_text(text.raw)
        return NormalizedText.of(raw) if raw != text.raw else None

    def _separator(self, gap: str) -> str:
        """The draft's separator ``gap`` as the output writes it (learned rewrites, joined lines)."""
        key = _shape(gap)
        if key in self.rewrites:
            return self.rewrites[key]
        if self.joins_lines and key.count("\n") == 1:
            return key.replace("\n", " ")  # the key holds no indentation around its break
        return gap

    def _rewrite(self, text: str) -> str:
        if not self.rewrites and not self.joins_lines:
            return text
        if "\n" not in text and not any(key in text for key in self.rewrites):
            return text  # no separator of it is one the output writes otherwise (keys are whole runs)
        return _SEPARATOR_RUN.sub(lambda m: self._separator(m.group(0)), text)

    def _raw_after(self, text: NormalizedText, norm_end: int, sep: str, limit: int) -> str:
        """``text`` after normalised position ``norm_end`` in the output's form (separators
        rewritten), starting where the output's own separator ``sep`` leaves off."""
        if norm_end >= len(text.raw_index):
            return ""
        nxt = text.raw_index[norm_end]
        return (self._gap_after(text, norm_end, sep) + self._rewrite(text.raw[nxt:nxt + limit]))[:limit]

    def _gap_after(self, text: NormalizedText, norm_end: int, sep: str) -> str:
        """What ``_raw_after`` proposes before the draft's next character: the rest of the draft's
        separator there, in the output's form."""
        gap = self._separator(text.gap(norm_end - 1))
        if sep:
            # the output began its separator: propose the rest of it; where it wrote something else
            # (``}$`` after a formula), the draft's space is still to come
            if gap.startswith(sep):
                gap = gap[len(sep):]
            elif _OPEN_MARK.search(sep):
                gap = " "  # the output began a line with a heading mark or a bullet: its space comes next
            else:
                gap = "" if any(c.isspace() for c in sep) else gap[len(gap.rstrip()):]
        return gap


_SPACE = re.compile(r"\s")


def _common_suffix(a: str, b: str, known: int = 0) -> int:
    """Length of the longest common suffix of ``a`` and ``b``, given that it is at least ``known``
    (a binary search over slice comparisons: no loop per character)."""
    lo, hi = known, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[len(a) - mid:] == b[len(b) - mid:]:
            lo = mid
        else:
            hi = mid - 1
    return lo


@dataclass
class _Streams:
    """Normalised streams in one ``text``, ``\\0`` between them (no stream holds one), so that one
    lookup finds a key in all of them: stream ``i`` (``norms[i]``, of draft ``drafts[i]``) starts
    at ``starts[i]``."""

    text: str
    starts: list[int]
    drafts: list[int]
    norms: list[str]

    @classmethod
    def of(cls, drafts: list[int], norms: list[str]) -> "_Streams":
        starts, at = [], 0
        for norm in norms:
            starts.append(at)
            at += len(norm) + 1
        return cls("\0".join(norms), starts, drafts, norms)

    def occurrences(self, key: str):
        """``(stream, position just past key in it)`` of every place ``key`` occurs, in order."""
        start = self.text.find(key)
        while start != -1:
            i = bisect.bisect_right(self.starts, start) - 1
            yield i, start - self.starts[i] + len(key)
            start = self.text.find(key, start + 1)


def _same_stream(word: str, form: str) -> bool:
    """``form`` is ``word``'s normalised characters, or them with a misread character or two put
    right (``Obrigteit`` -> ``Obrigkeit``, ``Bolte`` -> ``Volke``): the same length, so a draft
    rendered with it keeps its positions, and at most one character in three apart."""
    if len(word) != len(form):
        return False
    return Hamming.distance(word, form) <= max(1, (len(word) + 2) // 3)


def _aligned_before(out: str, o0: int, draft: str, d0: int) -> int:
    """Characters before ``out[o0:]`` and ``draft[d0:]`` (where they agree; the characters just
    before differ) that still line up one for one: single differing characters (misread letters)
    at least ``MISREAD_SPACING`` apart, back to ``TEXT_MAX_CHARS``, ending on an agreeing run of
    ``MISREAD_SPACING``."""
    limit = min(o0, d0, TEXT_MAX_CHARS)
    i, good = 1, 0  # ``i``: characters before the stretch looked at, the differing one included
    while i < limit:
        run = _common_suffix(out[o0 - limit:o0 - i], draft[d0 - limit:d0 - i])
        if run < MISREAD_SPACING - 1:
            break
        if run >= MISREAD_SPACING:
            good = i + run
        i += run + 1
    if o0 - good == 1 and d0 - good == 1:
        return good + 1  # one differing character before, at the start of both: a misread first letter
    return good


@functools.lru_cache(maxsize=4096)
def _norm(text: str) -> str:
    """The normalised characters of a short text (a word and its learned form), remembered."""
    return NormalizedText.of(text).norm


def min_window(norm_tail: str, min_chars: int) -> int:
    """Normalised characters a lookup needs at the end of ``norm_tail``: ``min_chars``, halved where
    the tail ends in CJK (an ideograph says as much as a short word, and finds a draft as surely)."""
    half = max(2, min_chars // 2)
    if len(norm_tail) >= half and all(is_cjk(c) for c in norm_tail[-half:]):
        return half
    return min_chars


def is_cjk(ch: str) -> bool:
    """A CJK ideograph, kana or hangul syllable."""
    o = ord(ch)
    return 0x3040 <= o <= 0x30FF or 0x3400 <= o <= 0x9FFF or 0xAC00 <= o <= 0xD7AF or 0xF900 <= o <= 0xFAFF \
        or 0x20000 <= o <= 0x2FA1F


def _in_formula(tail: str) -> bool:
    """Is the output, by its last characters, writing a formula? The tail may begin inside a long
    display formula, past its opening delimiter: a LaTeX command near its end says so too."""
    return inside_math(tail) or _LATEX_COMMAND.search(tail[-24:]) is not None


_LATEX_COMMAND = re.compile(r"\\[A-Za-z]+|[_^]\{")


def _word_start(raw: str, i: int) -> int:
    while i > 0 and not raw[i - 1].isspace():
        i -= 1
    return i


def _word_end(raw: str, i: int) -> int:
    while i < len(raw) and not raw[i].isspace():
        i += 1
    return i
