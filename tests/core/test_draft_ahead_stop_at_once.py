"""A page read elsewhere (the drafting process) is told to stop the moment its decode ends, on the
thread that ends it: not when the drafting thread next looks up, which it does only between the
drafter's answers and its renders ahead. A stop is told for the page whose request is out and no
other. The drafter's progress is released by the test, never timed."""

from __future__ import annotations

import threading

from core import tuning
from core.drafters.base import DrafterBase, OcrLine, Region
from tests.core.test_draft_ahead_stop import first_page_decoded_while_read
from tests.core.test_draft_ahead_unread import Decoded

LINES_A_PAGE = 4


class BusyElsewhere(DrafterBase):
    """A drafter reading in a process of its own whose drafting thread does not look up while page 1
    is read (``waiting`` is never called, as while it renders the pages ahead): page 1 is held
    until the test releases it (``go``); the stops told are recorded with the page read then."""

    name = "rapidocr"
    streams_lines = True
    drafts_elsewhere = True

    def __init__(self):
        self.go = threading.Event()
        self.reading = threading.Event()
        self.stops: list[int] = []
        self._page = None

    def stop_reading(self):
        self.stops.append(self._page)

    def draft(self, page, on_lines=None, meanwhile=None, waiting=None):
        self._page = page.number
        if meanwhile is not None:
            meanwhile()
        on_lines([OcrLine(f"line 1 of page {page.number}", None)])
        self.reading.set()
        if page.number == 1:
            assert self.go.wait(tuning.PATIENCE_SECONDS), "the test never released the drafter"
        return [Region("text", (0, 10 * i, 90, 10 * i + 8), f"line {i + 1} of page {page.number}", self.name)
                for i in range(LINES_A_PAGE)]


def test_the_decodes_end_stops_the_reading_at_once_and_only_of_its_own_page():
    drafter = BusyElsewhere()
    ahead, first, saver = first_page_decoded_while_read(drafter)
    assert drafter.stops == [1], "the stop waited for the drafting thread to look up"
    drafter.go.set()
    first.drafts.result()
    second = ahead.next()
    second.drafts.result()  # page 2, read while its decode runs, is never stopped
    first.drafts.end_decode()  # told again after its drafts came: nothing more to stop
    ahead.join()
    assert drafter.stops == [1]
    saver.save(second, Decoded(second.drafts))
    saver.wait()
    assert drafter.stops == [1]
