"""The text-layer drafter on generated PDFs whose text is known."""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest

from core.documents import open_document
from core.drafters import get_drafter
from core.text_distance import normalize_for_metric
from core.drafters.textlayer import TextLayerDrafter, extract_lines
from tests.core import pdf_factory


@pytest.fixture(scope="module")
def page_one_regions(tmp_path_factory):
    pdf = pdf_factory.report_pdf(tmp_path_factory.mktemp("tl") / "report.pdf")
    with open_document(pdf) as doc:
        return TextLayerDrafter().draft(doc.page(0))


def test_text_in_reading_order_exactly(page_one_regions):
    body = [r for r in page_one_regions if r.label not in ("header", "footer", "page_number")]
    got = normalize_for_metric("".join(r.text for r in body))  # drops the table's HTML tags
    assert got == normalize_for_metric("".join(pdf_factory.expected_page_one()))


def test_labels_and_markdown(page_one_regions):
    by_text = {r.text: r for r in page_one_regions}
    assert by_text["# " + pdf_factory.TITLE].label == "title"
    assert by_text["## " + pdf_factory.INTRO_HEADING].label == "title"
    assert "- Output grew by a third.\n- Costs fell slightly.\n- Returns stayed low." in by_text
    assert "1. Count the widgets.\n2. Weigh the widgets." in by_text
    assert by_text[pdf_factory.CAPTION].label == "caption"
    assert by_text[pdf_factory.HEADER].label == "header"
    assert by_text["1"].label == "page_number"


def test_table_is_html(page_one_regions):
    tables = [r for r in page_one_regions if r.label == "table"]
    assert len(tables) == 1
    assert tables[0].text == ("<table><tr><td>Region</td><td>Units</td><td>Weight</td></tr>"
                              "<tr><td>North</td><td>1200</td><td>30 kg</td></tr>"
                              "<tr><td>South</td><td>800</td><td>16 kg</td></tr></table>")


def test_regions_have_page_bboxes_and_source(page_one_regions):
    for region in page_one_regions:
        x0, y0, x1, y1 = region.bbox
        assert 0 <= x0 < x1 <= 595 and 0 <= y0 < y1 <= 842
        assert region.source == "textlayer" and region.confidence == 1.0


def test_hyphenation_is_undone(tmp_path):
    pdf = pdf_factory.text_pdf(tmp_path / "hyphen.pdf", [
        "The committee discussed the inter-", "national standard for widgets and", "agreed on a new version of it."])
    with open_document(pdf) as doc:
        (region,) = TextLayerDrafter().draft(doc.page(0))
    assert region.text == "The committee discussed the international standard for widgets and agreed on a new version of it."


def test_ligature_gap_is_closed(tmp_path):
    pdf = tmp_path / "lig.pdf"
    doc = pymupdf.open()
    page = doc.new_page()
    font = pymupdf.Font("cjk")  # a built-in font that has the \ufb01 ligature glyph
    writer = pymupdf.TextWriter(page.rect)
    writer.append((72, 72), "signi\ufb01 cantly more e\ufb03cient", font=font, fontsize=11)
    writer.write_text(page)
    doc.save(pdf)
    with open_document(pdf) as opened:
        lines = extract_lines(opened.page(0).fitz_page)
    from core.drafters.normalize import clean_draft_text
    assert clean_draft_text(lines[0].text) == "significantly more efficient"


def test_right_to_left_columns(tmp_path):
    pdf = tmp_path / "rtl.pdf"
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    font_file = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")
    if not font_file.exists():
        pytest.skip("needs a system font with Hebrew glyphs (DejaVu Sans)")
    font = pymupdf.Font(fontfile=str(font_file))
    writer = pymupdf.TextWriter(page.rect)
    writer.append((350, 100), "\u05d0\u05d1\u05d2 \u05d3\u05d4\u05d5", font=font, fontsize=12, right_to_left=True)
    writer.append((60, 100), "\u05d6\u05d7\u05d8 \u05d9\u05db\u05dc", font=font, fontsize=12, right_to_left=True)
    writer.write_text(page)
    doc.save(pdf)
    with open_document(pdf) as opened:
        regions = TextLayerDrafter().draft(opened.page(0))
    assert [r.bbox[0] > 300 for r in regions] == [True, False]  # right column first


def test_registry_builds_textlayer():
    assert get_drafter("textlayer").name == "textlayer"


def test_rotated_page_boxes_follow_the_rendered_page(tmp_path):
    pdf = tmp_path / "rotated.pdf"
    doc = pymupdf.open()
    page = doc.new_page(width=600, height=800)
    page.insert_text((50, 100), "Hello rotated world, this line is long enough to be a text layer.", fontsize=12)
    page.set_rotation(90)
    doc.save(pdf)
    with open_document(pdf) as opened:
        page = opened.page(0)
        (region,) = TextLayerDrafter().draft(page)
        word = page.words()[0]
        assert (page.width, page.height) == (800, 600)
    x0, y0, x1, y1 = region.bbox
    assert 0 <= x0 < x1 <= 800 and 0 <= y0 < y1 <= 600
    assert y1 - y0 > x1 - x0  # the line now runs downwards
    assert word.y1 - word.y0 > word.x1 - word.x0



