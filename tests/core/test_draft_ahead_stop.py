"""A page whose decode ends while its drafter reads it elsewhere (the drafting process) is told to
stop reading (``stop_reading``; ``core.draft_ahead``), and only that page: the next page is read
whole. The drafter's progress is released by the test, never timed."""

from __future__ import annotations

import threading

from core import tuning
from core.draft_ahead import DraftAhead
from core.drafters.base import DrafterBase, OcrLine, Region
from core.drafters.ocr_layout import unread_regions
from core.run import PageSaver
from tests.core.test_draft_ahead_unread import Decoded, Document

LINES_A_PAGE = 6


def first_page_decoded_while_read(drafter, saved: list | None = None) -> tuple:
    """A two-page document drafted beside its decode by ``drafter`` (which sets ``reading`` once
    it reads page 1's lines): page 1's decode ends while its lines are read. Returns ``(ahead,
    page 1, its saver)``; the saver adds the page numbers it saves to ``saved``."""
    ahead = DraftAhead(Document(2), [0, 1], drafter, 72, ahead=1, beside=True, emit=lambda e: None)
    first = ahead.next()
    assert drafter.reading.wait(tuning.PATIENCE_SECONDS)
    save = (lambda page, result: saved.append(page.number)) if saved is not None else (lambda page, result: None)
    saver = PageSaver(save, emit=lambda e: None, announce=lambda page, result: None)
    saver.save(first, Decoded(first.drafts))  # page 1's decode ends while its lines are read
    return ahead, first, saver


class ElsewhereOcr(DrafterBase):
    """A drafter reading in a process of its own (``drafts_elsewhere``): tells its page's first two
    lines, then reads the rest only once released (``go``), or stops after those two once
    ``stop_reading`` is called, the rest of its page then layout only; polled through ``waiting``
    meanwhile, as ``ProcessDrafter`` polls its connection."""

    name = "rapidocr"
    streams_lines = True
    drafts_elsewhere = True

    def __init__(self):
        self.go = threading.Event()
        self.stop = threading.Event()
        self.reading = threading.Event()
        self.stops: list[int] = []  # the pages told to stop
        self._page = None

    def stop_reading(self):
        self.stops.append(self._page)
        self.stop.set()

    def draft(self, page, on_lines=None, meanwhile=None, waiting=None):
        self.stop.clear()  # a stop is for the page it was told on (``ProcessDrafter._ask``)
        self._page = page.number
        if meanwhile is not None:
            meanwhile()
        on_lines([OcrLine(f"line 1 of page {page.number}", None), OcrLine(f"line 2 of page {page.number}", None)])
        self.reading.set()
        patience = threading.Event()
        for _ in range(int(tuning.PATIENCE_SECONDS / 0.01)):
            if self.go.is_set() or self.stop.is_set():
                break
            waiting()
            patience.wait(0.01)
        read = 2 if self.stop.is_set() else LINES_A_PAGE
        regions = [Region("text", (0, 10 * i, 90, 10 * i + 8), f"line {i + 1} of page {page.number}", self.name)
                   for i in range(read)]
        return regions + (unread_regions([("text", (0, 10 * read, 90, 10 * LINES_A_PAGE))], self.name)
                          if read < LINES_A_PAGE else [])


def test_a_page_whose_decode_ends_while_it_is_read_stops_being_read_and_the_next_is_read_whole():
    drafter, saved = ElsewhereOcr(), []
    ahead, first, saver = first_page_decoded_while_read(drafter, saved)
    regions = first.drafts.result()  # it stops without being released
    assert drafter.stops == [1]
    assert [r.text for r in regions[:2]] == ["line 1 of page 1", "line 2 of page 1"]
    assert regions[2].extra.get("unread") and len(regions) == 3
    second = ahead.next()
    drafter.go.set()  # page 2, still decoding, is read to its end
    assert [r.text for r in second.drafts.result()] == [f"line {i + 1} of page 2" for i in range(LINES_A_PAGE)]
    assert drafter.stops == [1]
    ahead.join()
    saver.wait()
    assert saved == [1]


class HereOcr(DrafterBase):
    """An OCR drafter reading on the drafting thread itself (no drafting process): given the stop
    check (``stop_when``) for the page it reads; it reads its first two lines, then waits until
    the check says stop or the test releases it (``go``)."""

    name = "rapidocr"
    streams_lines = True
    reads_ahead = True

    def __init__(self):
        self.go = threading.Event()
        self.reading = threading.Event()
        self.checks: list = []  # the check given for each page (None: none)
        self._check = None

    def stop_when(self, stopped=None):
        self._check = stopped
        if stopped is not None:
            self.checks.append(stopped)

    def draft(self, page, on_lines=None):
        on_lines([OcrLine(f"line 1 of page {page.number}", None)])
        self.reading.set()
        patience = threading.Event()
        for _ in range(int(tuning.PATIENCE_SECONDS / 0.01)):
            if self.go.is_set() or (self._check is not None and self._check()):
                break
            patience.wait(0.01)
        read = LINES_A_PAGE if self.go.is_set() else 1
        return [Region("text", (0, 10 * i, 90, 10 * i + 8), f"line {i + 1} of page {page.number}", self.name)
                for i in range(read)]


def test_an_ocr_reading_on_the_drafting_thread_is_given_the_pages_stop_check():
    drafter = HereOcr()
    ahead, first, saver = first_page_decoded_while_read(drafter)
    assert [r.text for r in first.drafts.result()] == ["line 1 of page 1"]  # stopped, not released
    drafter.go.set()
    second = ahead.next()
    assert len(second.drafts.result()) == LINES_A_PAGE
    ahead.join()
    saver.wait()
    assert len(drafter.checks) == 2 and drafter._check is None  # one check a page, none left after
