"""The OCR's second readings: the letters the recogniser was torn on, per word, on each region."""

from __future__ import annotations

import numpy as np

from core.drafters.base import Region
from core.drafters.second_readings import SecondReadings, install, with_second_readings

CHARS = ["blank", "B", "V", "o", "n", "d", "e", "r", " "]


class _Decoder:
    """RapidOCR's CTC decoding as it reads a batch: the best class per column, repeats and blanks dropped."""

    character = CHARS

    def __call__(self, preds, return_word_box=False, **kwargs):
        out = []
        for row in preds.argmax(axis=2):
            keep = [c for k, c in enumerate(row) if c and (k == 0 or c != row[k - 1])]
            out.append(("".join(CHARS[c] for c in keep), 0.9))
        return out, []


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
    readings = SecondReadings(_Decoder())
    preds = np.stack([_columns("Bon der", {0: ("V", 0.35), 4: ("B", 0.02)}),
                      _columns("den Bon", {4: ("V", 0.3)})])
    lines, _ = readings(preds)
    assert [text for text, _ in lines] == ["Bon der", "den Bon"]  # the text is the decoder's
    # the strongest second reading of each letter of a word; a faint one (0.02) is not kept
    assert readings.words == {"Bon": {(0, "V"): 0.35}}
    readings.begin_page()
    assert readings.words == {}


def test_each_region_carries_the_second_readings_of_its_words():
    regions = [Region("title", (0, 0, 10, 10), "## Bon der Neuen", "rapidocr"),
               Region("text", (0, 20, 10, 30), "Die Ordnung", "rapidocr", extra={"role": "x"}),
               Region("figure", (0, 40, 10, 50), "", "rapidocr")]
    with_second_readings(regions, {"Bon": {(0, "V"): 0.35}, "Ordnung": {(0, "D"): 0.4}})
    assert regions[0].extra == {"second_readings": {"Bon": [[0, "V", 0.35]]}}
    assert regions[1].extra == {"role": "x", "second_readings": {"Ordnung": [[0, "D", 0.4]]}}
    assert regions[2].extra == {}
    assert Region.from_dict(regions[0].to_dict()).extra == regions[0].extra  # saved drafts keep them


def test_installed_behind_the_recognisers_wrappers():
    class Recogniser:
        def __init__(self):
            self.postprocess_op = _Decoder()

    class Wrapper:
        def __init__(self, inner):
            self.inner = inner

    class Ocr:
        text_rec = Wrapper(Wrapper(Recogniser()))

    ocr = Ocr()
    readings = install(ocr)
    assert isinstance(readings, SecondReadings) and ocr.text_rec.inner.inner.postprocess_op is readings
    assert install(ocr) is readings  # once
    assert install(object()) is None
