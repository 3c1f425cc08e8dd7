"""``CharBoxes`` computes RapidOCR's per-character boxes: the same boxes on a page read for real."""

from __future__ import annotations

import copy

import numpy as np
import pymupdf
import pytest

from core.drafters.char_boxes import CharBoxes

pytest.importorskip("rapidocr")


def _page_pixels(angle: float = 0.0) -> np.ndarray:
    """A page of prose, a code listing, digits and a wide line, rendered at 200 dpi (turned by
    ``angle`` degrees: the boxes are then quadrilaterals and the crops are cut by a real
    perspective transform)."""
    doc = pymupdf.open()
    page = doc.new_page(width=420, height=320)
    page.insert_text((36, 48), "Quarterly Widget Survey", fontsize=18, fontname="hebo")
    lines = ["The survey asked one hundred workshops how many", "widgets they used in spring; 42 % said more.",
             "for (i = 0; i < n; i++) { total += w[i]; }", "Tel. 0171 234 5678  -  Fax 0171 234 5679",
             "iiii llll mmmm WWWW .... ,,,, 1111"]
    for i, text in enumerate(lines):
        page.insert_text((36, 90 + 22 * i), text, fontsize=11, fontname="cour" if "for" in text[:3] else "helv")
    pix = page.get_pixmap(dpi=200)
    image = np.frombuffer(pix.samples, np.uint8).reshape(pix.h, pix.w, pix.n)[:, :, :3].copy()
    if angle:
        import cv2

        h, w = image.shape[:2]
        turn = cv2.getRotationMatrix2D((w / 2, h / 2), angle, 1.0)
        image = cv2.warpAffine(image, turn, (w, h), borderValue=(255, 255, 255))
    return image


@pytest.fixture(scope="module")
def ocr():
    from rapidocr import RapidOCR

    return RapidOCR(params={"Global.use_cls": False, "Global.log_level": "critical", "Rec.rec_batch_num": 1})


@pytest.mark.parametrize("angle", [0.0, 1.5])
def test_the_same_boxes_as_rapidocr(ocr, angle):
    own = ocr.cal_rec_boxes
    calls = []
    ocr.cal_rec_boxes = lambda *args: calls.append(copy.deepcopy(args)) or own(*args)
    try:
        ocr(_page_pixels(angle), use_cls=False, return_word_box=True, return_single_char_box=True)
    finally:
        ocr.cal_rec_boxes = own
    (args,) = calls
    want = own(*copy.deepcopy(args)).word_results
    got = CharBoxes(own)(*copy.deepcopy(args)).word_results
    assert len(got) == len(want) >= 5
    assert sum(len(line) for line in want) > 150
    for got_line, want_line in zip(got, want):
        assert [(c, s) for c, s, _ in got_line] == [(c, s) for c, s, _ in want_line]
        for (_, _, got_box), (_, _, want_box) in zip(got_line, want_line):
            assert sorted(map(tuple, got_box)) == sorted(map(tuple, want_box))


def test_what_it_does_not_compute_goes_to_rapidocr():
    asked = []

    from rapidocr.cal_rec_boxes.main import CalRecBoxes

    class Own:
        get_box_direction = staticmethod(CalRecBoxes.get_box_direction)

        def __call__(self, imgs, boxes, rec, single=False):
            asked.append((len(imgs), single))
            rec.word_results = tuple([("x", 1.0, [[0, 0], [1, 0], [1, 1], [0, 1]])] for _ in imgs)
            return rec

    class Rec:
        txts = ("ab",)
        word_results = (type("Info", (), {"line_txt_len": 4.0, "words": [["a", "b"]], "word_cols": [[0, 2]],
                                          "confs": [0.9, 0.8]})(),)

    tall = np.array([[0, 0], [10, 0], [10, 60], [0, 60]], dtype=np.float32)  # a vertical line
    out = CharBoxes(Own())([np.zeros((60, 10, 3), np.uint8)], [tall], Rec(), True)
    assert asked == [(1, True)] and out.word_results[0][0][0] == "x"
    rec = Rec()
    CharBoxes(Own())([np.zeros((60, 10, 3), np.uint8)], [tall], rec, False)  # word boxes, not characters
    assert asked[-1] == (1, False)
