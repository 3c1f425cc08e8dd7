"""A scan's OCR lines handed on as they are read, before its layout and reading order are done.

RapidOCR reads a page in three steps: the detector finds its lines (under a second), the
recogniser reads them (20-40 ms a line on two cores: most of a dense page's seconds), then the
layout model, the tables and the reading order turn the lines into regions. A decode beside the
drafter waits for the regions; the lines it could already speculate from are read long before.
``LineStream`` stands in front of RapidOCR's recogniser and, while a ``listener`` is set, reads
the line crops ``tuning.EARLY_LINES_CHUNK`` at a time in the order it is given them (the
detector's: top to bottom, left to right; a document's first page sends a sample of its lines
first, ``core.drafters.squeeze``), telling the listener each chunk's texts. What the recogniser
returns is what it returned before (each crop read once, results in the crops' order;
``tuning.OCR_REC_BATCH`` makes a line's reading independent of its batch).

The detector's order runs across the columns of a two-column page. The lines put in the XY-cut's
column order first drafted worse, not better, on the 12 OmniDocBench scans (replay, the page row
alone on the lines: 3917 passes in this order, 4027 in column order): a line's continuation is
found by the text matcher wherever it stands.

    stream = install(ocr)            # in front of ``ocr.text_rec`` (before ``squeeze.install``)
    stream.listener = lines.extend   # while one page is read; None: read as RapidOCR reads
"""

from __future__ import annotations

import time

import numpy as np

from core import tuning
from core.drafters.squeeze import LineReadings, in_front_of_recogniser


class LineStream:
    """RapidOCR's ``text_rec`` reading in chunks while ``listener`` is set (module docstring).

    A listener that raises is dropped (the page is still read); its lines are then only in the
    regions."""

    def __init__(self, inner):
        self.inner = inner
        self.listener = None

    def __getattr__(self, name):  # the pipeline may read the recogniser's other attributes
        return getattr(self.inner, name)

    def __call__(self, args):
        crops = [args.img] if isinstance(args.img, np.ndarray) else list(args.img)
        if self.listener is None or not crops:
            return self.inner(args)
        start = time.perf_counter()
        lines = LineReadings(crops)
        out = None
        chunk = max(1, tuning.EARLY_LINES_CHUNK)
        for first in range(0, len(crops), chunk):
            indices = list(range(first, min(len(crops), first + chunk)))
            out = lines.read(self.inner, args, indices, 1.0) or out
            self._tell([lines.texts[i] for i in indices if lines.texts[i] and lines.texts[i].strip()])
        return lines.output(out, start)

    def _tell(self, texts: list[str]) -> None:
        if not texts or self.listener is None:
            return
        try:
            self.listener(texts)
        except Exception:  # the reader of early lines went away: the regions still come
            self.listener = None


def install(ocr) -> LineStream | None:
    """Put a ``LineStream`` in front of a ``rapidocr.RapidOCR``'s recogniser. None where this
    rapidocr is laid out otherwise: its pages are then drafted without early lines."""
    return in_front_of_recogniser(ocr, LineStream)
