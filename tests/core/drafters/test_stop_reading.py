"""A scan page whose decode ends while the drafting process reads it (``core.drafters.process``'s
``cut``, ``RapidOCRDrafter.stop_when``), with real RapidOCR: the lines read before the stop are
kept as regions, the rest of the page becomes layout-only regions (``extra["unread"]``) at their
places; a page whose layout has a figure reads what its figures need too; the next page is read
whole again."""

from __future__ import annotations

import pymupdf
import pytest

from core.documents import open_document
from core.drafters import get_drafter, scan_layout
from core.drafters.ocr_layout import UNREAD
from core.drafters.process import _answer

LINES = [f"Line {n} of the stopped page says {word}" for n, word in
         enumerate(["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel",
                    "india", "juliet", "kilo", "lima", "mike", "november"], start=1)]


@pytest.fixture(scope="module")
def pdf(tmp_path_factory):
    """Two scans of the same fourteen typeset lines (images, no text layer)."""
    folder = tmp_path_factory.mktemp("stop")
    source = pymupdf.open()
    text = source.new_page(width=400, height=460)
    for row, line in enumerate(LINES):
        text.insert_text((30, 40 + 28 * row), line, fontsize=13, fontname="helv")
    png = text.get_pixmap(dpi=200).tobytes("png")
    out = pymupdf.open()
    for _ in range(2):
        scan = out.new_page(width=400, height=460)
        scan.insert_image(scan.rect, stream=png)
    out.save(folder / "stop.pdf")
    return folder / "stop.pdf"


class Connection:
    """Records the early lines sent; the decode ends (``ended``) once the first are sent."""

    def __init__(self):
        self.lines = []
        self.ended = False

    def send(self, message):
        assert message[0] == "lines"
        self.lines.extend(line.text for line in message[1])
        self.ended = True


def _draft(pdf, drafter, opened, index, connection, stops=True):
    request = ("draft", str(pdf), None, index, True, "off", 0, None)
    return _answer(request, drafter, opened, connection, None, (lambda: connection.ended) if stops else None)


def _whole(pdf, index):
    with open_document(pdf) as document:
        return get_drafter("rapidocr").draft(document.page(index))


def test_a_page_stopped_mid_way_keeps_its_lines_read_and_the_rest_is_layout_only(pdf):
    drafter, opened = get_drafter("rapidocr"), {}
    try:
        # a document's first page reads a sample of its lines whole first (its script): read one
        # page before, so that the stopped page is a later page of the document
        _draft(pdf, drafter, opened, 0, Connection(), stops=False)
        connection = Connection()
        regions = _draft(pdf, drafter, opened, 1, connection)
        again = _draft(pdf, drafter, opened, 1, Connection(), stops=False)
    finally:
        if opened:
            opened["document"].close()
    read = [r for r in regions if not r.extra.get("unread")]
    unread = [r for r in regions if r.extra.get("unread")]
    text = " ".join(r.text for r in read)
    assert connection.lines and all(line in text for line in connection.lines)  # what was told is kept
    assert "november" not in text and unread, "the page was read past its decode's end"
    assert all(r.text == "" and r.extra == {"unread": UNREAD} for r in unread)
    # the unread regions stand where the lines not read are (below the first ones), in order
    assert min(r.bbox[1] for r in unread) > min(r.bbox[1] for r in read)
    assert max(r.bbox[3] for r in unread) > 40 + 28 * 12
    assert [r.bbox[1] for r in regions] == sorted(r.bbox[1] for r in regions)
    # the stop was for that page alone: the next request reads it whole, as page by page
    assert [r.to_dict() for r in again] == [r.to_dict() for r in _whole(pdf, 1)]


def test_a_page_whose_layout_has_a_figure_reads_what_the_figure_needs_and_no_more(pdf, monkeypatch):
    """Rows 5-7 a figure, rows 1-4 the text before it (its anchor, read whole), the rest after it:
    stopped after its first lines, the page reads the figure's lines and the text before it, and
    leaves the rows after the figure unread (``rapidocr.figure_lines``;
    ``test_stop_figures`` checks the exported Markdown on real figures)."""
    monkeypatch.setattr(scan_layout, "unread_groups", lambda *a: [
        ("text", (20, 20, 380, 130)), ("picture", (20, 135, 380, 215)), ("text", (20, 220, 380, 440))])
    drafter, opened = get_drafter("rapidocr"), {}
    try:
        _draft(pdf, drafter, opened, 0, Connection(), stops=False)
        connection = Connection()
        regions = _draft(pdf, drafter, opened, 1, connection)
    finally:
        if opened:
            opened["document"].close()
    text = " ".join(r.text for r in regions if not r.extra.get("unread"))
    assert all(line in text for line in LINES[:7]), "the figure or the text before it was not read"
    assert not any(line in text for line in LINES[7:]) and any(r.extra.get("unread") for r in regions)
    assert len(connection.lines) < 7  # the lines read for the figure are not sent to the ended decode


def test_a_documents_first_page_stopped_at_once_still_reads_its_sample(pdf):
    drafter, opened = get_drafter("rapidocr"), {}
    connection = Connection()
    connection.ended = True  # the decode ended before the recogniser began
    try:
        regions = _draft(pdf, drafter, opened, 0, connection)
    finally:
        if opened:
            opened["document"].close()
    read = [r for r in regions if not r.extra.get("unread")]
    assert read and any(r.extra.get("unread") for r in regions)
    assert drafter._ocr_engine().squeeze.learned  # the document's script is known from the sample
