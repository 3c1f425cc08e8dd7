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
import re
from dataclasses import dataclass

from rapidfuzz.distance import Levenshtein

from core.speculative.latex import has_math_symbol, math_symbols, to_latex
from core.speculative.mathmode import inline_closer, inside_math
from core.speculative.normalized import _MARKUP, NormalizedText
from core.speculative.notation import _DIGITS, Notation
from core.tuning import (MISREAD_CHARS, MISREAD_GUESS_BRANCHES, MISREAD_LEARN_DRAFTS, MISREAD_SPACING,
                         TEXT_MAX_CHARS, TEXT_MAX_HITS, TEXT_MIN_CHARS)

__all__ = ["NormalizedText", "Notation", "TextMatcher", "is_cjk", "min_window"]


#: What lies between two kept characters of a raw text, markup included, as ``_learn`` records it:
#: ``%</td><td>`` is one separator (the tag letters are not content), not ``%</``, ``>``, ``<``, ``>``.
_SEPARATOR_RUN = re.compile(r"(?:" + _MARKUP.pattern + r"|[\W_])+")
_SEPARATOR_SPLIT = re.compile("(" + _SEPARATOR_RUN.pattern + ")")
_LINE_BREAK = re.compile(r"[ \t]*\n[ \t]*")
#: A separator that ends in a line's opening mark, written before its space: ``"\n\n###"``,
#: ``"\n  -"`` (the drafter put no mark there, or another level of it).
_OPEN_MARK = re.compile(r"\n[ \t]*(?:#{1,6}|[-*+•])$")


