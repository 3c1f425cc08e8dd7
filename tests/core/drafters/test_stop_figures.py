"""A scan page with figures whose decode ended before or while the OCR read it (real RapidOCR and
layout model): only what its figures need is read (``rapidocr.figure_lines``), the rest of the page
is layout only, and the exported Markdown with figure links is byte for byte a whole read's: the
same figures, numbered alike (a link is numbered by its region's place), placed after the same
text (``core.export.page_markdown``)."""

from __future__ import annotations

import pymupdf
import pytest

from core.documents import open_document
from core.drafters import get_drafter
from core.export import figure_crops, figure_link, page_markdown
from core.results import FIGURE_LABELS, PageResult

PARAGRAPH = ["The committee reviewed the annual figures of the northern district",
             "and found that the harbour records had been revised twice since",
             "the spring, with the final survey published in the autumn report."]
#: the scans after a plain first page (a document's first page reads a sample of its lines whole)
PAGES = ["plain", "one figure", "two figures", "figure first", "after a short region"]


def _chart(page, rect, labels):
    """A bar chart with its tick labels (figure content)."""
    x0, y0, x1, y1 = rect
    page.draw_rect(pymupdf.Rect(rect), width=0.5)
    base, top = y1 - 22, y0 + 11
    page.draw_line((x0 + 20, base), (x1 - 8, base), width=0.6)
    step = (x1 - x0 - 30) / len(labels)
    for k, label in enumerate(labels):
        bx = x0 + 24 + k * step
        height = (0.4, 0.9, 0.6, 0.75, 0.5)[k % 5]
        page.draw_rect(pymupdf.Rect(bx, base - (base - top) * height, bx + step * 0.6, base), width=0.3,
                       fill=(0.55, 0.55, 0.55))
        page.insert_text((bx, base + 13), label, fontsize=9, fontname="helv")


def _text(page, y, lines, size=11):
    for line in lines:
        page.insert_text((60, y), line, fontsize=size, fontname="helv")
        y += size * 1.45
    return y + 8


def _typeset(kind: str) -> bytes:
    source = pymupdf.open()
    page = source.new_page(width=500, height=700)
    if kind == "figure first":
        _chart(page, (80, 40, 420, 200), ["2015", "2016", "2017", "2018"])
        y = _text(page, 230, ["Figure 1. Harbour records by year."], 10)
        _text(page, y, PARAGRAPH + PARAGRAPH)
    else:
        y = _text(page, 60, ["Harbour Survey"], 16)
        y = _text(page, y, PARAGRAPH)
        y = _text(page, y, PARAGRAPH[::-1])
        if kind == "after a short region":
            y = _text(page, y, ["Data"], 13)
        if kind != "plain":
            _chart(page, (80, y, 420, y + 160), ["2015", "2016", "2017", "2018", "2019"])
            y = _text(page, y + 190, ["Figure 1. Harbour records by year."], 10)
        y = _text(page, y, PARAGRAPH)
        if kind == "two figures":
            _chart(page, (80, y, 420, y + 150), ["North", "South", "East"])
            y = _text(page, y + 180, ["Figure 2. Records by district."], 10)
        _text(page, y, PARAGRAPH[1:])
    return page.get_pixmap(dpi=200).tobytes("png")


def scans_pdf(path, kinds: list[str]):
    """A PDF at ``path`` of scans (images, no text layer) of the pages ``kinds`` (``_typeset``)."""
    out = pymupdf.open()
    for kind in kinds:
        scan = out.new_page(width=500, height=700)
        scan.insert_image(scan.rect, stream=_typeset(kind))
    out.save(path)
    return path


@pytest.fixture(scope="module")
def pdf(tmp_path_factory):
    return scans_pdf(tmp_path_factory.mktemp("figures") / "figures.pdf", PAGES)


def _markdown(regions, text: str, image, number: int) -> str:
    """The page's exported Markdown: ``text`` (the decode's) with links to the figures cropped
    from ``regions``, as ``core.export.DocumentOutput`` writes it."""
    result = PageResult(page=number, width=500.0, height=700.0, markdown=text, regions=regions, region_stats=[],
                        region_outputs=[], spans=[], stats=None)
    links = {i: figure_link("figures_images", number, i) for i in figure_crops(result, image)}
    return page_markdown(result, links)


@pytest.fixture(scope="module")
def drafts(pdf):
    """Per page with figures: (the page image, a whole read's regions, a layout request's (its
    decode ended before its drafting began), a read stopped after its first lines)."""
    whole, stopping = get_drafter("rapidocr"), get_drafter("rapidocr")
    out = {}
    with open_document(pdf) as document:
        whole.draft(document.page(0))
        stopping.draft(document.page(0))
        for index, kind in enumerate(PAGES[1:], start=1):
            page = document.page(index)
            told = []
            stopping.stop_when(lambda: bool(told))
            try:
                stopped = stopping.draft(page, on_lines=told.append)
            finally:
                stopping.stop_when(None)
            out[kind] = (page.render(dpi=72), whole.draft(page), stopping.draft_layout(page), stopped)
    return out


@pytest.mark.parametrize("kind", PAGES[1:])
def test_a_figure_page_not_read_whole_exports_the_markdown_of_a_whole_read(drafts, kind):
    image, whole, layout_only, stopped = drafts[kind]
    figures = [i for i, r in enumerate(whole) if r.label in FIGURE_LABELS]
    assert figures, "the layout found no figure on the generated page"
    # the decode's text: the page's text as a whole read drafts it (the target's at tau 1)
    text = "\n\n".join(r.text for r in whole if r.text and r.label not in FIGURE_LABELS)
    expected = _markdown(whole, text, image, 2)
    assert expected.count("![Figure") == len(figures)
    for regions in (layout_only, stopped):
        assert any(r.extra.get("unread") for r in regions), "the page was read whole"
        assert _markdown(regions, text, image, 2) == expected
