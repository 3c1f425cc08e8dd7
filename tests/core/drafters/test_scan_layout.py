"""core.drafters.scan_layout: PyMuPDF's layout model over OCR lines on a two-column scan."""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest

from core.drafters.layout import TextLine
from core.drafters.layout_check import LayoutReport
from core.drafters.scan_layout import assign_lines, page_regions

TITLE = "Notes on River Transport"
LEFT = ["Barges carried most of the grain", "down the river in the autumn, when",
        "the water was high enough for the", "heavy boats to pass the shallows."]
RIGHT = ["In the spring the roads were used", "instead, and carts brought timber",
         "from the hills to the small town", "markets along the eastern bank."]
WIDTH, HEIGHT = 500, 400


def two_column_lines() -> list[TextLine]:
    """The lines of a page with a title over two columns, as OCR would box them."""
    lines = [TextLine((40, 40, 300, 62), TITLE, 18.0)]
    for i, (left, right) in enumerate(zip(LEFT, RIGHT)):
        y = 100 + 16 * i
        lines.append(TextLine((40, y, 235, y + 13), left, 10.5))
        lines.append(TextLine((265, y, 460, y + 13), right, 10.5))
    return lines


def test_groups_keep_model_order_and_classes():
    lines = two_column_lines()
    groups = [("section-header", (38, 38, 302, 64)), ("text", (38, 98, 237, 166)),
              ("text", (263, 98, 462, 166)), ("page-footer", (230, 370, 270, 382))]
    lines.append(TextLine((240, 371, 260, 381), "7", 9.0))
    regions = page_regions(groups, lines, [], WIDTH, HEIGHT, source="test")
    assert [r.label for r in regions] == ["title", "text", "text", "page_number"]
    assert regions[0].text.startswith("#") and regions[0].text.endswith(TITLE)
    assert regions[1].text.startswith("Barges") and regions[2].text.startswith("In the spring")


def test_loose_lines_slot_in_above_the_region_below_them():
    lines = two_column_lines()
    groups = [("text", (38, 98, 237, 166)), ("text", (263, 98, 462, 166))]
    members, loose = assign_lines(lines, groups)
    assert [ln.text for ln in loose] == [TITLE] and len(members[0]) == len(members[1]) == 4
    regions = page_regions(groups, lines, [], WIDTH, HEIGHT, source="test")
    assert regions[0].text.endswith(TITLE) and regions[1].text.startswith("Barges")


def test_tables_take_their_groups_place():
    lines = two_column_lines()
    groups = [("text", (38, 98, 237, 166)), ("table", (263, 98, 462, 166))]
    table = ((263, 98, 462, 166), "<table><tr><td>x</td></tr></table>")
    left_only = [ln for ln in lines if ln.bbox[0] < 250]
    regions = page_regions(groups, left_only, [table], WIDTH, HEIGHT, source="test")
    assert [r.label for r in regions][-2:] == ["text", "table"]


@pytest.fixture(scope="module")
def model_groups():
    pytest.importorskip("pymupdf.layout")
    from PIL import Image

    from core.drafters.scan_layout import layout_groups

    doc = pymupdf.open()
    page = doc.new_page(width=WIDTH, height=HEIGHT)
    lines = two_column_lines()
    for line in lines:
        page.insert_text((line.bbox[0], line.bbox[3] - 2), line.text, fontsize=line.size,
                         fontname="hebo" if line.text == TITLE else "helv")
    pix = page.get_pixmap(dpi=144)
    image = Image.frombytes("RGB", (pix.width, pix.height), pix.samples)
    return layout_groups(WIDTH, HEIGHT, image, lines), lines


def test_model_reads_a_two_column_scan_column_by_column(model_groups):
    groups, lines = model_groups
    assert groups, "the layout model found nothing"
    regions = page_regions(groups, lines, [], WIDTH, HEIGHT, source="test")
    text = "\n".join(r.text for r in regions)
    assert text.index(TITLE) < text.index("Barges") < text.index("heavy boats") < text.index("In the spring")
    assert text.index("In the spring") < text.index("markets along")
    title = next(r for r in regions if TITLE in r.text)
    assert title.label == "title" and title.text.startswith("#")
    assert all(r.bbox[0] >= 0 and r.bbox[2] <= WIDTH for r in regions)


def test_ocr_drafter_uses_the_model(tmp_path):
    pytest.importorskip("pymupdf.layout")
    pytest.importorskip("rapidocr")
    from core.documents import open_document
    from core.drafters.rapidocr import RapidOCRDrafter

    doc = pymupdf.open()
    page = doc.new_page(width=WIDTH, height=HEIGHT)
    for line in two_column_lines():
        page.insert_text((line.bbox[0], line.bbox[3] - 2), line.text, fontsize=line.size,
                         fontname="hebo" if line.text == TITLE else "helv")
    page.get_pixmap(dpi=200).save(tmp_path / "page.png")
    with open_document(tmp_path / "page.png") as image_doc:
        regions = RapidOCRDrafter(layout="pymupdf", tables=False).draft(image_doc.page(0))
    text = " ".join(r.text for r in regions)
    assert text.index("Barges") < text.index("shallows") < text.index("spring") < text.index("eastern bank")


def test_unknown_layout_is_refused():
    from core.drafters.rapidocr import RapidOCRDrafter

    with pytest.raises(ValueError):
        RapidOCRDrafter(layout="yolo")


def test_xycut_order_reads_columns_under_a_full_width_title():
    lines = two_column_lines()
    # groups listed right column first: the XY-cut order puts the title, then left, then right
    groups = [("text", (263, 98, 462, 166)), ("text", (38, 98, 237, 166)), ("title", (38, 38, 302, 64))]
    regions = page_regions(groups, lines, [], WIDTH, HEIGHT, source="test", order="xycut")
    assert [r.text[:6] for r in regions] == ["# " + TITLE[:4], "Barges", "In the"]


