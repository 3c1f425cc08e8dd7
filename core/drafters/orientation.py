"""Which way a page's text runs: the turn that shows it upright (``Page.turn``).

A landscape slide drawn sideways inside a portrait page, a table set across the page, a scan fed
in upside down: the model reads such a page best turned upright, as olmOCR's pipeline renders it,
and a drafter reads its lines in their own frame. A turn is one of 0, 90, 180, 270 degrees, the
angle of ``pymupdf.Matrix(turn)`` that takes the text's direction to left-to-right.

    line_turn(direction)     the turn that makes a line of direction ``(dx, dy)`` read left to right
    text_turns(fitz_page)    characters of the text layer per turn, in the displayed page's frame
    text_turn(fitz_page)     the turn of the page's dominant direction by characters (0 where none
                             holds ``tuning.TURNED_TEXT_SHARE`` of them)
    scan_turn(page)          the same from OCR: the detector's line shapes and the recogniser's
                             confidence on a few lines read each way
    page_turn(page)          the text layer's where the page has one, else the scan's
"""

from __future__ import annotations

import threading

import numpy as np
import pymupdf

from core import tuning

TURNS = (0, 90, 180, 270)
#: A line counts as running along an axis when its direction's other component is at most this
#: (about 11.5 degrees); slanted lines (a diagonal watermark) belong to no turn.
AXIS_SLACK = 0.2


def line_turn(direction, matrix: pymupdf.Matrix | None = None) -> int | None:
    """The turn (``TURNS``) that makes a line of ``direction`` (PyMuPDF's ``dir``, turned by the
    linear part of ``matrix`` first) read left to right; None for a slanted line."""
    dx, dy = direction
    if matrix is not None:
        dx, dy = dx * matrix.a + dy * matrix.c, dx * matrix.b + dy * matrix.d
    for turn in TURNS:
        m = pymupdf.Matrix(turn)
        x, y = dx * m.a + dy * m.c, dx * m.b + dy * m.d
        if x > 0 and abs(y) <= AXIS_SLACK * max(abs(x), 1e-9):
            return turn
    return None


def text_turns(fitz_page: pymupdf.Page) -> dict[int, int]:
    """Characters (not spaces) of the text layer per turn, directions taken on the displayed page."""
    counts = {turn: 0 for turn in TURNS}
    matrix = fitz_page.rotation_matrix
    for block in fitz_page.get_text("dict", flags=pymupdf.TEXT_MEDIABOX_CLIP)["blocks"]:
        for line in block.get("lines", ()):
            turn = line_turn(line["dir"], matrix)
            if turn is not None:
                counts[turn] += sum(len(s["text"].replace(" ", "")) for s in line["spans"])
    return counts


def dominant_turn(counts: dict[int, int]) -> int:
    """The turn holding most characters where it holds ``tuning.TURNED_TEXT_SHARE`` of them, else 0."""
    total = sum(counts.values())
    if total <= 0:
        return 0
    turn = max(TURNS, key=lambda t: counts.get(t, 0))
    return turn if counts.get(turn, 0) >= tuning.TURNED_TEXT_SHARE * total else 0


def text_turn(fitz_page: pymupdf.Page) -> int:
    """The turn that shows the text layer's dominant direction upright (``dominant_turn``)."""
    return dominant_turn(text_turns(fitz_page))


_engine = None
_engine_lock = threading.Lock()


def _ocr_engine():
    """A plain RapidOCR (detector and recogniser as shipped; the drafter's own is instrumented)."""
    global _engine
    with _engine_lock:
        if _engine is None:
            from rapidocr import RapidOCR

            from core.drafters.ocr_layout import no_info_logging, quiet_loggers
            with no_info_logging():
                _engine = RapidOCR(params={"Global.use_cls": False, "Global.log_level": "critical",
                                           "Det.limit_type": "max", "Det.limit_side_len": tuning.ORIENTATION_DET_SIDE})
            quiet_loggers("RapidOCR", "rapidocr")
        return _engine


def scan_turn(page) -> int:
    """The turn that shows a scanned page's text upright, from OCR. The detector's boxes say
    whether lines run across or along the page (by length); the recogniser then reads the
    ``tuning.ORIENTATION_SAMPLE_LINES`` longest lines turned each of the two ways left, and the
    turn it reads with clearly more confidence (``tuning.ORIENTATION_SCORE_MARGIN``; a sideways
    reading at least ``tuning.ORIENTATION_MIN_SCORE``, so that vertical CJK columns stay as they
    are) wins; lines that read upright with ``tuning.ORIENTATION_UPRIGHT_SCORE`` are not read upside
    down (most pages: half the reading). 0 where OCR is missing or finds no line."""
    try:
        engine = _ocr_engine()
    except ImportError:
        return 0
    pixels = np.asarray(page.render(dpi=tuning.ORIENTATION_DPI))
    found = engine(pixels, use_det=True, use_cls=False, use_rec=False)
    quads = getattr(found, "boxes", None)
    if quads is None or len(quads) == 0:
        return 0
    boxes = []
    for quad in np.asarray(quads, dtype=float):
        x0, y0 = quad.min(axis=0)
        x1, y1 = quad.max(axis=0)
        boxes.append((int(x0), int(y0), int(np.ceil(x1)), int(np.ceil(y1))))
    across = sum(x1 - x0 for x0, y0, x1, y1 in boxes if x1 - x0 >= y1 - y0)
    along = sum(y1 - y0 for x0, y0, x1, y1 in boxes if y1 - y0 > x1 - x0)
    sideways = along > across
    candidates = (90, 270) if sideways else (0, 180)
    chosen = [b for b in boxes if ((b[3] - b[1]) > (b[2] - b[0])) == sideways]
    chosen.sort(key=lambda b: -max(b[2] - b[0], b[3] - b[1]))
    crops = [pixels[y0:y1, x0:x1] for x0, y0, x1, y1 in chosen[:tuning.ORIENTATION_SAMPLE_LINES]]
    crops = [c for c in crops if min(c.shape[:2]) >= 4]
    if not crops:
        return 0
    def read(turn: int) -> float:
        return _mean_score(engine, [np.ascontiguousarray(np.rot90(c, k=-turn // 90)) for c in crops])

    if not sideways:
        upright = read(0)
        if upright >= tuning.ORIENTATION_UPRIGHT_SCORE:
            return 0  # read with confidence as it stands: the other way cannot win by the margin
        scores = {0: upright, 180: read(180)}
    else:
        scores = {turn: read(turn) for turn in candidates}
    best = max(candidates, key=lambda t: scores[t])
    other = min(candidates, key=lambda t: scores[t])
    if sideways:
        return best if scores[best] >= tuning.ORIENTATION_MIN_SCORE and \
            scores[best] - scores[other] >= tuning.ORIENTATION_SCORE_MARGIN else 0
    return 180 if scores[180] - scores[0] >= tuning.ORIENTATION_SCORE_MARGIN else 0


def _mean_score(engine, crops: list) -> float:
    try:
        result = engine.recognize_txt(crops)
    except Exception:  # RapidOCR raises its own error where it reads nothing
        return 0.0
    scores = [float(s) for s in (result.scores or ())]
    return sum(scores) / len(scores) if scores else 0.0


def page_turn(page) -> int:
    """The turn that shows ``page`` (a ``core.documents.Page``) upright: the text layer's where it
    is usable (``Page.is_born_digital``), else OCR's (``scan_turn``)."""
    from core.documents import Page

    upright = Page(page.document, page.fitz_page, page.index)
    upright._turn = 0
    if page.is_born_digital:
        return text_turn(page.fitz_page)
    return scan_turn(upright)
