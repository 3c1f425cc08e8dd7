"""A scan page's layout without its text (``RapidOCRDrafter.draft_layout``), as the drafting process
answers a ``layout`` request (``core.drafters.process._answer``) for a page whose decode has ended:
the detector and the layout model run, the recogniser reads no line; the page after it is still
prepared ahead; a page whose layout has a figure reads the lines its figures need (here, where the
figure covers every line, the whole page, as ``draft`` reads it); a text layer page is drafted as ever."""

from __future__ import annotations

import pymupdf
import pytest

from core.documents import open_document
from core.drafters import get_drafter, ocr_pipeline, scan_layout
from core.drafters.ocr_layout import UNREAD
from core.drafters.process import _answer, layout_of

SCANS = [
    ["A page decoded before its drafter came", "keeps its layout boxes", "for the overlay and figures,",
     "and no line of it is recognised."],
    ["The page after it is still decoding", "and is read whole."],
]


@pytest.fixture(scope="module")
def pdf(tmp_path_factory):
    """Two scans (images of typeset lines, no text layer) and a born-digital page."""
    folder = tmp_path_factory.mktemp("layout")
    out = pymupdf.open()
    for lines in SCANS + [["A text layer page", "is drafted from its own text."]]:
        source = pymupdf.open()
        page = source.new_page(width=360, height=220)
        for row, line in enumerate(lines):
            page.insert_text((30, 50 + 24 * row), line, fontsize=13, fontname="helv")
        if lines is not SCANS[0] and lines is not SCANS[1]:
            out.insert_pdf(source)
            continue
        scan = out.new_page(width=360, height=220)
        scan.insert_image(scan.rect, stream=page.get_pixmap(dpi=200).tobytes("png"))
    out.save(folder / "layout.pdf")
    return folder / "layout.pdf"


@pytest.fixture
def recognised(monkeypatch):
    """The number of line crops the recogniser is given, per call."""
    counts = []
    real = ocr_pipeline.OcrPipeline.recognise

    def recognise(self, found, tell=None, stopped=None):
        counts.append(len(found.crops))
        return real(self, found, tell, stopped)

    monkeypatch.setattr(ocr_pipeline.OcrPipeline, "recognise", recognise)
    return counts


class Connection:
    def send(self, message):
        raise AssertionError("a layout request sends no lines")


def _ask(what, pdf, drafter, opened, index, following=None):
    request = (what, str(pdf), None, index, False, "off", 0, following)
    return _answer(request, drafter, opened, Connection())


def test_a_layout_request_recognises_no_line_and_still_prepares_the_next_page(pdf, recognised):
    drafter, opened = get_drafter("rapidocr"), {}
    try:
        layout = _ask("layout", pdf, drafter, opened, 0, following=1)
        assert recognised == [], "the recogniser read lines of a page whose decode had ended"
        assert layout and all(r.text == "" and r.extra == {"unread": UNREAD} for r in layout)
        top = min(r.bbox[1] for r in layout)
        assert 25 < top < 50  # the boxes stand where the lines are, in points (the first line's: 37-50)
        read = _ask("draft", pdf, drafter, opened, 1)
    finally:
        if opened:
            opened["document"].close()
    assert len(recognised) == 1 and recognised[0] >= 2  # page 2 read whole, from its prepared detection
    assert "read whole" in " ".join(r.text for r in read) and not any(r.extra.get("unread") for r in read)
    with open_document(pdf) as document:  # the same drafts as page by page
        alone = get_drafter("rapidocr").draft(document.page(1))
    assert [r.to_dict() for r in read] == [r.to_dict() for r in alone]


def test_a_figure_covering_every_line_has_every_line_read(pdf, recognised, monkeypatch):
    monkeypatch.setattr(scan_layout, "unread_groups", lambda *a: [("picture", (20, 30, 300, 120))])
    with open_document(pdf) as document:
        page = document.page(0)
        whole = get_drafter("rapidocr").draft(page)
        layout = get_drafter("rapidocr").draft_layout(page)
    assert len(recognised) == 2
    assert [r.to_dict() for r in layout] == [r.to_dict() for r in whole]


def test_a_text_layer_page_is_drafted_as_ever(pdf, recognised):
    with open_document(pdf) as document:
        regions = layout_of(get_drafter("auto"), document.page(2))
    assert "own text" in " ".join(r.text for r in regions) and recognised == []
