"""Beside a drafting process, the decode's pages are rendered and scan pages' turns decided outside
the decode's process (``core.drafters.render_process``), by default: PyMuPDF holds the interpreter
lock while it renders, and a scan's turn takes an ink profile or OCR, so on the decode's process's
drafting thread both took the lock from the decode between its passes. Counted, not timed: no
render and no turn of a page after the first runs in this process while the pages are prepared,
and the decode gets the pixels and turns that rendering here gives."""

from __future__ import annotations

import numpy as np
import pymupdf
import pytest

from core import documents
from core.documents import open_document
from core.draft_ahead import DraftAhead
from core.drafters import get_drafter, orientation
from tests.core.drafters.test_turned_pages import _scan

pytestmark = pytest.mark.drafting_process

DPI = 96


@pytest.fixture
def own_drafting_processes():
    """The drafting (and rendering) processes this test starts end with it."""
    yield
    from core.drafters import process

    for reader in process._shared.values():
        reader.close()
    process._shared.clear()


@pytest.fixture
def scans(tmp_path):
    """A slide scanned upright and one scanned sideways, in one document without a text layer."""
    pytest.importorskip("rapidocr")
    with pymupdf.open() as joined:
        for turn in (0, 90):
            with pymupdf.open(_scan(tmp_path / f"scan{turn}.pdf", turn)) as one:
                joined.insert_pdf(one)
        joined.save(tmp_path / "scans.pdf")
    return tmp_path / "scans.pdf"


def test_beside_a_drafting_process_the_decodes_pages_are_rendered_and_turned_elsewhere(
        scans, monkeypatch, own_drafting_processes):
    here = {"turned": set(), "rendered": set()}  # the pages' indices
    page_turn, pixmap_to_image = orientation.page_turn, documents.Page._pixmap_to_image

    def counted_turn(page):
        here["turned"].add(page.index)
        return page_turn(page)

    def counted_render(self, clip, dpi):
        here["rendered"].add(self.index)
        return pixmap_to_image(self, clip, dpi)

    monkeypatch.setattr(orientation, "page_turn", counted_turn)
    monkeypatch.setattr(documents.Page, "_pixmap_to_image", counted_render)
    with open_document(scans, rotate="auto") as document:
        ahead = DraftAhead(document, [0, 1], get_drafter("textlayer"), DPI, ahead=1, beside=True,
                           emit=lambda event: None)
        try:
            pages = [ahead.next(), ahead.next()]
            for page in pages:
                page.drafts.result()
        finally:
            ahead.stop()
            ahead.join()
        turns = dict(document.turns)
    # the first page, which the decode waits for before its first pass, alone
    assert here == {"turned": {0}, "rendered": {0}}, "the decode's process rendered or turned a later page"
    with open_document(scans, rotate="auto") as document:  # the same pages rendered here
        for index, page in enumerate(pages):
            want = document.page(index).render(DPI)
            assert turns[index] == document.page(index).turn == (0, 90)[index]
            assert page.image.size == want.size and np.array_equal(np.asarray(page.image), np.asarray(want))
            assert (page.width, page.height) == (document.page(index).width, document.page(index).height)