def test_a_grid_whose_cells_miss_text_is_read_as_rows_of_lines():
    # mineru_research_report p2: two tables side by side under one ruled frame; find_tables saw one
    # grid whose cells held only the right table, and the left table's text vanished from the draft.
    from types import SimpleNamespace

    from core.drafters.layout import TextLine
    from core.drafters.textlayer import _cell_coverage, cell_words, lines_as_tables

    words = [(25, 52, 60, 60, "Shares", 0, 0, 0), (150, 52, 180, 60, "227.92", 1, 0, 0),
             (205, 52, 230, 60, "Sales", 2, 0, 0), (305, 52, 325, 60, "746", 3, 0, 0)]  # PyMuPDF "words"
    grid = SimpleNamespace(bbox=(20, 40, 580, 200), rows=[SimpleNamespace(cells=[None, (200, 40, 300, 70),
                                                                                   (300, 40, 400, 70)])])
    assert _cell_coverage(grid, words, cell_words(grid, words)) == 0.5
    lines = [TextLine((25, 52, 60, 60), "Shares:", 8, False, 0), TextLine((150, 52, 180, 60), "227.92", 8, False, 1),
             TextLine((205, 53, 230, 61), "Sales", 8, False, 2), TextLine((25, 82, 60, 90), "Float:", 8, False, 3)]
    assert lines_as_tables(lines, grid.bbox) == [(grid.bbox, "Shares: 227.92 Sales\nFloat:")]


def _table_lines(x_columns, top, pitch, rows, first_index=0):
    """TextLine cells of a table: ``rows`` rows ``pitch`` points apart, one cell per x column."""
    from core.drafters.layout import TextLine
    out = []
    for r in range(rows):
        y = top + r * pitch
        for c, (x0, x1) in enumerate(x_columns):
            out.append(TextLine((x0, y, x1, y + 10), f"r{r}c{c}", 8, False, first_index + len(out)))
    return out


def test_two_tables_side_by_side_under_one_frame_become_two_html_tables():
    # mineru_research_report p2's layout: a two-column "stock data" table at a 15 pt row pitch
    # beside a three-column forecast table at 13 pt, a 5 pt gutter between them.
    from core.drafters.textlayer import lines_as_tables

    left = _table_lines([(24, 90), (150, 191)], 72, 15, 6)
    right = _table_lines([(196, 260), (300, 334), (360, 392)], 71, 13, 7, first_index=100)
    (lbox, lhtml), (rbox, rhtml) = lines_as_tables(left + right, (20, 40, 580, 200))
    assert lbox[2] <= 191 < 196 <= rbox[0]
    assert lhtml.startswith("<table><tr><td>") and lhtml.count("<tr>") == 6 and lhtml.count("<td>") == 12
    assert rhtml.count("<tr>") == 7 and rhtml.count("<td>") == 21
    assert "<td>r0c2</td>" in rhtml and "<td>r0c2</td>" not in lhtml


def test_columns_of_one_table_are_not_split_into_tables():
    from core.drafters.textlayer import lines_as_tables

    lines = _table_lines([(24, 90), (150, 191), (230, 260)], 72, 15, 6)
    ((box, text),) = lines_as_tables(lines, (20, 40, 580, 200))
    assert "<table>" not in text and text.splitlines()[0] == "r0c0 r0c1 r0c2"


def test_monospaced_lines_become_one_fenced_code_block(tmp_path):
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    page.insert_text((72, 100), "The listing below adds two numbers and prints the sum.", fontname="helv", fontsize=10)
    code = [(0, "def add(a,    b):"), (4, "return a + b"), (0, "- not a list item"), (0, "print(add(3, 5))")]
    char = pymupdf.Font("cour").text_length("x", fontsize=9)
    for i, (indent, line) in enumerate(code):
        y = 130 + 11 * i + (11 if i == 3 else 0)  # a blank line before the last one
        page.insert_text((72 + indent * char, y), line, fontname="cour", fontsize=9)
    page.insert_text((72, 200), "After the listing the prose goes on in its own font.", fontname="helv", fontsize=10)
    path = tmp_path / "code.pdf"
    doc.save(str(path))
    with open_document(path) as opened:
        regions = TextLayerDrafter().draft(opened.page(0))
    assert [r.label for r in regions] == ["text", "code", "text"]
    # One block across the blank line, indentation rebuilt, inner space runs collapsed, no bullet.
    assert regions[1].text == "```\ndef add(a, b):\n    return a + b\n- not a list item\nprint(add(3, 5))\n```"


def test_monospace_flag_or_a_known_code_face():
    from core.drafters.textlayer import is_monospaced

    assert is_monospaced({"flags": 8, "font": "Anything"})
    assert is_monospaced({"flags": 4, "font": "CMTT9"}) and is_monospaced({"flags": 0, "font": "Courier-Bold"})
    assert not is_monospaced({"flags": 4, "font": "Helvetica"}) and not is_monospaced({"flags": 0, "font": "CMR10"})
