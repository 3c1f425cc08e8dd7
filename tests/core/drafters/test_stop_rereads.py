"""A scan page with a figure whose decode ends while its lines are read (real RapidOCR and layout
model, two recognition threads): the lines the threads read ahead of the stop are taken for the
lines the figure still wants, never recognised a second time; no line is started while the stop is
decided; and the page's drafts are those of the same stop without any line read ahead."""

from __future__ import annotations

import threading
import time
from collections import Counter

import pymupdf
import pytest

from core import tuning
from core.documents import open_document
from core.drafters import get_drafter
from tests.core.drafters.test_stop_figures import _typeset

WORKERS = 2


class CountingRecogniser:
    """The pipeline's recogniser, counting the crops it is handed (by their pixels and width) and
    calling ``started(count)`` before each read."""

    def __init__(self, inner, started=None):
        self.inner = inner
        self.seen: Counter = Counter()
        self.started = started
        self._lock = threading.Lock()

    def read(self, crops):
        with self._lock:
            for crop in crops:
                self.seen[(crop.shape, crop.tobytes())] += 1
            count = sum(self.seen.values())
        if self.started is not None:
            self.started(count)
        return self.inner.read(crops)

    def count(self) -> int:
        with self._lock:
            return sum(self.seen.values())


@pytest.fixture(scope="module")
def pdf(tmp_path_factory):
    """A plain page (a document's first page reads a sample of its lines whole), then a page with
    a figure between paragraphs."""
    out = pymupdf.open()
    for kind in ("plain", "two figures"):
        scan = out.new_page(width=500, height=700)
        scan.insert_image(scan.rect, stream=_typeset(kind))
    path = tmp_path_factory.mktemp("rereads") / "rereads.pdf"
    out.save(path)
    return path


def _drafter(started=None, ahead: bool = True):
    """A RapidOCR drafter on ``WORKERS`` threads with a counting recogniser; ``ahead=False``: its
    lines read one at a time as they are taken (no thread reads ahead)."""
    drafter = get_drafter("rapidocr", workers=WORKERS)
    pipeline = drafter._ocr_engine()
    pipeline._recogniser = CountingRecogniser(pipeline._recogniser, started)
    if not ahead:
        pipeline._pool = None
    return drafter, pipeline


def _stopped_draft(pdf, drafter, on_lines, check):
    with open_document(pdf) as document:
        drafter.draft(document.page(0))
        drafter._ocr_engine()._recogniser.seen.clear()
        drafter.stop_when(check)
        try:
            return drafter.draft(document.page(1), on_lines=on_lines)
        finally:
            drafter.stop_when(None)


def _plain(regions):
    return [(r.label, tuple(r.bbox), r.text, r.extra) for r in regions]


def test_the_lines_read_ahead_of_a_stop_are_taken_not_recognised_again(pdf):
    """The decode ends once the first lines are told, and every other line has been recognised by
    then (the listener waits for the threads): the lines the figure wants are those, none is
    recognised twice, and the drafts are the same stop's without any line read ahead."""
    drafter, pipeline = _drafter()
    told = []

    def on_lines(lines):
        told.append(lines)
        deadline = time.monotonic() + tuning.PATIENCE_SECONDS
        while pipeline._recogniser.count() < len(pipeline._reads.crops) and time.monotonic() < deadline:
            time.sleep(0.02)

    regions = _stopped_draft(pdf, drafter, on_lines, lambda: bool(told))
    reads = pipeline._reads
    seen = pipeline._recogniser.seen
    assert reads.cut and reads.wanted and reads.unread(), "the stop read the page whole or wanted nothing"
    assert sum(seen.values()) == len(seen) == len(reads.crops)  # each line once, none twice

    reference, quiet = _drafter(ahead=False)
    quiet_told = []
    same = _stopped_draft(pdf, reference, quiet_told.append, lambda: bool(quiet_told))
    assert quiet._reads.wanted == reads.wanted
    assert _plain(same) == _plain(regions)
    assert sum(quiet._recogniser.seen.values()) == sum(t is not None for t in reads.texts)


def test_no_line_is_started_while_the_stop_is_decided(pdf):
    """While the stop is asked (here it takes a while), the threads start no line: at most each
    one's line already handed to it when the stop came."""
    at_stop: list[int] = []  # lines started when the stop was asked, and a while later
    started_late = threading.Event()
    told = []

    def started(count):
        if at_stop and count > at_stop[0] + WORKERS:
            started_late.set()

    drafter, pipeline = _drafter(started)

    def check():
        if not told:
            return False
        if not at_stop:
            at_stop.append(pipeline._recogniser.count())
            started_late.wait(3.0)  # the threads' chance to start the lines a stop throws away
            at_stop.append(pipeline._recogniser.count())
        return True

    _stopped_draft(pdf, drafter, told.append, check)
    reads = pipeline._reads
    assert reads.cut and reads.unread() and len(at_stop) == 2
    assert at_stop[1] - at_stop[0] <= WORKERS
