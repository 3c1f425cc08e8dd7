"""Text is read only where a decode can still use it: a page whose decode ended before the drafter
came to it is asked for its layout alone (``PendingDrafts.end_decode``, told by ``PageSaver``;
``core.drafters.process.LayoutOnly``), the pages still decoding are read whole, and the decode never
waits for either. The drafter's progress is released by the test, never timed."""

from __future__ import annotations

import threading

from PIL import Image

from core.draft_ahead import DraftAhead
from core.drafters.base import DrafterBase, OcrLine, Region
from core.drafters.ocr_layout import UNREAD, unread_regions
from core.drafters.process import LayoutOnly, layout_of
from core.events import RegionsDrafted
from core.page_pipeline import PendingDrafts
from core.run import PageSaver

LINES_A_PAGE = 4


class Page:
    width, height = 100.0, 140.0

    def __init__(self, index):
        self.index, self.number = index, index + 1

    def render(self, dpi):
        return Image.new("RGB", (50, 70), "white")


class Document:
    def __init__(self, pages: int):
        self.count = pages

    def page(self, index):
        return Page(index)


class CountingOcr(DrafterBase):
    """An OCR drafter that counts the lines it recognises: ``draft`` reads the page's lines (it tells
    two, then waits for ``gate`` on page 1, the recogniser still reading); ``draft_layout``
    finds the page's boxes and a figure, recognising nothing."""

    name = "rapidocr"
    streams_lines = True

    def __init__(self, gate: threading.Event):
        self.gate = gate
        self.recognised: dict[int, int] = {}  # page number -> lines recognised
        self.layouts: list[int] = []
        self.started = threading.Event()

    def draft(self, page, on_lines=None):
        self.started.set()
        for line in (1, 2):  # each chunk told lets the drafting thread render one more page ahead
            if on_lines is not None:
                on_lines([OcrLine(f"line {line} of page {page.number}", None)])
        if page.number == 1:
            assert self.gate.wait(60), "the test never released the drafter"
        self.recognised[page.number] = LINES_A_PAGE
        return [Region("text", (0, 10 * i, 90, 10 * i + 8), f"line {i + 1} of page {page.number}", self.name)
                for i in range(LINES_A_PAGE)]

    def draft_layout(self, page):
        self.layouts.append(page.number)
        return unread_regions([("text", (0, 0, 90, 40)), ("figure", (0, 50, 90, 120))], self.name)


class Decoded:
    """A page whose decode has ended before its drafts came (``core.run.Decoded``)."""

    def __init__(self, drafts):
        self.drafts = drafts

    def drafted(self):
        return self.drafts.done()

    def finish(self):
        return self.drafts.result()

    def result_so_far(self):
        return []


def test_a_page_decoded_before_its_drafting_started_gets_its_layout_and_no_recognition():
    gate, events = threading.Event(), []
    drafter = CountingOcr(gate)
    ahead = DraftAhead(Document(3), [0, 1, 2], drafter, 72, ahead=2, beside=True, emit=events.append)
    first = ahead.next()
    assert drafter.started.wait(60)
    second = ahead.next()  # rendered once page 1's first lines came; page 1 still being read
    assert second.number == 2 and not first.drafts.done() and not second.drafts.done()

    saved = []
    saver = PageSaver(lambda page, result: saved.append(page.number), emit=events.append,
                      announce=lambda page, result: None)
    saver.save(first, Decoded(first.drafts))  # page 1's decode ends while its lines are read
    saver.save(second, Decoded(second.drafts))  # and page 2's before the drafter comes to it
    third = ahead.next()  # the decode goes on: page 3 is still decoding when the drafter reaches it
    assert third.number == 3 and isinstance(third.drafts, PendingDrafts) and not third.drafts.decode_ended()
    assert second.drafts.decode_ended() and not second.drafts.done()

    gate.set()  # the recogniser finishes page 1
    ahead.join()
    saver.wait()
    assert saved == [1, 2]
    assert drafter.recognised == {1: LINES_A_PAGE, 3: LINES_A_PAGE}, "page 2's lines were recognised"
    assert drafter.layouts == [2]
    layout = second.drafts.result()
    assert [r.label for r in layout] == ["text", "figure"]  # its boxes and figure, for the overlay and figures
    assert all(r.text == "" and r.extra["unread"] == UNREAD for r in layout)
    assert [r.text for r in third.drafts.result()] == [f"line {i + 1} of page 3" for i in range(LINES_A_PAGE)]
    announced = {e.page: e.regions for e in events if isinstance(e, RegionsDrafted)}
    assert announced[2] == layout and all(not r.extra for r in announced[1] + announced[3])


def test_pages_still_decoding_are_read_whole():
    gate = threading.Event()
    gate.set()
    drafter = CountingOcr(gate)
    ahead = DraftAhead(Document(3), [0, 1, 2], drafter, 72, ahead=2, beside=True, emit=lambda e: None)
    pages = [ahead.next() for _ in range(3)]
    ahead.join()
    assert drafter.recognised == {n: LINES_A_PAGE for n in (1, 2, 3)} and drafter.layouts == []
    assert all(not r.extra for p in pages for r in p.drafts.result())


def test_the_saver_tells_only_pending_drafts_and_a_page_with_drafts_saves_at_once():
    pending = PendingDrafts()
    from core.drafters.background import DraftJob
    from core.page_pipeline import DraftedPage

    pending.deliver(DraftJob.finished([]))
    saved = []
    saver = PageSaver(lambda page, result: saved.append(page.number), emit=lambda e: None)
    saver.save(DraftedPage(1, 1.0, 1.0, None, pending), Decoded(pending))
    finished = DraftJob.finished([])
    saver.save(DraftedPage(2, 1.0, 1.0, None, finished), Decoded(finished))  # a job: nothing to tell
    saver.wait()
    assert saved == [1, 2] and pending.decode_ended()


class TextLayer(DrafterBase):
    name = "textlayer"

    def draft(self, page):
        return [Region("text", (0, 0, 10, 10), "the page's own text", self.name)]


class Auto(DrafterBase):
    """Hands scans (odd pages) to OCR, the others to a text layer, as ``auto`` does."""

    name = "auto"

    def __init__(self, ocr):
        self.ocr, self.text = ocr, TextLayer()

    def choose(self, page):
        return self.ocr if page.number % 2 else self.text

    def draft(self, page):
        return self.choose(page).draft(page)


def test_a_layout_is_asked_of_the_ocr_that_reads_the_page_and_a_text_layer_drafts_as_ever():
    ocr = CountingOcr(threading.Event())
    auto = Auto(ocr)
    assert all(r.extra["unread"] for r in layout_of(auto, Page(0)))
    assert [r.text for r in layout_of(auto, Page(1))] == ["the page's own text"]
    assert ocr.recognised == {} and ocr.layouts == [1]
    told = []
    only = LayoutOnly(auto)
    assert only.name == "auto" and not only.drafts_elsewhere
    assert len(only.draft(Page(2), meanwhile=lambda: told.append("meanwhile"))) == 2 and told == ["meanwhile"]
