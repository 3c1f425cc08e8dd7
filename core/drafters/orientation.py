"""Which way a page's text runs: the turn that shows it upright (``Page.turn``).

A landscape slide drawn sideways inside a portrait page, a table set across the page, a scan fed
in upside down: the model reads such a page best turned upright, as olmOCR's pipeline renders it,
and a drafter reads its lines in their own frame. A turn is one of 0, 90, 180, 270 degrees, the
angle of ``pymupdf.Matrix(turn)`` that takes the text's direction to left-to-right.

    line_turn(direction)     the turn that makes a line of direction ``(dx, dy)`` read left to right
    text_turns(fitz_page)    characters of the text layer per turn, in the displayed page's frame
    text_turn(fitz_page)     the turn of the page's dominant direction by characters (0 where none
                             holds ``tuning.TURNED_TEXT_SHARE`` of them)
    scan_turn(page)          the same for a scan: its ink first (``core.drafters.ink_turn``), OCR
                             where the ink does not say it reads upright (``scan_reading``)
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
                engine = RapidOCR(params={"Global.use_cls": False, "Global.log_level": "critical",
                                          "Det.limit_type": "max", "Det.limit_side_len": tuning.ORIENTATION_DET_SIDE,
                                          # one thread a run: ONNX Runtime's pool threads spin while
                                          # they wait, which doubled the CPU of a turn read by OCR
                                          "EngineConfig.onnxruntime.intra_op_num_threads": 1})
            quiet_loggers("RapidOCR", "rapidocr")
            _engine = engine
        return _engine


def scan_turn(page) -> int:
    """The turn that shows a scanned page's text upright (``scan_reading``'s turn)."""
    return scan_reading(page)[0]


def scan_reading(page) -> tuple[int, str]:
    """(turn, what decided it) for a scanned page: ``"ink"`` where its ink alone says it reads
    upright (``ink_turn.ink_profile``: lines across the page, ``tuning.INK_TURN_ACROSS`` of its
    characters' evidence, and ``tuning.INK_TURN_UPRIGHT_ASCENT`` more ink above the lines' x-height
    band than below, on ``tuning.INK_TURN_MIN_LINES`` lines or more): most pages, no OCR at all.
    Elsewhere ``_ocr_turn`` decides: ``"ocr"``, or ``"ink"`` where OCR's reading decided nothing and
    the ink's ascent did; ``"none"`` where OCR is missing or finds no line."""
    from core.drafters.ink_turn import ink_profile

    pixels = np.asarray(page.render(dpi=tuning.ORIENTATION_DPI).convert("RGB"))
    gray = np.asarray(page.render(dpi=tuning.INK_TURN_DPI).convert("L")) \
        if tuning.INK_TURN_DPI != tuning.ORIENTATION_DPI else _gray(pixels)
    ink = ink_profile(gray)
    if ink_says_upright(ink):
        return 0, "ink"
    try:
        engine = _ocr_engine()
    except ImportError:
        return 0, "none"
    return _ocr_turn(engine, pixels, ink)


def ink_says_upright(ink) -> bool:
    """Whether an ``ink_turn.InkReading`` alone shows a page upright: lines across the page, and
    above their x-height band clearly more ink than below it, on enough lines."""
    return ink.across >= tuning.INK_TURN_ACROSS and ink.ascent >= tuning.INK_TURN_UPRIGHT_ASCENT \
        and ink.lines >= tuning.INK_TURN_MIN_LINES


