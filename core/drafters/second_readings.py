"""Where the OCR was torn between two letters: each character's second reading.

RapidOCR's recogniser scores every character class at every column of a line (CTC) and keeps the
best. Where the second best scored high too, the glyph looked like both: a blackletter ``V`` like a
``B``, a ``k`` like a ``t``. Those are most of an OCR's misreadings, and the decode can propose the
second reading beside the first from a page's first line on (``core.speculative.textmatch``,
``Notation.guesses``), where learning the page's misreadings needs a few of them written first.

``torn_letters`` reads the recogniser's column probabilities beside rapidocr's CTC decoding
(``core.drafters.ocr_recognise``) and keeps, per word read (a run of letters and digits), the letters
whose second class had at least ``tuning.OCR_SECOND_READING`` of the probability; ``keep_letters``
gathers a page's. ``with_second_readings`` puts
each region's words in its ``extra["second_readings"]``: ``{word: [[index in word, letter,
probability], ...]}``.

Worked example: a line read ``"die Berordnung"`` whose ``B`` scored 0.62 and ``V`` 0.35 gives
``{"Berordnung": [[0, "V", 0.35]]}``; a region whose text holds ``Berordnung`` carries it.
"""

from __future__ import annotations

import re

import numpy as np

from core import tuning
from core.drafters.base import Region

_WORD = re.compile(r"\w+")


#: How far a softmax column's probabilities may sum away from one in float32 (1.5e-5 measured on
#: the recogniser's 18,710 classes): ``torn_letters`` skips a column only where its best class
#: leaves less than the threshold by more than this.
SOFTMAX_SLACK = 1e-3


def torn_letters(preds: np.ndarray, texts: list[str], characters: list[str],
                 best: np.ndarray | None = None, best_prob: np.ndarray | None = None) -> list[list[tuple]]:
    """Per line of a batch (``preds``: the recogniser's (lines, columns, classes) probabilities,
    ``texts`` what CTC decoded of each; ``best``: each column's best class where the caller has
    it), the letters it was torn on: ``(word, index in the word, letter, probability)`` where the
    runner-up class at a column that emitted a letter had at least ``tuning.OCR_SECOND_READING``.
    All columns of the batch at once. ``best_prob``: each column's best probability, given where
    each column's probabilities sum to one (a softmax): a column whose best class leaves less than
    the threshold to all others has no runner-up that reaches it, and its classes are not searched."""
    out: list[list[tuple]] = [[] for _ in texts]
    preds = np.asarray(preds)
    best = preds.argmax(axis=2) if best is None else best
    emitted = best != 0  # CTC emits at a class other than the blank, unlike the column before
    emitted[:, 1:] &= best[:, 1:] != best[:, :-1]
    rows, cols = np.nonzero(emitted)
    if not len(rows):
        return out
    threshold = tuning.OCR_SECOND_READING
    # Only the columns whose runner-up can reach the threshold are searched (3 % of a page's
    # emitted columns): searching one copies its 18,710 classes.
    search = np.arange(len(rows)) if best_prob is None else \
        np.flatnonzero(1.0 - best_prob[rows, cols] >= threshold - SOFTMAX_SLACK)
    second = np.zeros(len(rows), dtype=np.int64)
    prob = np.full(len(rows), -1.0, dtype=preds.dtype)
    if len(search):
        scores = preds[rows[search], cols[search]].copy()
        scores[np.arange(len(search)), best[rows[search], cols[search]]] = -1.0
        scores[:, 0] = -1.0  # the blank is no reading
        second[search] = scores.argmax(axis=1)
        prob[search] = scores[np.arange(len(search)), second[search]]
    torn = prob >= threshold
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
            out[b].append((text[a:z], i - a, alt, p))
    return out


def keep_letters(words: dict[str, dict[tuple[int, str], float]], letters: list[tuple]) -> None:
    """Add a line's ``torn_letters`` to a page's ``words`` (``{word: {(index, letter): probability}}``,
    the highest probability where a word was torn the same way twice)."""
    for word, index, alt, p in letters:
        found = words.setdefault(word, {})
        found[(index, alt)] = max(p, found.get((index, alt), 0.0))


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
