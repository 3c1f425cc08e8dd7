"""The OCR's second readings: the letters the recogniser was torn on, per word, on each region."""

from __future__ import annotations

import numpy as np

from core.drafters.base import Region
from core.drafters.second_readings import keep_letters, torn_letters, with_second_readings

CHARS = ["blank", "B", "V", "o", "n", "d", "e", "r", " "]


def _columns(text: str, torn: dict[int, tuple[str, float]]) -> np.ndarray:
    """CTC columns reading ``text``, one column per character and a blank between; character
    ``i`` of ``torn`` also scores its second letter."""
    cols = []
    for i, ch in enumerate(text):
        p = np.full(len(CHARS), 0.001)
        second = torn.get(i)
        p[CHARS.index(ch)] = 0.9 if second is None else 0.9 - second[1]
        if second is not None:
            p[CHARS.index(second[0])] = second[1]
        blank = np.full(len(CHARS), 0.001)
        blank[0] = 0.99
        cols += [p, blank]
    return np.array(cols)


def test_the_letters_read_two_ways_are_kept_per_word():
    preds = np.stack([_columns("Bon der", {0: ("V", 0.35), 4: ("B", 0.02)}),
                      _columns("den Bon", {4: ("V", 0.3)})])
    torn = torn_letters(preds, ["Bon der", "den Bon"], CHARS)
    # each line's letters with the word around them; a faint one (0.02) is not kept
    assert [[(w, i, alt, round(p, 3)) for w, i, alt, p in line] for line in torn] == [
        [("Bon", 0, "V", 0.35)], [("Bon", 0, "V", 0.3)]]
    words: dict = {}
    for line in torn:
        keep_letters(words, line)
    assert {w: {k: round(p, 3) for k, p in v.items()} for w, v in words.items()} == {"Bon": {(0, "V"): 0.35}}


def test_a_line_not_read_one_column_a_character_is_left_alone():
    preds = np.stack([_columns("Bon", {0: ("V", 0.35)})])
    assert torn_letters(preds, ["Bo"], CHARS) == [[]]  # the decoder's text disagrees with the columns


def test_each_region_carries_the_second_readings_of_its_words():
    regions = [Region("title", (0, 0, 10, 10), "## Bon der Neuen", "rapidocr"),
               Region("text", (0, 20, 10, 30), "Die Ordnung", "rapidocr", extra={"role": "x"}),
               Region("figure", (0, 40, 10, 50), "", "rapidocr")]
    with_second_readings(regions, {"Bon": {(0, "V"): 0.35}, "Ordnung": {(0, "D"): 0.4}})
    assert regions[0].extra == {"second_readings": {"Bon": [[0, "V", 0.35]]}}
    assert regions[1].extra == {"role": "x", "second_readings": {"Ordnung": [[0, "D", 0.4]]}}
    assert regions[2].extra == {}
    assert Region.from_dict(regions[0].to_dict()).extra == regions[0].extra  # saved drafts keep them
