"""A scan's OCR lines handed on as they are read, before its layout and reading order are done.

RapidOCR reads a page in three steps: the detector finds its lines (under a second), the
recogniser reads them (20-40 ms a line on two cores: most of a dense page's seconds), then the
layout model, the tables and the reading order turn the lines into regions. A decode beside the
drafter waits for the regions; the lines it could already speculate from are read long before.
``LineStream`` stands in front of RapidOCR's recogniser and, while a ``listener`` is set, reads
the line crops a chunk at a time (``chunks``: two lines first, then up to
``tuning.EARLY_LINES_CHUNK``) in reading order (``layout.line_reading_order`` on the detector's boxes:
down one column before the next; the detector's own order, top to bottom across the columns,
where the boxes are not known; a document's first page sends a sample of its lines first,
``core.drafters.squeeze``), telling the listener each chunk's lines: each one's place in
the detector's list and its text. The detector's boxes come with them (``quad``: the stream is told
each page's boxes as the detector finds them), so the decode can read a line on its crop before
the regions come (``core.stages.Stage1Scheduler``). What the recogniser returns is what it returned
before (each crop read once, results in the crops' order; ``tuning.OCR_REC_BATCH`` makes a line's
reading independent of its batch and of the order the lines are read in).

Why reading order: while its regions are not there, the decode of a scan waits on the recogniser
(it writes a line with good drafts faster than the recogniser reads one), and it writes the
first column first. Read row by row across two columns, the lines it needs come at half the
recogniser's pace. When all lines are there the order matters little (replay, the page row alone
on the lines of the 12 OmniDocBench scans: 3917 passes in the detector's order, 4027 in column
order): a line's continuation is found by the text matcher wherever it stands.

    stream = install(ocr)            # in front of ``ocr.text_rec`` (before ``squeeze.install``)
    stream.listener = told.extend    # while one page is read: [(index, text)]; None: read as RapidOCR reads
    stream.quad(index, h, w)         # that line's corners in the page image read
"""

from __future__ import annotations

import time

import numpy as np

from core import tuning
from core.drafters.layout import line_reading_order
from core.drafters.squeeze import LineReadings, in_front_of_recogniser


class LineStream:
    """RapidOCR's ``text_rec`` reading in chunks while ``listener`` is set (module docstring).

    The listener is told ``[(index, text)]``: each line's place in the detector's list (its box:
    ``quad``) and what was read. A listener that raises is dropped (the page is still read); its
    lines are then only in the regions."""

    def __init__(self, inner):
        self.inner = inner
        self.listener = None
        self._boxes = None  # the last page's detector boxes, in the page image read

    def __getattr__(self, name):  # the pipeline may read the recogniser's other attributes
        return getattr(self.inner, name)

    def __call__(self, args):
        return self.read_indexed(args)

    def read_indexed(self, args, indices=None):
        """Read ``args.img``, the detector's lines at ``indices`` (None: all of them, in order;
        ``core.drafters.squeeze`` reads a page's lines in parts, some squeezed)."""
        crops = [args.img] if isinstance(args.img, np.ndarray) else list(args.img)
        indices = list(indices) if indices is not None else list(range(len(crops)))
        if self.listener is None or not crops:
            return self.inner(args)
        start = time.perf_counter()
        lines = LineReadings(crops)
        out = None
        order = self._reading_order(indices)
        for part in chunks(len(crops)):
            part = [order[p] for p in part]
            out = lines.read(self.inner, args, part, 1.0) or out
            self._tell([(indices[i], lines.texts[i]) for i in part if lines.texts[i] and lines.texts[i].strip()])
        return lines.output(out, start)

    def detected(self, boxes, record) -> None:
        """The detector found ``boxes`` (RapidOCR's quadrilaterals, in its resized input) on the
        page about to be read; ``record``: how RapidOCR resized and padded the page for it. The
        boxes are kept in the page image's pixels: RapidOCR's steps undone, the last first."""
        boxes = np.array(boxes, dtype=float, copy=True)
        for op in reversed(list(record)):
            step = record[op]
            if "padding" in op:
                boxes[..., 0] -= step.get("left", 0)
                boxes[..., 1] -= step.get("top", 0)
            elif "preprocess" in op:
                boxes[..., 0] *= step.get("ratio_w", 1.0)
                boxes[..., 1] *= step.get("ratio_h", 1.0)
        self._boxes = boxes

    def quad(self, index: int, height: int, width: int):
        """The four corners of line ``index`` in the page image read (``height`` x ``width``
        pixels), or None where the detector's boxes are not known."""
        if self._boxes is None or not 0 <= index < len(self._boxes):
            return None
        q = self._boxes[index].copy()
        q[:, 0] = q[:, 0].clip(0, width)
        q[:, 1] = q[:, 1].clip(0, height)
        return q

    def _reading_order(self, indices: list[int]) -> list[int]:
        """Positions of the detector's lines ``indices`` in the order they are read: their
        reading order (``layout.line_reading_order``: down a column before the next), so that the
        lines the decode needs next come next; the detector's order where their boxes are not known."""
        if (not tuning.EARLY_LINES_READING_ORDER or self._boxes is None
                or any(not 0 <= i < len(self._boxes) for i in indices)):
            return list(range(len(indices)))
        quads = self._boxes[indices]
        return line_reading_order([(float(q[:, 0].min()), float(q[:, 1].min()), float(q[:, 0].max()),
                                    float(q[:, 1].max())) for q in quads])

    def _tell(self, lines: list[tuple[int, str]]) -> None:
        if not lines or self.listener is None:
            return
        try:
            self.listener(lines)
        except Exception:  # the reader of early lines went away: the regions still come
            self.listener = None


def chunks(count: int) -> list[list[int]]:
    """The positions ``0 .. count - 1`` in the chunks they are read and told in: the first
    ``tuning.EARLY_LINES_FIRST`` lines alone, each chunk after twice the one before, up to
    ``tuning.EARLY_LINES_CHUNK`` (the decode has nothing from its page until the first chunk is
    read). ``chunks(20)`` with 2 and 8: ``[0, 1]``, ``[2 .. 5]``, ``[6 .. 13]``, ``[14 .. 19]``."""
    out, first = [], 0
    size = max(1, min(tuning.EARLY_LINES_FIRST, tuning.EARLY_LINES_CHUNK))
    while first < count:
        out.append(list(range(first, min(count, first + size))))
        first += size
        size = min(2 * size, max(1, tuning.EARLY_LINES_CHUNK))
    return out


def install(ocr) -> LineStream | None:
    """Put a ``LineStream`` in front of a ``rapidocr.RapidOCR``'s recogniser, told each page's
    detected boxes. None where this rapidocr is laid out otherwise: its pages are then drafted
    without early lines."""
    stream = in_front_of_recogniser(ocr, LineStream)
    detect = getattr(ocr, "detect_and_crop", None)
    if stream is not None and callable(detect) and not getattr(detect, "tells_line_stream", False):
        def detect_and_tell(img, op_record):
            crops, found = detect(img, op_record)
            stream.detected(found.boxes, op_record)
            return crops, found
        detect_and_tell.tells_line_stream = True
        ocr.detect_and_crop = detect_and_tell
    return stream
