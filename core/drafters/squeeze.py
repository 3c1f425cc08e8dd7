"""Read CJK text lines squeezed: the same OCR drafts of Chinese scans in 0.72x the OCR time.

RapidOCR's recogniser scales every line crop to 48 pixels high and reads one CTC column per 8
pixels of width, so a line costs in proportion to its width-to-height ratio. A Latin character
gets about 2 columns (median on the English development scans); a CJK character, a full em wide,
4-6. CJK needs fewer, so CJK lines are read squeezed to ``tuning.SQUEEZE`` of their width. Latin text
squeezed that far is misread (at 0.6 the English scans' mean draft edit distance already rose from
0.177 to 0.272), so a squeezed line that comes back with a Latin word in it is read again.

Measured on the twelve development scans (2 CPU cores, this module's rules): mean draft edit
distance on the six Chinese ones 0.0955 at full width, 0.0960 squeezed (``python -m
tools.bench.drafters --drafters rapidocr``); OCR time, best of two alternating runs, Chinese 12.07 ->
8.68 s, English and three held-out Latin scans 17.23 -> 17.39 s.

The script of a line is only known once it is read. On a document's first page a sample of six
lines of median width is read first, at full width; the rest of the page is read squeezed if most
of the sample is dense (at least ``tuning.DENSE_COLUMNS`` columns a character at full width). Later pages
follow the page before them: squeezed (a Latin line still read again) if most of its lines were
dense; else sampled again in a document that had CJK pages, and in a Latin document read exactly
as RapidOCR reads them. The sample costs a Latin document's first page
up to about 5% of its recognition time (the batches' padding changes).
"""

from __future__ import annotations

import re

import numpy as np

from core import tuning

#: A squeezed line with a Latin word in it is read again (as one too dense or read with too low a
#: confidence is: ``tuning.MIN_SQUEEZED_COLUMNS``, ``tuning.MIN_SQUEEZED_SCORE``).
LATIN_RUN = re.compile(r"[A-Za-z]{3,}")
#: The recogniser's input height and its width per CTC column, in pixels (PP-OCR rec models).
REC_HEIGHT, COLUMN_PIXELS = 48, 8
#: Crops narrower than 320 x 48 (RapidOCR's smallest padded crop) are not squeezed: squeezing was
#: measured on wider lines, and the recogniser reads a short line at its own width anyway
#: (``tuning.OCR_REC_MIN_ASPECT``), so it costs little.
MIN_ASPECT = 320 / 48


def columns_per_char(crop: np.ndarray, text: str, factor: float = 1.0) -> float:
    """CTC columns the recogniser had for each character of ``text`` read from ``crop``
    (H, W, 3), squeezed to ``factor`` of its width."""
    height, width = crop.shape[:2]
    columns = REC_HEIGHT * width * factor / max(height, 1) / COLUMN_PIXELS
    return columns / max(len(text), 1)


def crop_factor(crop: np.ndarray, factor: float) -> float:
    """The width factor to read ``crop`` (H, W, 3) at: ``factor``, but never narrower than the
    recogniser's minimum input, and 1 for crops already at or under it."""
    height, width = crop.shape[:2]
    return min(1.0, max(factor, MIN_ASPECT * height / max(width, 1)))


def squeeze_width(crop: np.ndarray, factor: float) -> np.ndarray:
    """``crop`` (H, W, 3) resized to (H, round(W * factor), 3)."""
    import cv2

    height, width = crop.shape[:2]
    return cv2.resize(crop, (max(1, round(width * factor)), height), interpolation=cv2.INTER_AREA)


class SqueezePolicy:
    """Which lines of a document's pages are read squeezed (module docstring): ``read_page`` reads
    a page's lines through a ``core.drafters.line_stream.PageReads``; ``begin_document`` forgets
    the pages before."""

    def __init__(self):
        self.squeeze_next = False
        self.learned = False  # squeeze_next was learned from a page of this document
        self.cjk_seen = False  # a page of this document was mostly dense
        self.squeezed_lines = 0  # read squeezed and kept, since this policy was made

    def begin_document(self) -> None:
        self.squeeze_next = self.learned = self.cjk_seen = False

    def read_page(self, reads) -> None:
        rest = list(range(len(reads.crops)))
        if self.learned and not self.squeeze_next and not self.cjk_seen:
            reads.read(rest, 1.0)  # a page of a Latin document, read as RapidOCR reads it
            return
        if not self.squeeze_next:
            # Read a sample at full width first; the page is squeezed only if the sample is CJK.
            probe = probe_lines(reads.crops)
            reads.read(probe, 1.0)
            rest = [i for i in rest if i not in set(probe)]
            if not probe or not mostly_dense(reads.crops, reads.texts, probe):
                reads.read(rest, 1.0)
                self._learn(reads)
                return
        reads.read(rest, tuning.SQUEEZE)
        again = [i for i in rest if reads.factors[i] < 1.0
                 and read_again(reads.crops[i], reads.texts[i], reads.scores[i], reads.factors[i])]
        reads.read(again, 1.0)
        kept = {i for i in rest if reads.factors[i] < 1.0} - set(again)
        for i in kept:
            reads.squeezed[i] = True
        self.squeezed_lines += len(kept)
        self._learn(reads)

    def _learn(self, reads) -> None:
        """Squeeze the next page if most of this page's lines were dense; a line kept squeezed
        counts as dense, one read again as not."""
        self.squeeze_next = mostly_dense(reads.crops, reads.texts, range(len(reads.crops)), reads.squeezed)
        self.learned = True
        self.cjk_seen |= self.squeeze_next


def read_again(crop: np.ndarray, text: str, score: float, factor: float) -> bool:
    """Whether a line read squeezed must be read again at full width (module docstring)."""
    return (score < tuning.MIN_SQUEEZED_SCORE or LATIN_RUN.search(text) is not None
            or columns_per_char(crop, text, factor) < tuning.MIN_SQUEEZED_COLUMNS)


def probe_lines(crops: list[np.ndarray], count: int = 6, min_aspect: float = 4.0) -> list[int]:
    """Indices of up to ``count`` crops at least ``min_aspect`` times as wide as high (shorter ones
    say little of the script): those of the median width. The recogniser pads a batch to its
    widest crop, so a sample of mixed widths would cost more than reading the same lines among
    the others."""
    wide = sorted((crop.shape[1] / max(crop.shape[0], 1), i) for i, crop in enumerate(crops)
                  if crop.shape[1] >= min_aspect * crop.shape[0])
    first = max(0, (len(wide) - count) // 2)
    return [i for _, i in wide[first:first + count]]


def mostly_dense(crops, texts, indices, squeezed=None) -> bool:
    """True if at least ``DENSE_SHARE`` of the lines at ``indices`` (of 4+ characters) are dense,
    or were kept squeezed (``squeezed[i]``)."""
    votes = [bool(squeezed and squeezed[i]) or columns_per_char(crops[i], texts[i]) >= tuning.DENSE_COLUMNS
             for i in indices if texts[i] is not None and len(texts[i].strip()) >= 4]
    return bool(votes) and sum(votes) >= tuning.DENSE_SHARE * len(votes)
