"""Where the OCR was torn between two letters: each character's second reading.

RapidOCR's recogniser scores every character class at every column of a line (CTC) and keeps the
best. Where the second best scored high too, the glyph looked like both: a blackletter ``V`` like a
``B``, a ``k`` like a ``t``. Those are most of an OCR's misreadings, and the decode can propose the
second reading beside the first from a page's first line on (``core.speculative.textmatch``,
``Notation.guesses``), where learning the page's misreadings needs a few of them written first.

``SecondReadings`` stands in for the recogniser's CTC decoding (``postprocess_op``): it decodes as
RapidOCR does and keeps, per word read (a run of letters and digits), the letters whose second
class had at least ``tuning.OCR_SECOND_READING`` of the probability. ``with_second_readings`` puts
each region's words in its ``extra["second_readings"]``: ``{word: [[index in word, letter,
probability], ...]}``.

Worked example: a line read ``"die Berordnung"`` whose ``B`` scored 0.62 and ``V`` 0.35 gives
``{"Berordnung": [[0, "V", 0.35]]}``; a region whose text holds ``Berordnung`` carries it.

    ocr.text_rec.postprocess_op = SecondReadings(...)   # install(ocr), on the innermost recogniser
"""

from __future__ import annotations

import re

import numpy as np

from core import tuning
from core.drafters.base import Region

_WORD = re.compile(r"\w+")


class SecondReadings:
    """A RapidOCR CTC decoder that also keeps the second readings of the page read so far
    (``words``; ``begin_page`` forgets them)."""

    def __init__(self, inner):
        self.inner = inner
        self.words: dict[str, dict[tuple[int, str], float]] = {}

    def __getattr__(self, name):  # the recogniser may read the decoder's other attributes
        return getattr(self.inner, name)

    def begin_page(self) -> None:
        self.words = {}

    def __call__(self, preds, return_word_box: bool = False, **kwargs):
        lines, words = self.inner(preds, return_word_box, **kwargs)
        try:
            self._keep(np.asarray(preds), [text for text, _ in lines])
        except Exception:  # a decoder laid out otherwise: the text stands, without second readings
            pass
        return lines, words

    def _keep(self, preds: np.ndarray, texts: list[str]) -> None:
        """The columns CTC emits a character at (a class other than the blank, unlike the column
        before), and at each the second class; all columns of the batch at once."""
        best = preds.argmax(axis=2)
        emitted = best != 0
        emitted[:, 1:] &= best[:, 1:] != best[:, :-1]
        rows, cols = np.nonzero(emitted)
        if not len(rows):
            return
        scores = preds[rows, cols].copy()
        scores[np.arange(len(rows)), best[rows, cols]] = -1.0
        scores[:, 0] = -1.0  # the blank is no reading
        second = scores.argmax(axis=1)
        prob = scores[np.arange(len(rows)), second]
        characters = self.inner.character
        torn = prob >= tuning.OCR_SECOND_READING
        starts = np.searchsorted(rows, np.arange(len(texts) + 1))
        for b, text in enumerate(texts):
            at, end = starts[b], starts[b + 1]
            if end - at != len(text):
                continue  # not one emitted column per character: leave the line alone
            for i in np.flatnonzero(torn[at:end]).tolist():
                alt, p = characters[second[at + i]], float(prob[at + i])
                if len(alt) != 1 or not alt.isalnum() or alt == text[i] or not text[i].isalnum():
                    continue
                a, z = i, i + 1  # the word around it
                while a > 0 and (text[a - 1].isalnum() or text[a - 1] == "_"):
                    a -= 1
                while z < len(text) and (text[z].isalnum() or text[z] == "_"):
                    z += 1
                found = self.words.setdefault(text[a:z], {})
                found[(i - a, alt)] = max(p, found.get((i - a, alt), 0.0))


def install(ocr) -> SecondReadings | None:
    """Put ``SecondReadings`` in place of the CTC decoding of a ``rapidocr.RapidOCR``'s recogniser
    (the innermost one, behind ``core.drafters.line_stream`` and ``squeeze``). None where this
    rapidocr is laid out otherwise."""
    rec = getattr(ocr, "text_rec", None)
    while rec is not None and "postprocess_op" not in vars(rec) and hasattr(rec, "inner"):
        rec = rec.inner
    decoder = vars(rec).get("postprocess_op") if rec is not None and hasattr(rec, "__dict__") else None
    if decoder is None or not callable(decoder) or not hasattr(decoder, "character"):
        return None
    if not isinstance(decoder, SecondReadings):
        rec.postprocess_op = SecondReadings(decoder)
    return rec.postprocess_op


def readings_of(text: str, words: dict[str, dict[tuple[int, str], float]]) -> dict[str, list]:
    """The second readings of ``text``'s words: ``{word: [[index in the word, letter,
    probability], ...]}`` (module docstring)."""
    mine: dict[str, list] = {}
    if words:
        for m in _WORD.finditer(text):
            found = words.get(m.group(0))
            if found and m.group(0) not in mine:
                mine[m.group(0)] = [[i, alt, round(p, 3)] for (i, alt), p in sorted(found.items())]
    return mine


def with_second_readings(regions: list[Region], words: dict[str, dict[tuple[int, str], float]]) -> list[Region]:
    """Each region whose text holds a word with second readings carries them (module docstring)."""
    for region in regions:
        mine = readings_of(region.text, words) if region.text else {}
        if mine:
            region.extra = {**region.extra, "second_readings": mine}
    return regions
