"""In the drafting process, a page with no page expected after it (a document's last), after an
earlier page of its document was stopped, has its layout from its detected lines made on a thread
while its lines are recognised: a stop of its reading finds it made, and the drafts are those of
the layout made at the stop (real RapidOCR and layout model; the stop is the test's, after the
first lines, never timed)."""

from __future__ import annotations

import multiprocessing
import threading

import pytest

from core import tuning
from core.documents import open_document
from core.drafters import get_drafter
from core.drafters.process import DRAFTING_PROCESS_NAME
from core.drafters.rapidocr import RapidOCRDrafter
from tests.core.drafters.test_stop_figures import scans_pdf

PAGES = ["plain", "one figure", "after a short region"]


@pytest.fixture(scope="module")
def pdf(tmp_path_factory):
    return scans_pdf(tmp_path_factory.mktemp("beside") / "beside.pdf", PAGES)


def _stopped_drafts(pdf) -> list:
    drafter = get_drafter("rapidocr")
    out = []
    with open_document(pdf) as document:
        # a document's first page reads a sample of its lines whole; its stop shows the drafter
        # behind the decode, so the later pages make their layout beside their reading
        drafter.stop_when(lambda: True)
        try:
            drafter.draft(document.page(0))
        finally:
            drafter.stop_when(None)
        for index in range(1, len(PAGES)):
            told = []
            drafter.stop_when(lambda: bool(told))
            try:
                regions = drafter.draft(document.page(index), on_lines=told.append)
            finally:
                drafter.stop_when(None)
            assert any(r.extra.get("unread") for r in regions), "the page was read whole"
            out.append([(r.label, r.bbox, r.text, r.extra) for r in regions])
    return out


def test_a_stopped_last_page_finds_its_layout_made_beside_its_reading_and_drafts_the_same(pdf, monkeypatch):
    monkeypatch.setattr(multiprocessing.current_process(), "name", DRAFTING_PROCESS_NAME)
    made_on: list[str] = []
    layout = RapidOCRDrafter._unread_layout

    def counted(self, *args):
        made_on.append(threading.current_thread().name)
        return layout(self, *args)

    monkeypatch.setattr(RapidOCRDrafter, "_unread_layout", counted)
    monkeypatch.setattr(tuning, "STOP_LAYOUT_BESIDE", False)
    at_the_stop = _stopped_drafts(pdf)
    assert made_on == ["MainThread"] * len(PAGES)
    made_on.clear()
    monkeypatch.setattr(tuning, "STOP_LAYOUT_BESIDE", True)
    assert _stopped_drafts(pdf) == at_the_stop
    # the first page's stop finds nothing made: no earlier page showed the drafter behind
    assert made_on == ["MainThread"] + ["hsd-stop-layout"] * (len(PAGES) - 1), "the stop made the layout after the reading"
