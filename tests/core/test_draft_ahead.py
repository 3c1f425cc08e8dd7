"""Drafting ahead: one thread owns the document, how far it runs ahead is bounded, a page reaches
the decode rendered (beside) or drafted (drafter first), and nothing waits for ever."""

from __future__ import annotations

import threading
import time

import pytest
from PIL import Image

from core import tuning
from core.draft_ahead import DraftAhead
from core.drafters.base import DrafterBase, Region
from core.errors import CancelledError
from core.events import PageDrafting, RegionsDrafted


class Page:
    width, height = 100.0, 140.0

    def __init__(self, index, log):
        self.index, self.number, self.log = index, index + 1, log

    def render(self, dpi):
        self.log.append(("render", self.number, threading.get_ident()))
        return Image.new("RGB", (50, 70), "white")


class Document:
    def __init__(self, pages: int, broken: tuple[int, ...] = ()):
        self.count, self.broken, self.log = pages, broken, []

    def page(self, index):
        self.log.append(("page", index + 1, threading.get_ident()))
        if index + 1 in self.broken:
            raise ValueError("cannot be read")
        return Page(index, self.log)


class Drafter(DrafterBase):
    name = "rapidocr"

    def __init__(self, log, gate: threading.Event | None = None):
        self.log, self.gate = log, gate
        self.started = threading.Event()

    def draft(self, page):
        self.started.set()
        if self.gate is not None:
            self.gate.wait(tuning.PATIENCE_SECONDS)
        self.log.append(("draft", page.number, threading.get_ident()))
        return [Region("text", (0, 0, 10, 10), f"page {page.number}", "rapidocr")]


def _drafted(log) -> list[int]:
    return [n for what, n, _ in log if what == "draft"]


def _wait_for(condition):
    end = time.monotonic() + tuning.PATIENCE_SECONDS  # a busy machine's threads may wait long for a core
    while not condition() and time.monotonic() < end:
        time.sleep(0.01)
    assert condition()


def test_one_thread_other_than_the_decode_touches_the_document():
    doc, events = Document(3), []
    ahead = DraftAhead(doc, [0, 1, 2], Drafter(doc.log), 72, ahead=2, beside=True, emit=events.append)
    pages = [ahead.next() for _ in range(3)]
    ahead.join()
    assert [p.number for p in pages] == [1, 2, 3] and all(p.error is None for p in pages)
    assert all(p.drafts.result()[0].text == f"page {p.number}" for p in pages)
    threads = {thread for _, _, thread in doc.log}
    assert len(threads) == 1 and threading.get_ident() not in threads


def test_beside_the_decode_at_most_ahead_pages_wait():
    doc = Document(6)
    ahead = DraftAhead(doc, list(range(6)), Drafter(doc.log), 72, ahead=2, beside=True, emit=lambda e: None)
    _wait_for(lambda: len(_drafted(doc.log)) == 3)  # the first page and two more, while the model loads
    time.sleep(0.2)
    assert _drafted(doc.log) == [1, 2, 3]
    assert ahead.next().number == 1  # page 1 decodes: 2 and 3 wait
    time.sleep(0.2)
    assert _drafted(doc.log) == [1, 2, 3]
    assert ahead.next().number == 2  # the decode is free again: page 4 may be prepared
    _wait_for(lambda: _drafted(doc.log) == [1, 2, 3, 4])
    ahead.stop()
    ahead.join()
    assert _drafted(doc.log) == [1, 2, 3, 4]


def test_drafter_first_drafts_each_page_when_the_decode_asks():
    doc = Document(3)
    ahead = DraftAhead(doc, [0, 1, 2], Drafter(doc.log), 72, ahead=0, beside=False, emit=lambda e: None)
    _wait_for(lambda: _drafted(doc.log) == [1])  # the first page while the model loads
    first = ahead.next()
    assert first.drafts.done() and first.seconds["draft"] >= 0
    time.sleep(0.2)
    assert _drafted(doc.log) == [1], "nothing drafts while a page decodes"
    assert ahead.next().drafts.done() and _drafted(doc.log) == [1, 2]
    ahead.stop()
    ahead.join()


