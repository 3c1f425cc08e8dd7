"""``page_char_boxes`` computes RapidOCR's per-character boxes: the same boxes on a page read for real."""

from __future__ import annotations

import numpy as np
import pymupdf
import pytest

from core.drafters.char_boxes import page_char_boxes

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
    """RapidOCR's own pipeline with and without its character boxes: ours from what it read."""
    pixels = _page_pixels(angle)
    words = ocr(pixels, use_cls=False, return_word_box=True, return_single_char_box=False)
    want = ocr(pixels, use_cls=False, return_word_box=True, return_single_char_box=True).word_results
    reads = _read_lines(ocr, pixels)
    got = page_char_boxes(*reads)
    assert len(got) == len(want) == len(words.txts) >= 5
    assert sum(len(line) for line in want) > 150
    for got_line, want_line in zip(got, want):
        assert [(c, s) for c, s, _ in got_line] == [(c, s) for c, s, _ in want_line]
        for (_, _, got_box), (_, _, want_box) in zip(got_line, want_line):
            assert sorted(map(tuple, got_box)) == sorted(map(tuple, want_box))


def _read_lines(ocr, pixels):
    """(crop sizes in the page, boxes in the page, texts, ``WordInfo``s) of the lines RapidOCR
    reads on ``pixels``, by its public steps."""
    from rapidocr.ch_ppocr_rec import TextRecInput
    from rapidocr.utils.process_img import map_boxes_to_original

    image, record = ocr.preprocess_img(pixels)
    crops, found = ocr.detect_and_crop(image, record)
    rec = ocr._load_rec_model()(TextRecInput(img=crops, return_word_box=True))
    boxes = map_boxes_to_original(found.boxes, record, *pixels.shape[:2])
    ratio_h, ratio_w = record["preprocess"]["ratio_h"], record["preprocess"]["ratio_w"]
    keep = [i for i, t in enumerate(rec.txts) if t.strip() and rec.scores[i] >= 0.5]
    shapes = [(round(crops[i].shape[0] * ratio_h), round(crops[i].shape[1] * ratio_w)) for i in keep]
    return shapes, boxes[keep], [rec.txts[i] for i in keep], [rec.word_results[i] for i in keep]


def test_a_vertical_line_is_left_to_rapidocr():
    from rapidocr.ch_ppocr_rec.typings import WordInfo, WordType

    info = WordInfo(words=[["a", "b"]], word_cols=[[0, 2]], word_types=[WordType.EN_NUM], line_txt_len=4.0, confs=[0.9, 0.8])
    tall = np.array([[0, 0], [10, 0], [10, 60], [0, 60]], dtype=np.float32)  # a vertical line
    (line,) = page_char_boxes([(60, 10)], [tall], ["ab"], [info])
    assert [(c, s) for c, s, _ in line] == [("a", 0.9), ("b", 0.8)]  # rapidocr's own calculation
    assert page_char_boxes([(0, 10)], [tall], ["ab"], [info]) == [[]]  # an empty crop has none
