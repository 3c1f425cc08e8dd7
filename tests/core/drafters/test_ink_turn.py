"""A scan's direction from its ink: the axis of its lines and which way up, without OCR; OCR only
where the ink does not say the page reads upright."""

from __future__ import annotations

import numpy as np
import pymupdf
import pytest

from core import tuning
from core.documents import open_document
from core.drafters import orientation
from core.drafters.ink_turn import ink_mask, ink_profile
from core.drafters.orientation import ink_says_upright, scan_reading

SENTENCE = ("The committee reported that the northern harbour had been extended before the budget "
            "of the following year was published, and the archive kept every page of it. ")


def article() -> pymupdf.Document:
    """A one-column article set tight and justified (the lines RapidOCR's detector joins sideways)."""
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    page.insert_text((60, 80), "Local Survey of the Harbour", fontsize=18)
    page.insert_textbox(pymupdf.Rect(60, 100, 535, 780), SENTENCE * 22, fontsize=10,
                        fontname="tiro", align=pymupdf.TEXT_ALIGN_JUSTIFY, lineheight=1.05)
    return doc


def gray(doc: pymupdf.Document) -> np.ndarray:
    pix = doc[0].get_pixmap(dpi=tuning.INK_TURN_DPI, colorspace=pymupdf.csGRAY)
    return np.frombuffer(pix.samples, np.uint8).reshape(pix.height, pix.width)


def fed_turned(image: np.ndarray, turn: int) -> np.ndarray:
    """The page as a scanner fed it so that a turn of ``turn`` shows it upright."""
    return np.ascontiguousarray(np.rot90(image, k=turn // 90))


@pytest.mark.parametrize("turn", [0, 90, 180, 270])
def test_the_ink_tells_the_axis_and_which_way_up(turn):
    reading = ink_profile(fed_turned(gray(article()), turn))
    if turn in (0, 180):
        assert reading.across > tuning.INK_TURN_ACROSS
    else:
        assert reading.across < 1 - tuning.INK_TURN_ACROSS
    assert reading.lines >= tuning.INK_TURN_MIN_LINES
    # in the frame where lines run across (a quarter clockwise for sideways pages), 0 and 90 read upright
    assert (reading.ascent > 0) == (turn in (0, 90))
    assert ink_says_upright(reading) == (turn == 0)


def test_paper_and_a_photograph_say_nothing():
    blank = np.full((400, 300), 235, np.uint8)
    reading = ink_profile(blank)
    assert reading.lines == 0 and not ink_says_upright(reading)
    noise = np.random.default_rng(7).integers(0, 256, size=(400, 300), dtype=np.uint8)
    assert not ink_says_upright(ink_profile(noise))


def test_ink_is_what_is_clearly_darker_than_the_paper():
    image = np.full((50, 50), 200, np.uint8)
    image[10:20, 10:40] = 40
    image[30:32, 5:45] = 185  # a shade of uneven light, not ink
    mask = ink_mask(image)
    assert mask[10:20, 10:40].all() and mask.sum() == 300


def _scan(path, turn: int):
    """The article as a grey JPEG scan, fed turned (``fed_turned``)."""
    image = fed_turned(gray(article()), turn)
    pix = pymupdf.Pixmap(pymupdf.csGRAY, image.shape[1], image.shape[0], image.tobytes(), False)
    out = pymupdf.open()
    width, height = image.shape[1] * 72 / tuning.INK_TURN_DPI, image.shape[0] * 72 / tuning.INK_TURN_DPI
    page = out.new_page(width=width, height=height)
    page.insert_image(page.rect, stream=pix.tobytes("jpeg"))
    out.save(path)
    return path


def test_an_upright_scan_is_decided_by_its_ink_without_ocr(tmp_path, monkeypatch):
    def no_ocr():
        raise AssertionError("OCR loaded for a page the ink shows upright")

    monkeypatch.setattr(orientation, "_ocr_engine", no_ocr)
    with open_document(_scan(tmp_path / "scan.pdf", 0), rotate="off") as doc:
        assert scan_reading(doc.page(0)) == (0, "ink")


@pytest.mark.parametrize("turn", [90, 180, 270])
def test_a_turned_tight_article_scan_is_turned_upright(tmp_path, turn):
    pytest.importorskip("rapidocr")
    with open_document(_scan(tmp_path / "scan.pdf", turn), rotate="off") as doc:
        found, _ = scan_reading(doc.page(0))
        assert found == turn


def test_where_the_ink_cannot_say_the_axis_the_page_is_detected_once(tmp_path, monkeypatch):
    """Upright lines whose axis the ink leaves open: the detector's boxes that show them running
    across the page are the ones the recogniser's sample is taken from, not detected a second time."""
    pytest.importorskip("rapidocr")
    from core.drafters.ink_turn import InkReading

    with open_document(_scan(tmp_path / "scan.pdf", 0), rotate="off") as doc:
        pixels = np.asarray(doc.page(0).render(dpi=tuning.ORIENTATION_DPI).convert("RGB"))
    engine = orientation._ocr_engine()
    undecided = InkReading(across=0.5, pieces=100, ascent=0.0, lines=0)
    calls = []
    detect = orientation._detect
    monkeypatch.setattr(orientation, "_detect", lambda e, p: calls.append(p) or detect(e, p))
    assert orientation._ocr_turn(engine, pixels, undecided) == (0, "ocr")
    assert len(calls) == 1 and calls[0] is pixels


def test_the_turn_engine_runs_one_thread_a_run():
    """The turn's RapidOCR runs each session on one thread, set through rapidocr's own settings: no
    pool threads spinning beside it."""
    pytest.importorskip("rapidocr")
    engine = orientation._ocr_engine()
    for part in (engine.text_det, engine.text_rec):
        assert part.session.session.get_session_options().intra_op_num_threads == 1