def _gray(pixels: np.ndarray) -> np.ndarray:
    """ITU-R 601 luma of an RGB image, as PIL's ``convert("L")`` computes it."""
    weights = np.array([299, 587, 114], dtype=np.uint32)
    return ((pixels.astype(np.uint32) @ weights + 500) // 1000).astype(np.uint8)


def _ocr_turn(engine, pixels: np.ndarray, ink) -> tuple[int, str]:
    """A scan's turn from OCR, in the frame where the ink says its lines run across the page (the
    page turned a quarter clockwise where they run along it: RapidOCR's detector, made for lines
    across, joins tight sideways lines into blocks it cannot read). Where the ink cannot say
    (``tuning.INK_TURN_ACROSS`` either way), the detector's boxes on the page as drawn say, by
    length. The recogniser then reads the ``tuning.ORIENTATION_SAMPLE_LINES`` longest lines upright
    and upside down in that frame; the way it reads with clearly more confidence
    (``tuning.ORIENTATION_SCORE_MARGIN``; a sideways reading at least
    ``tuning.ORIENTATION_MIN_SCORE``, so that vertical CJK columns stay as they are) wins; lines that
    read upright with ``tuning.ORIENTATION_UPRIGHT_SCORE`` are not read upside down. Where the
    reading does not decide, a clear ink ascent (``tuning.INK_TURN_SURE_ASCENT``) does."""
    detected = None  # the detector's boxes on the page as drawn, where they were needed already
    if ink.across >= tuning.INK_TURN_ACROSS or ink.across <= 1 - tuning.INK_TURN_ACROSS:
        sideways = ink.across < 0.5
    else:
        found = _detect(engine, pixels)
        if not found:
            return 0, "none"
        across = sum(x1 - x0 for x0, y0, x1, y1 in found if x1 - x0 >= y1 - y0)
        along = sum(y1 - y0 for x0, y0, x1, y1 in found if y1 - y0 > x1 - x0)
        sideways = along > across
        if not sideways:
            detected = found  # the frame is the page as drawn: detected already
    frame = np.ascontiguousarray(np.rot90(pixels, k=-1)) if sideways else pixels
    base = 90 if sideways else 0  # the turn of ``frame``; upside down in it is base + 180
    if detected is None:
        detected = _detect(engine, frame)
    boxes = [b for b in detected if b[2] - b[0] >= b[3] - b[1]]
    boxes.sort(key=lambda b: -(b[2] - b[0]))
    crops = [frame[y0:y1, x0:x1] for x0, y0, x1, y1 in boxes[:tuning.ORIENTATION_SAMPLE_LINES]]
    crops = [c for c in crops if min(c.shape[:2]) >= 4]
    if not crops:
        return 0, "none"
    upright = _mean_score(engine, crops)
    if not sideways and upright >= tuning.ORIENTATION_UPRIGHT_SCORE:
        return 0, "ocr"  # read with confidence as it stands: the other way cannot win by the margin
    flipped = _mean_score(engine, [np.ascontiguousarray(np.rot90(c, k=2)) for c in crops])
    best = max(upright, flipped)
    if abs(upright - flipped) >= tuning.ORIENTATION_SCORE_MARGIN and \
            (not sideways or best >= tuning.ORIENTATION_MIN_SCORE):
        return (base if upright > flipped else base + 180) % 360, "ocr"
    strong = abs(ink.ascent) >= tuning.INK_TURN_SURE_ASCENT and ink.lines >= tuning.INK_TURN_MIN_LINES
    if strong and (sideways or ink.ascent < 0):
        return (base if ink.ascent > 0 else base + 180) % 360, "ink"
    return 0, "ocr"


def _detect(engine, pixels: np.ndarray) -> list[tuple[int, int, int, int]]:
    """The detector's line boxes on ``pixels``, upright (x0, y0, x1, y1)."""
    found = engine(pixels, use_det=True, use_cls=False, use_rec=False)
    quads = getattr(found, "boxes", None)
    if quads is None or len(quads) == 0:
        return []
    boxes = []
    for quad in np.asarray(quads, dtype=float):
        x0, y0 = quad.min(axis=0)
        x1, y1 = quad.max(axis=0)
        boxes.append((int(x0), int(y0), int(np.ceil(x1)), int(np.ceil(y1))))
    return boxes


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