def _chars(doc) -> list[tuple[str, tuple]]:
    """Every character the page shows, with its origin and box rounded to 1/100 point."""
    out = []
    for block in doc[0].get_text("rawdict")["blocks"]:
        for line in block.get("lines", ()):
            for span in line["spans"]:
                for ch in span["chars"]:
                    out.append((ch["c"], tuple(round(v, 2) for v in (*ch["origin"], *ch["bbox"]))))
    return out


def test_text_page_writes_what_a_line_at_a_time_writes():
    """The lines' page is written in one go with the font's glyph widths measured once for the
    process (``_reuse_glyph_widths``): its characters stand exactly where writing each line on its
    own, with PyMuPDF measuring the font afresh, puts them (the layout model reads them)."""
    pytest.importorskip("pymupdf.layout")
    from core.drafters import scan_layout
    from core.drafters.scan_layout import load_model, text_page

    load_model()
    _FONT = scan_layout._FONT
    lines = two_column_lines() + [TextLine((40, 200, 300, 214), "中文的行 mixed 한국어 ｶﾀｶﾅ ﬁ", 11.0),
                                  TextLine((40, 230, 200, 242), "第二行：数字 12.5%", 10.0)]
    reference = pymupdf.open()
    page = reference.new_page(width=WIDTH, height=HEIGHT)
    page.insert_font(fontname="ocr", fontbuffer=_FONT.buffer)
    for line in lines:
        rect = pymupdf.Rect(line.bbox)
        stretch = pymupdf.Matrix(rect.width / _FONT.text_length(line.text, rect.height), 1)
        page.insert_text(rect.bl + (0, -0.2 * rect.height), line.text, fontsize=rect.height, fontname="ocr",
                         morph=(rect.bl, stretch), render_mode=3)
    expected = _chars(reference)
    assert len(expected) > 100
    for _ in range(2):  # the first page measures the widths, the second reuses them
        doc = text_page(WIDTH, HEIGHT, None, lines)
        assert _chars(doc) == expected
        doc.close()


def test_text_length_is_the_fonts_own_to_the_last_bit():
    """Each character's advance is measured once for the process and summed in the text's order:
    the width the lines are stretched to is exactly the one PyMuPDF computes, first call or later."""
    pytest.importorskip("pymupdf.layout")
    from core.drafters import scan_layout
    from core.drafters.scan_layout import load_model, text_length

    load_model()
    font = scan_layout._FONT
    texts = [TITLE, *LEFT, "中文的行 mixed 한국어 ｶﾀｶﾅ ﬁ", "第二行：数字 12.5%", "x", "ÄÖÜ äöü ß € ∑ √ ≠ — “quoted”",
             "\u0301\u200b\U0001f600 tail"]
    for size in (10.5, 13, 7.25, 1e-3):
        for text in texts + texts[::-1]:
            assert text_length(text, size) == font.text_length(text, size)


def _paragraph_lines(x: float, top: float, words: str) -> list[TextLine]:
    """Three 10.5 pt lines of a paragraph in a 195 pt column at ``x``, from ``top``."""
    return [TextLine((x, top + 16 * i, x + 195, top + 16 * i + 13), f"{words} line {i + 1} of the paragraph", 10.5)
            for i in range(3)]


def test_a_model_order_that_reads_across_two_columns_is_read_column_by_column():
    """The layout model sorted two columns' paragraphs by their tops (left, right, left, ...): the
    drafts would read across the columns. The check sees the order step sideways between
    paragraphs that stand side by side and reads the regions in XY-cut's order, and says so."""
    lines, groups = [], []
    for k in range(3):
        for x, top, name in ((40, 100 + 60 * k, f"Left {k + 1}"), (265, 110 + 60 * k, f"Right {k + 1}")):
            lines += _paragraph_lines(x, top, name)
            groups.append(("text", (x - 2, top - 2, x + 197, top + 47)))
    report = LayoutReport()
    regions = page_regions(groups, lines, [], WIDTH, HEIGHT, source="test", report=report)
    assert [r.text.split(" line")[0] for r in regions] == ["Left 1", "Left 2", "Left 3", "Right 1", "Right 2", "Right 3"]
    assert report.interleaved_order == 3 and report.summary() == {"interleaved_order": 3}  # L1->R1, L2->R2, L3->R3
    # The same groups in column order are left as the model gave them.
    report = LayoutReport()
    by_column = groups[0::2] + groups[1::2]
    regions = page_regions(by_column, lines, [], WIDTH, HEIGHT, source="test", report=report)
    assert [r.text.split(" line")[0] for r in regions][:4] == ["Left 1", "Left 2", "Left 3", "Right 1"]
    assert not report.repaired


def test_a_form_read_row_by_row_keeps_the_model_order():
    """Short fields side by side (a form's label and value) are read row by row: not paragraphs."""
    lines, groups = [], []
    for k, (label, value) in enumerate((("Name", "Ada Lovelace"), ("Born", "10 December 1815"), ("City", "London"))):
        y = 100 + 20 * k
        lines += [TextLine((40, y, 120, y + 13), label, 10.5), TextLine((265, y, 400, y + 13), value, 10.5)]
        groups += [("text", (38, y - 2, 122, y + 15)), ("text", (263, y - 2, 402, y + 15))]
    report = LayoutReport()
    regions = page_regions(groups, lines, [], WIDTH, HEIGHT, source="test", report=report)
    assert [r.text for r in regions] == ["Name", "Ada Lovelace", "Born", "10 December 1815", "City", "London"]
    assert not report.repaired