def test_beside_a_page_decodes_before_its_drafts_which_are_announced_first():
    doc, gate, events = Document(1), threading.Event(), []
    ahead = DraftAhead(doc, [0], Drafter(doc.log, gate), 72, ahead=2, beside=True, emit=events.append)
    page = ahead.next()
    assert page.image is not None and not page.drafts.done()
    assert [type(e) for e in events] == [PageDrafting] and events[0].drafter == "rapidocr"
    gate.set()
    regions = page.drafts.result()
    assert isinstance(events[-1], RegionsDrafted) and events[-1].regions == regions
    assert events[-1].seconds >= 0 and page.drafts.seconds == events[-1].seconds
    ahead.join()


def test_a_page_that_cannot_be_read_is_handed_on_as_failed():
    doc = Document(3, broken=(2,))
    ahead = DraftAhead(doc, [0, 1, 2], Drafter(doc.log), 72, ahead=2, beside=False, emit=lambda e: None)
    pages = [ahead.next() for _ in range(3)]
    assert [p.error for p in pages] == [None, "ValueError: cannot be read", None]
    assert pages[1].image is None and pages[1].drafts.result() == []
    ahead.join()


def test_a_stopped_run_leaves_the_decode_waiting_for_nothing():
    doc, gate = Document(2), threading.Event()
    drafter = Drafter(doc.log, gate)
    ahead = DraftAhead(doc, [0, 1], drafter, 72, ahead=0, beside=False, emit=lambda e: None)
    assert drafter.started.wait(tuning.PATIENCE_SECONDS)
    ahead.stop()
    gate.set()
    ahead.join()
    assert _drafted(doc.log) == [1]  # the page under way is finished, no other is started
    ahead.next()  # the page drafted before the stop is still handed over
    with pytest.raises(CancelledError):
        ahead.next()


def test_a_drafter_warning_is_a_notice_of_its_page():
    import warnings

    from core.errors import HSDWarning
    from core.events import Notice

    class Warns(Drafter):
        def draft(self, page):
            warnings.warn(HSDWarning("OCR drafts without tables"))
            return []

    doc, events = Document(1), []
    ahead = DraftAhead(doc, [0], Warns(doc.log), 72, ahead=0, beside=False, emit=events.append)
    ahead.next()
    ahead.join()
    assert Notice("OCR drafts without tables", page=1) in events


class LineDrafter(Drafter):
    """Tells its page's first line, then waits for ``gate`` (the recogniser still reading)."""

    streams_lines = True

    def draft(self, page, on_lines=None):
        from core.drafters.base import OcrLine

        if on_lines is not None:
            on_lines([OcrLine(f"line of page {page.number}", None)])
        return super().draft(page)


def test_beside_the_next_page_is_rendered_while_the_drafter_reads_this_one():
    doc, gate = Document(3), threading.Event()
    ahead = DraftAhead(doc, [0, 1, 2], LineDrafter(doc.log, gate), 72, ahead=1, beside=True, emit=lambda e: None)
    first = ahead.next()
    _wait_for(lambda: [line.text for line in first.drafts.early_lines()] == ["line of page 1"])
    second = ahead.next()  # rendered once page 1's first lines came, page 1 still drafting
    assert second.number == 2 and second.image is not None and not first.drafts.done()
    assert _drafted(doc.log) == [] and ("render", 3, doc.log[0][2]) not in doc.log  # one page ahead at most
    gate.set()
    assert first.drafts.result()[0].text == "page 1" and second.drafts.result()[0].text == "page 2"
    assert ahead.next().drafts.result()[0].text == "page 3"
    ahead.join()
    assert len({thread for _, _, thread in doc.log}) == 1


