"""How the output writes what the drafts say, learned as a page decodes (``Notation``).

The text matcher (``core.speculative.textmatch``) teaches it: word forms (``wt%TiO2`` ->
``\\mathrm{wt} \\% \\mathrm{TiO}_{2}$``), digit shapes, misread words (``Obrigteit`` ->
``Obrigkeit``) and from them the letters a page keeps misreading; each page sets the OCR's second
readings of its words (``core.stage1.page_drafts``, ``core.drafters.second_readings``). Every matcher of
a page, and the document's later pages, share one instance.
"""

from __future__ import annotations

import re

from rapidfuzz.distance import Hamming

from core.speculative.normalized import _norm
from core.tuning import MISREAD_GUESS_RATE, MISREAD_GUESS_SUPPORT

_DIGITS = re.compile(r"\d+")
#: A word as punctuation around one run of letters and digits.
_LETTER_RUN = re.compile(r"(\W*)(\w+)(\W*)")
_RUN = re.compile(r"\w+")
_LETTER_RUNS = re.compile(r"(\w+)")
_SPACES = re.compile(r"(\s+)")


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
        # word, letter, probability], ...]; set by the page (``core.stage1.page_drafts``).
        self.second_readings: dict[str, list] = {}
        self._changes: list[str | None] = []  # per change: the word, or None for a digit shape
        # (word, form) -> the version just after ``learn`` took it: learning it again before any rule
        # changed is a no-op (the rules it sets hold already; the letters it confirms and the
        # confusions it counts are sets), and the matcher learns the same words from every pass's tail
        self._learned: dict[tuple[str, str], int] = {}
        self._forms = _Forms(self.render)  # each word between spaces as rendered (``render_text``)

    @property
    def version(self) -> int:
        return len(self._changes)

    def changes_since(self, version: int) -> list[str | None]:
        return self._changes[version:]

    def __bool__(self) -> bool:
        return bool(self.words or self.shapes or self.misread)

    def learn(self, word: str, form: str) -> None:
        key = (word, form)
        if self._learned.get(key) == len(self._changes):
            return
        self._learn(word, form)
        self._learned[key] = len(self._changes)

    def _learn(self, word: str, form: str) -> None:
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
        letters put right. The text is split once at its runs of letters (spaces) and each run
        looked up: a pattern of the page's learned words would be compiled again at each word
        learned (milliseconds for a page's few hundred) and tried word by word all the same."""
        if not self:
            return text
        if self.misread:
            parts = _LETTER_RUNS.split(text)  # between, run, between, ..., between
            misread = self.misread
            parts[1::2] = [misread.get(run, run) for run in parts[1::2]]
            text = "".join(parts)
        if self.words or self.shapes:
            parts = _SPACES.split(text)  # word, spaces, word, ..., word (words may be "")
            parts[::2] = map(self._forms_now().__getitem__, parts[::2])
            text = "".join(parts)
        return text

    def _forms_now(self) -> "_Forms":
        """The rendered words, those the rules changed since they were rendered forgotten: a
        changed word's own entry, every entry with digits for a changed digit shape. A page's drafts
        are rendered again at every change (the joined draft: the whole page), mostly words whose
        form has not changed."""
        forms = self._forms
        if forms.version != len(self._changes):
            changed = self._changes[forms.version:]
            if None in changed:
                for word in [w for w in forms if _DIGITS.search(w)]:
                    del forms[word]
            for word in changed:
                forms.pop(word, None)
            forms.version = len(self._changes)
        return forms

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


class _Forms(dict):
    """Word -> ``Notation.render(word)``, filled as words are looked up; ``version``: the
    notation's version the entries are true for."""

    def __init__(self, render):
        super().__init__()
        self.render, self.version = render, 0

    def __missing__(self, word: str) -> str:
        form = self[word] = self.render(word)
        return form


def _same_stream(word: str, form: str) -> bool:
    """``form`` is ``word``'s normalised characters, or them with a misread character or two put
    right (``Obrigteit`` -> ``Obrigkeit``, ``Bolte`` -> ``Volke``): the same length, so a draft
    rendered with it keeps its positions, and at most one character in three apart."""
    if len(word) != len(form):
        return False
    return Hamming.distance(word, form) <= max(1, (len(word) + 2) // 3)