def _shape(separator: str) -> str:
    """A separator's key among the learned rewrites: a line break with the indentation around it
    is one line break. A listing's lines start at several indents; where the model joins the lines
    (``"'\\n   END"`` -> ``"' END"``) one rewrite learned at one indent then serves them all."""
    return _LINE_BREAK.sub("\n", separator) if "\n" in separator else separator


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
        # draft separator -> as the output writes it, while ``rewrites`` and ``joins_lines`` stay
        # as they are (``_learn_separators`` clears it when it changes either)
        self._separators: dict[str, str] = {}
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
        found_in = ""  # the stream the best hit is in
        found: dict[int, tuple[int, int, str]] = {}  # per draft: its first hit's end, window, stream
        window = n = min_chars
        while n <= min(self.max_chars, len(tail)):
            key = tail[-n:]
            hits = []
            for i, end in streams.occurrences(key):
                if len(hits) >= 4 * self.max_hits:
                    break
                hit = (streams.drafts[i], end)
                if hit not in hits:
                    hits.append(hit)
                    if len(hits) == 1:
                        found_in = streams.norms[i]
                    if hit[0] not in found:
                        found[hit[0]] = (end, n, streams.norms[i])
            if not hits:
                break
            best, window = hits, n
            if self._agree(hits, sep):
                break
            n += 4
        # Learn from the best hit, and from the other drafts the tail is in (a few): where a Stage 1
        # reading holds the tail, the raw OCR draft beside it is what shows the misread words.
        if best:
            first = best[0][0]
            self._learn(out_text, *best[0], window, found_in)
            for d in [d for d in found if d != first][:MISREAD_LEARN_DRAFTS]:
                self._learn_misreadings(out_text, d, *found[d])
        if self._rendered_version != self.notation.version:
            self._render()
        return self._continuing(best, output_tail, sep, max_chars_out)

    def _agree(self, hits: list[tuple[int, int]], sep: str) -> bool:
        """Whether every hit goes on with the same text (its next 32 characters in the output's
        form); the first that differs ends the comparison."""
        first = None
        for d, end in hits:
            after = self._raw_after(self.drafts[d], end, sep, 32)
            if first is None:
                first = after
            elif after != first:
                return False
        return True

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
        if not best:
            window = min_window(tail, self.min_chars)
            best, k, before = self._past_misreading(tail, window)
            if before is not None:
                # The output agreed with the draft up to its last k characters: learn from that
                # stretch as ``continuations`` would have, had a lookup ended there (where every
                # pass ends on a misread letter, none does).
                d, end, stream = before
                agreed = NormalizedText.of(output_tail[:out_text.raw_index[len(tail) - k]])
                self._learn(agreed, d, end, window, stream)
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
            j = _misread_as(tail, norm, 0, allowed, ends_agreeing=True)
            if j is not None and (d, j) not in hits:
                hits.append((d, j))
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
        closer = inline_closer(output_tail) if in_formula else None
        if closer is not None:
            opened = output_tail.rstrip().endswith(("\\(", "$"))  # nothing to close yet
            begun = _closer_begun(output_tail, closer)
            # just opened, the draft's next word goes on after a space where formulas are spaced inside
            lead = (" " if closer.startswith(" ") and not output_tail.endswith(" ") else "") if opened else None
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
                if closer is not None:
                    forms = _closed(forms, self._closing_cont(text, end, sep, begun, lead, max_chars_out), opened,
                                    closer[begun:])
                for form in forms:
                    if form not in seen:
                        seen.add(form)
                        out.append((form, d, end))
            if len(out) >= self.max_hits:
                break
        return out[:self.max_hits]

    def _closing_cont(self, text: NormalizedText, end: int, sep: str, begun: int, lead: str | None,
                      max_chars_out: int) -> str:
        """The draft's text after ``end`` as it goes on once the output's inline formula is
        closed: the output's separator, less the ``begun`` characters of the closing written
        (``" \\"``) or an opening just written, leaves the draft's own separator to come. After
        an opening just written, the draft's next word goes on after ``lead`` ("" or a space)."""
        sep = sep[:len(sep) - begun].rstrip()
        sep = sep[:-2] if sep.endswith("\\(") else sep[:-1] if sep.endswith("$") else sep
        cont = self._raw_after(text, end, sep.rstrip(), max_chars_out)
        return cont if lead is None else lead + cont.lstrip()

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

    def _past_misreading(self, tail: str, min_chars: int) -> tuple[list[tuple[int, int]], int, tuple | None]:
        """Where the output's last ``k`` characters differ from a draft by a misread character or
        two, the draft positions just past them: the output and a draft agree on ``min_chars``
        characters before those ``k``, and the ``k`` are within ``max(1, k // 4)`` edits of the
        draft's next ``k`` (or ``k`` +- 1: a letter the OCR dropped or added). The smallest such
        ``k`` wins.

        Worked example: draft ``"der Obrigteit zu"`` (an OCR's ``t`` for a blackletter ``k``),
        output ``"... der Obrigk"``: no draft holds ``"Obrigk"``; with ``k`` = 1, ``"rObrig"`` ends
        before draft ``t``, and ``k`` -> ``t`` is one edit, so ``"eit zu"`` is proposed at once, not
        after six more characters of the output have found the draft again.

        Returns the positions, ``k``, and the first hit's draft, end of the agreeing key and stream
        (None for no hit)."""
        streams = self._streams()
        for k in range(1, MISREAD_CHARS + 1):
            if len(tail) < k + min_chars:
                break
            key, mine, allowed = tail[-(k + min_chars):-k], tail[-k:], max(1, k // 4)
            hits: list[tuple[int, int]] = []
            first = None
            for looked, (i, end) in enumerate(streams.occurrences(key)):
                if len(hits) >= self.max_hits or looked >= 4 * self.max_hits:
                    break  # a key a repetitive page holds hundreds of times is no place to look
                j = _misread_as(mine, streams.norms[i], end, allowed)
                if j is not None and (streams.drafts[i], end + j) not in hits:
                    hits.append((streams.drafts[i], end + j))
                    first = first or (streams.drafts[i], end, streams.norms[i])
            if hits:
                return hits, k, first
        return [], 0, None

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
            if "\n" in theirs and "\n\n" not in theirs and self.joins_lines != ("\n" not in mine):
                self.joins_lines = "\n" not in mine
                self._separators.clear()
            key = _shape(theirs)
            if mine != theirs:
                if self.rewrites.get(key) != mine:
                    self.rewrites[key] = mine
                    self._separators.clear()
            elif key in self.rewrites:
                del self.rewrites[key]
                self._separators.clear()

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
            last, first = _LAST_SPACE.search(before), _SPACE.search(after)
            if last is None or first is None:
                continue  # the output ran this word into a neighbour
            cut_b, cut_a = last.start(), first.start()
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
        parts = _SEPARATOR_SPLIT.split(text)  # text, separator, text, ..., text
        known = self._separators
        for i in range(1, len(parts), 2):
            gap = parts[i]
            mine = known.get(gap)
            if mine is None:
                mine = known[gap] = self._separator(gap)
            parts[i] = mine
        return "".join(parts)

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
_LAST_SPACE = re.compile(r"\s(?=\S*\Z)")


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


def _misread_as(mine: str, norm: str, at: int, allowed: int, ends_agreeing: bool = False) -> int | None:
    """How many of ``norm``'s characters from ``at`` the output's ``mine`` may be a misreading of:
    ``len(mine)``, one more or one less (a letter the OCR dropped or added), within ``allowed``
    edits, the same length tried first; None where none is. ``ends_agreeing``: the last letters
    must agree."""
    k = len(mine)
    for j in (k, k + 1, k - 1):
        if ends_agreeing and norm[at + j - 1:at + j] != mine[-1:]:
            continue
        if Levenshtein.distance(mine, norm[at:at + j], score_cutoff=allowed) <= allowed:
            return j
    return None


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
    """Where the word around ``raw[i]`` starts: after the last white space before ``i`` (or 0).
    The last space or line break found by a search from the end, then only the stretch after it
    checked for other white space (``\\s`` is ``str.isspace``): a text without spaces (CJK) is one
    word, not walked a character at a time for every word learned in it."""
    last = max(raw.rfind(" ", 0, i), raw.rfind("\n", 0, i))
    if _SPACE.search(raw, last + 1, i) is None:
        return last + 1
    while i > 0 and not raw[i - 1].isspace():
        i -= 1
    return i


def _word_end(raw: str, i: int) -> int:
    """Where the word around ``raw[i]`` ends: at the first white space from ``i`` (or the end)."""
    space = _SPACE.search(raw, i)
    return space.start() if space is not None else len(raw)


#: A draft word that is prose, not a formula's symbols: three letters or more (a math function's
#: name aside), or CJK.
_PROSE_WORD = re.compile(r"[(\[]?(?!(?:sin|cos|tan|log|exp|max|min|lim|det|mod|sup|inf|arg|dim|ker)\b)"
                         r"[A-Za-z]{3,}[.,;:!?)\]]*|.*[\u3040-\u30ff\u3400-\u9fff].*")


def _closer_begun(output_tail: str, closer: str) -> int:
    """How many characters of ``closer`` the output has written already (``" \\"`` of ``" \\)"``)."""
    return next((k for k in range(len(closer) - 1, 0, -1) if output_tail.endswith(closer[:k])), 0)


def _closed(forms: list[str], cont: str, opened: bool, closer: str, words: int = 2, past: int = 24) -> list[str]:
    """``forms`` (a draft's continuations, the likeliest first) and ``cont`` (the draft's text
    after the output's) with the inline formula the output is in closed (``closer``: what is left
    to write of the closing, written as the formula was opened): at once, and after each of the
    next ``words`` words of the draft. An OCR reads a formula's symbols as words among words;
    where the formula ends, only the output says. The closing before the draft's first prose word
    goes first and whole; the others are proposed ``past`` characters past the closing.
    ``opened``: the output has just opened the formula (nothing to close at once).

    Worked example: draft ``"bracket with H. Using"``, output ``"bracket with \\( H"``: ``". Using"``
    is proposed as ``" \\). Using"`` first, then as it is, then as ``". Using \\)"``. Output
    ``"bracket with \\("`` (just opened; the page's formulas spaced inside): ``" H. Using"`` as
    ``" H \\). Using"`` first, then as the forms given and as itself, then as ``" H. Using \\)"``."""
    points = [] if opened else [0]
    ws = list(re.finditer(r"\S+", cont))[:words + 1]
    points += [_before_punctuation(m) for m in ws[:words]]
    prose = next((k for k, m in enumerate(ws) if _PROSE_WORD.fullmatch(m.group(0))), None)
    likely = None
    if prose:
        likely = _before_punctuation(ws[prose - 1])
    elif prose == 0 and not opened:
        likely = 0
    out = [cont[:likely] + closer + cont[likely:]] if likely is not None else []
    out += forms if cont in forms else [*forms, cont]
    out += [cont[:p] + closer + cont[p:p + past] for p in points if p != likely]
    return out


def _before_punctuation(word: re.Match) -> int:
    """Where a formula ending with ``word`` closes: before the sentence's punctuation after it."""
    return word.start() + len(word.group(0).rstrip(".,;:!?"))