def test_a_page_rendered_ahead_of_a_stop_leaves_the_decode_waiting_for_nothing():
    doc, gate = Document(2), threading.Event()
    ahead = DraftAhead(doc, [0, 1], LineDrafter(doc.log, gate), 72, ahead=1, beside=True, emit=lambda e: None)
    ahead.next()
    second = ahead.next()
    ahead.stop()
    gate.set()
    ahead.join()
    assert _drafted(doc.log) == [1]
    assert second.drafts.result() == [] and second.drafts.error == "drafting did not run"


class ElsewhereDrafter(Drafter):
    """Drafts 'in a process': it is sent the page, then the caller's ``meanwhile`` runs."""

    drafts_elsewhere = True

    def draft(self, page, on_lines=None, meanwhile=None, waiting=None):
        self.log.append(("sent", page.number, threading.get_ident()))
        if meanwhile is not None:
            meanwhile()
        return super().draft(page)


def test_a_page_drafted_elsewhere_is_rendered_after_it_is_sent():
    doc = Document(2)
    ahead = DraftAhead(doc, [0, 1], ElsewhereDrafter(doc.log), 72, ahead=0, beside=True, emit=lambda e: None)
    assert [p.drafts.result()[0].text for p in (ahead.next(), ahead.next())] == ["page 1", "page 2"]
    ahead.join()
    steps = [(what, n) for what, n, _ in doc.log if what != "page"]
    assert steps == [("sent", 1), ("render", 1), ("draft", 1), ("sent", 2), ("render", 2), ("draft", 2)]


def test_a_page_drafted_here_is_rendered_before_it_is_drafted():
    doc = Document(1)
    ahead = DraftAhead(doc, [0], Drafter(doc.log), 72, ahead=0, beside=True, emit=lambda e: None)
    page = ahead.next()
    assert page.drafts.result()[0].text == "page 1"
    ahead.join()
    assert [what for what, _, _ in doc.log if what != "page"] == ["render", "draft"]
    assert page.seconds["render"] >= 0 and page.seconds["draft"] >= 0


class SlowElsewhere(Drafter):
    """Reads 'in a process' and holds page 1 until ``gate`` opens, looking up (``waiting``) as the
    drafting process's reader does while no answer has come; counts the look-ups made while the
    decode waited for a page."""

    drafts_elsewhere = True

    def __init__(self, log, gate):
        super().__init__(log)
        self.held, self.ahead, self.looked_up = gate, None, 0

    def draft(self, page, on_lines=None, meanwhile=None, waiting=None):
        if meanwhile is not None:
            meanwhile()
        while page.index == 0 and not self.held.wait(0.01):
            if waiting is not None:
                waiting()
                if self.ahead is not None and self.ahead._decode_waits.is_set():
                    self.looked_up += 1
        return super().draft(page)


def test_beside_a_slow_drafter_the_decode_gets_every_page_without_waiting_for_it():
    """The drafter holds page 1; the decode still gets all five pages rendered, one at a time
    (at most ``ahead`` rendered pages wait), and page 1's drafts join it when they come."""
    doc, gate = Document(5), threading.Event()
    drafter = SlowElsewhere(doc.log, gate)
    ahead = DraftAhead(doc, list(range(5)), drafter, 72, ahead=1, beside=True, emit=lambda e: None)
    drafter.ahead = ahead
    pages = []
    decode = threading.Thread(target=lambda: pages.extend(ahead.next() for _ in range(5)), daemon=True)
    decode.start()
    decode.join(tuning.PATIENCE_SECONDS)
    if decode.is_alive():  # the decode waits for the drafter: let it go, then fail
        gate.set()
    assert [p.number for p in pages] == [1, 2, 3, 4, 5]
    assert _drafted(doc.log) == [] and not any(p.drafts.done() for p in pages)
    gate.set()
    assert [p.drafts.result()[0].text for p in pages] == [f"page {n}" for n in range(1, 6)]
    ahead.stop()
    ahead.join()


def test_beside_a_slow_drafter_the_decodes_next_page_is_rendered_before_it_asks():
    """The drafter holds page 1 and tells no lines: the page the decode asks for next is rendered
    while it decodes the one before, not once it waits (its render, a scan's turn decided, would
    be the decode's wait), and one page at a time beyond the decode."""
    doc, gate = Document(3), threading.Event()
    drafter = SlowElsewhere(doc.log, gate)
    ahead = DraftAhead(doc, [0, 1, 2], drafter, 72, ahead=1, beside=True, emit=lambda e: None)
    drafter.ahead = ahead
    first = ahead.next()
    _wait_for(lambda: [n for what, n, _ in doc.log if what == "render"] == [1, 2])
    assert not first.drafts.done()
    second = ahead.next()
    _wait_for(lambda: [n for what, n, _ in doc.log if what == "render"] == [1, 2, 3])
    assert second.number == 2
    gate.set()
    assert [p.drafts.result()[0].text for p in (first, second, ahead.next())] == ["page 1", "page 2", "page 3"]
    ahead.stop()
    ahead.join()


def test_beside_a_slow_drafter_the_decode_gets_pages_up_to_beyond_drafter_and_no_further():
    doc, gate = Document(5), threading.Event()
    drafter = SlowElsewhere(doc.log, gate)
    ahead = DraftAhead(doc, list(range(5)), drafter, 72, ahead=1, beside=True, emit=lambda e: None,
                       beyond_drafter=1)
    drafter.ahead = ahead
    first, second = ahead.next(), ahead.next()  # page 2 rendered while page 1's drafter reads
    assert (first.number, second.number) == (1, 2) and not first.drafts.done()
    got = []
    decode = threading.Thread(target=lambda: got.append(ahead.next()))
    decode.start()
    _wait_for(lambda: drafter.looked_up >= 5)  # the thread looked up while the decode waited
    assert got == [] and [n for what, n, _ in doc.log if what == "render"] == [1, 2]
    gate.set()
    decode.join(5)
    assert got[0].number == 3 and [p.drafts.result()[0].text for p in (first, second)] == ["page 1", "page 2"]
    ahead.stop()
    ahead.join()


class OrderedReader:
    """A reader that is told the run's order of pages and when to stop reading ahead (as the
    drafting process is, ``core.drafters.process.ProcessDrafter``), drafting with ``drafter``."""

    drafts_elsewhere = streams_lines = False
    name = "rapidocr"

    def __init__(self, drafter):
        self.drafter, self.orders, self.stopped = drafter, [], []

    def draft(self, page):
        return self.drafter.draft(page)

    def choose(self, page):
        return self

    def read_in_order(self, document, indices):
        self.orders.append((document, list(indices)))

    def stop_ahead(self, document):
        self.stopped.append(document)


def test_the_reader_is_told_the_runs_order_and_a_stop_at_once(monkeypatch):
    """A stopped run tells its reader at once, while the page being drafted is still read (its
    look-ahead stops then, not after that page); a run that ends tells it too."""
    gate = threading.Event()
    doc = Document(3)
    drafter = Drafter(doc.log, gate)
    reader = OrderedReader(drafter)
    monkeypatch.setattr("core.draft_ahead.reader_for", lambda d: reader)
    ahead = DraftAhead(doc, [2, 0, 1], drafter, 72, ahead=1, beside=True, emit=lambda e: None)
    assert reader.orders == [(doc, [2, 0, 1])]
    assert drafter.started.wait(tuning.PATIENCE_SECONDS)
    ahead.stop()
    assert reader.stopped == [doc] and not _drafted(doc.log)  # told while page 3 is still being read
    gate.set()
    ahead.join()
    finished = DraftAhead(Document(1), [0], Drafter([]), 72, ahead=0, beside=False, emit=lambda e: None)
    finished.next()
    finished.join()
    assert reader.stopped[-1] is finished.document
