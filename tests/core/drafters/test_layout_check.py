"""The page-level layout check: layouts that would garble the drafts are recognised and repaired.

The OCR drafter runs here with its engines replaced by stand-ins (OCR lines, layout boxes and a
table recogniser given by the test), so each layout mistake is built exactly, without models.
"""

from __future__ import annotations

import random

import pytest
from PIL import Image

from core.drafters import layout_check, ocr_layout
from core.drafters.layout import TextLine
from core.drafters.layout_check import caption_rows, reads_as_prose, uncovered_lines, words
from core.drafters.normalize import normalize_for_match
from core.drafters.rapidocr import RapidOCRDrafter
from core.drafters.regions import looks_like_formula

WORDS = ("harbour budget council survey railway museum licence archive district estimate treaty panel "
         "review factory valley bridge schedule permit record index season measure station network").split()


class FakePage:
    width, height = 612.0, 792.0
    last_render_scale = 2.0
    document = None

    def render(self, dpi=None):
        return Image.new("RGB", (1224, 1584), "white")


def drafter_with(monkeypatch, lines, boxes, table=None, layout="cdla"):
    """A RapidOCRDrafter whose OCR returns ``lines``, whose layout model returns ``boxes`` and whose
    table recogniser is ``table(lines) -> html`` (None: no table structure)."""
    drafter = RapidOCRDrafter(dpi=144, layout=layout)
    monkeypatch.setattr(drafter, "ocr_lines", lambda pixels, scale, read=None: (list(lines), [None] * len(lines)))
    monkeypatch.setattr(drafter, "_read_lines",  # no OCR model runs: the page's lines are ``lines``
                        lambda pixels, scale, on_lines, found=None, stoppable=None:
                        (list(lines), [None] * len(lines), []))  # the lines, their fits, none unread
    monkeypatch.setattr(drafter, "_layout_engine", lambda: object())
    monkeypatch.setattr(drafter, "_table_engine", lambda: object())
    monkeypatch.setattr(ocr_layout, "detect_layout", lambda model, pixels, scale: boxes)
    monkeypatch.setattr(ocr_layout, "table_html",
                        lambda model, pixels, scale, box, inside: table(inside) if table else None)
    return drafter


def prose_columns(rng, columns=3, rows=24, x0=40.0, width=170.0, gutter=12.0, top=80.0):
    """Justified text in ``columns`` columns: every line full width, unique words."""
    lines = []
    for c in range(columns):
        for r in range(rows):
            text = " ".join(rng.choice(WORDS) + str(rng.randint(100, 999)) for _ in range(6))
            x = x0 + c * (width + gutter)
            lines.append(TextLine((x, top + r * 12.0, x + width, top + r * 12.0 + 10.0), text, 8.0))
    return lines


def assert_each_line_in_exactly_one_draft(lines, regions):
    drafts = [normalize_for_match(r.text) for r in regions]
    for line in lines:
        key = normalize_for_match(line.text)
        holders = sum(key in d for d in drafts)
        assert holders == 1, f"{line.text!r} is in {holders} drafts"


def test_a_table_over_three_columns_of_prose_is_read_column_by_column(monkeypatch):
    rng = random.Random(1)
    lines = prose_columns(rng)
    body = (30.0, 70.0, 590.0, 400.0)

    def across(inside):  # what a table recogniser does with it: rows across the columns
        return "<table>" + "".join(f"<tr><td>{ln.text}</td></tr>" for ln in inside) + "</table>"

    regions = drafter_with(monkeypatch, lines, [("table", body)], across).draft(FakePage())
    assert not any(r.label == "table" for r in regions)
    assert regions[0].extra["layout_repairs"] == {"prose_tables": 1}
    text = "\n".join(r.text for r in regions)
    first_column = [ln.text for ln in lines[:24]]
    second_column = [ln.text for ln in lines[24:48]]
    # each column's lines are read in order, and the first column before the second
    positions = [text.index(t) for t in first_column + second_column]
    assert positions == sorted(positions)
    assert_each_line_in_exactly_one_draft(lines, regions)


def test_a_real_table_stays_a_table(monkeypatch):
    lines = []
    for r in range(6):
        for c, cell in enumerate([f"Row{r}", f"{r * 17}", f"{r * 3.5:.1f}", f"+{r}%"]):
            x = 60 + c * 110
            lines.append(TextLine((x, 100 + r * 18, x + 40, 110 + r * 18), cell, 8.0))

    def grid(inside):
        return "<table>" + "".join(f"<tr><td>{ln.text}</td></tr>" for ln in inside) + "</table>"

    regions = drafter_with(monkeypatch, lines, [("table", (50, 90, 520, 220))], grid).draft(FakePage())
    assert [r.label for r in regions] == ["table"]
    assert "layout_repairs" not in regions[0].extra


def test_lines_a_table_dropped_become_regions_of_their_own(monkeypatch):
    lines = []
    for r in range(5):
        for c in range(3):
            x = 60 + c * 120
            # the last row's first cell reaches into the next column: no clean grid, the
            # structure model reads the table
            right = x + (150 if (r, c) == (4, 0) else 60)
            lines.append(TextLine((x, 100 + r * 18, right, 110 + r * 18), f"cell{r}x{c}", 8.0))
    lines.append(TextLine((60, 300, 400, 312), "A closing note under the table, read by the OCR.", 8.0))

    def lossy(inside):  # the structure model fills only some cells
        return "<table>" + "".join(f"<tr><td>{ln.text}</td></tr>" for ln in inside[:9]) + "</table>"

    regions = drafter_with(monkeypatch, lines, [("table", (50, 90, 450, 200))], lossy).draft(FakePage())
    assert regions[0].label == "table"
    assert regions[0].extra["layout_repairs"] == {"uncovered_lines": 6}
    assert_each_line_in_exactly_one_draft(lines, regions)
    # the dropped cells come right after the table, before the note below it
    between = " ".join(r.text for r in regions[1:-1])
    assert all(f"cell{r}x{c}" in between for r, c in [(3, 0), (3, 1), (3, 2), (4, 0), (4, 1), (4, 2)])
    assert "closing note" in regions[-1].text


def test_a_title_in_a_figure_box_stays_a_title(monkeypatch):
    lines = [TextLine((150, 60, 460, 84), "Von der Neuen Versammlung der Stadt", 20.0),
             TextLine((300, 300, 330, 308), "12", 6.0), TextLine((360, 300, 390, 308), "24", 6.0)]
    for r in range(10):
        lines.append(TextLine((60, 120 + r * 14, 550, 131 + r * 14),
                              f"Die Verwaltung der Stadt beschloss im Jahre {1700 + r} die neue Ordnung.", 9.0))
    boxes = [("figure", (140, 50, 470, 90)), ("figure", (280, 280, 420, 320))]
    regions = drafter_with(monkeypatch, lines, boxes).draft(FakePage())
    labels = {r.text.lstrip("# "): r.label for r in regions}
    assert labels["Von der Neuen Versammlung der Stadt"] == "title"
    assert "figure" in labels.values()  # the axis labels stay figure content
    assert regions[0].extra["layout_repairs"] == {"figure_text": 1}


@pytest.mark.parametrize("layout", ["cdla", "pymupdf"])
def test_every_ocr_line_is_in_exactly_one_draft(monkeypatch, layout):
    """The invariant, on pages of random lines under random layout boxes (tables that keep some of
    their cells, figures, text boxes that miss lines), with either layout model's path."""
    for seed in range(6):
        rng = random.Random(seed)
        lines = prose_columns(rng, columns=rng.randint(1, 3), rows=rng.randint(4, 20))
        boxes = []
        for _ in range(rng.randint(1, 4)):
            x0, y0 = rng.uniform(20, 400), rng.uniform(60, 300)
            boxes.append((rng.choice(["table", "figure", "text"]),
                          (x0, y0, x0 + rng.uniform(60, 300), y0 + rng.uniform(30, 200))))

        def some_cells(inside, rng=rng):
            return "<table>" + "".join(f"<tr><td>{ln.text}</td></tr>" for ln in inside if rng.random() < 0.6) + "</table>"

        drafter = drafter_with(monkeypatch, lines, boxes, some_cells)
        if layout == "pymupdf":
            from core.drafters import scan_layout
            drafter.layout = "pymupdf"
            monkeypatch.setattr(scan_layout, "layout_groups", lambda w, h, image, lns, boxes=boxes: [
                ({"table": "table", "figure": "picture"}.get(label, "text"), box) for label, box in boxes])
        assert_each_line_in_exactly_one_draft(lines, drafter.draft(FakePage()))


def test_reads_as_prose_and_words():
    rng = random.Random(3)
    assert reads_as_prose(prose_columns(rng, columns=2, rows=8))
    cells = [TextLine((60 + c * 100, 100 + r * 16, 100 + c * 100, 110 + r * 16), f"{r * c}", 8.0)
             for r in range(6) for c in range(4)]
    assert not reads_as_prose(cells)
    assert words("一二三四") == 2 and words("two words") == 2


def test_uncovered_lines_compare_letters_and_digits_only():
    from core.drafters.base import Region
    lines = [TextLine((0, 0, 10, 10), "inflam-", 8.0), TextLine((0, 12, 10, 22), "Ｆｕｌｌ width", 8.0),
             TextLine((0, 24, 10, 34), "missing", 8.0)]
    regions = [Region("text", (0, 0, 10, 22), "inflammation, Full width", "t")]
    assert [ln.text for ln in uncovered_lines(lines, regions)] == ["missing"]
    assert layout_check.slot((0, 40, 10, 50), regions) == 1


@pytest.mark.parametrize("text, formula", [
    ("a²+8=12", True), ("a2 + 8 = 12", True), ("x ∈ ∂U", True), ("y = ax + b", True),
    ("Total = 12", False), ("The value is x = 5 in every case", False), ("2019-2020", False),
    ("SUMMARY: The rule = law", False), ("合计 = 12", False),
])
def test_formula_lines(text, formula):
    assert looks_like_formula(text) is formula


def test_caption_rows_are_cut_from_the_top_of_a_table_box():
    box = (50.0, 60.0, 300.0, 240.0)
    caption = [TextLine((52, 62, 298, 72), "Recoveries and relative standard deviations obtained from spiked", 8.0),
               TextLine((52, 74, 120, 84), "sludge samples", 8.0)]
    cells = [TextLine((52 + c * 80, 100 + r * 16, 100 + c * 80, 110 + r * 16), f"{r}.{c} ± 1", 8.0)
             for r in range(6) for c in range(3)]
    assert caption_rows(caption + cells, box) == (50.0, 84, 300.0, 240.0)
    # a table whose first row is its header of short cells keeps its box
    assert caption_rows(cells, box) == box
    # one long cell in a row beside others is no caption
    wide = [TextLine((52, 62, 298, 72), "Name of the compound as it stands in the register", 8.0),
            TextLine((52, 74, 80, 84), "x", 8.0), TextLine((200, 74, 240, 84), "y", 8.0)]
    assert caption_rows(wide + cells, box) == (50.0, 72, 300.0, 240.0)
    assert caption_rows(wide[1:] + cells, box) == box


def char_spans(line, pitch=None):
    """``(character, x0, x1)`` of ``line``'s non-space characters spread evenly over its box."""
    chars = [c for c in line.text if not c.isspace()]
    step = (line.bbox[2] - line.bbox[0]) / max(1, len(line.text))
    spans, x = [], line.bbox[0]
    for c in line.text:
        if not c.isspace():
            spans.append((c, x, x + 0.8 * step))
        x += step
    assert len(spans) == len(chars)
    return spans


def test_a_line_is_cut_only_at_a_gap_that_holds_a_gutter():
    from core.drafters.layout_check import split_at_gutters
    word = TextLine((100.0, 100.0, 200.0, 110.0), "centralised distribution", 8.0)
    spans = char_spans(word)
    # A gutter estimate that runs through the word's letters (another row's gutter, a detector's
    # box wider than the ink) cuts nothing, nor does a gap spanning a whole empty column.
    assert split_at_gutters([word], [spans], [(148.0, 152.0)]) == [[word]]
    assert split_at_gutters([word], [spans], [(140.0, 260.0)]) == [[word]]
    # Two columns' lines the detector ran together: the gutter-wide gap between them is cut.
    left = [(c, 100.0 + 4 * i, 103.0 + 4 * i) for i, c in enumerate("columnone")]
    right = [(c, 160.0 + 4 * i, 163.0 + 4 * i) for i, c in enumerate("columntwo")]
    merged = TextLine((100.0, 100.0, 196.0, 110.0), "columnone columntwo", 8.0)
    pieces = split_at_gutters([merged], [left + right], [(140.0, 156.0)])[0]
    assert [p.text for p in pieces] == ["columnone", "columntwo"]


def touching_columns(rng, columns=4, rows=20, width=106.0):
    """Justified columns of small type whose lines' boxes touch across the gutters (a newspaper
    scan's detector boxes) and overlap the lines above and below."""
    lines = []
    for c in range(columns):
        for r in range(rows):
            text = " ".join(rng.choice(WORDS) for _ in range(4))
            x = 30.0 + c * (width + 1.0)
            lines.append(TextLine((x, 100.0 + 11.0 * r, x + width, 100.0 + 11.0 * r + 15.0), text, 11.0))
    return lines


def test_touching_columns_have_seams_and_a_justified_line_cut_at_a_space_has_none():
    from core.drafters.layout_check import column_seams
    lines = touching_columns(random.Random(1))
    seams = column_seams(lines)
    for edge in (136.0, 243.0, 350.0):
        assert any(a - 2 <= edge <= b + 2 for a, b in seams), edge
    # The detector cut one line of the first column at a wide space: whole lines of that column run
    # across the cut, so it is no seam (and the pieces are joined again as one row).
    first = [ln for ln in lines if ln.bbox[0] < 100]
    cut = first[5]
    pieces = [TextLine((cut.bbox[0], cut.bbox[1], 80.0, cut.bbox[3]), "railway museum", 11.0),
              TextLine((80.5, cut.bbox[1], cut.bbox[2], cut.bbox[3]), "treaty panel", 11.0)]
    assert not any(a < 81 and b > 79 for a, b in column_seams([ln for ln in lines if ln is not cut] + pieces))


def test_stacked_boxes_are_made_not_to_overlap_and_pieces_of_a_row_are_left_alone():
    from core.drafters.layout_check import separate_stacked
    upper = TextLine((30.0, 100.0, 136.0, 115.0), "upper line", 11.0)
    lower = TextLine((30.0, 111.0, 136.0, 126.0), "lower line", 11.0)
    piece = TextLine((140.0, 101.0, 180.0, 114.0), "beside", 11.0)
    out = separate_stacked([upper, lower, piece])
    assert out[0].bbox[3] == out[1].bbox[1] == 113.0
    assert out[2] is piece
    assert [ln.size for ln in out] == [11.0, 11.0, 11.0]


def test_touching_columns_are_read_column_by_column():
    from core.drafters.layout_check import column_seams, separate_stacked
    from core.drafters.regions import lines_to_regions
    lines = touching_columns(random.Random(2), columns=3, rows=12)
    tight = separate_stacked(lines)
    regions = lines_to_regions(tight, [], 612.0, 792.0, source="rapidocr", size_tolerance=0.35,
                               barriers=column_seams(lines))
    text = " ".join(r.text for r in regions)
    positions = [text.index(ln.text) for ln in lines]  # every line whole, in column order
    assert positions == sorted(positions)


def test_a_clean_grid_of_ocr_cells_is_read_cell_by_cell():
    from core.drafters.layout_check import grid_table
    cells = [["Station", "Total", "Count", "2022"], ["Pendle", "28.6", "84.1", "92.2"],
             ["Result", "-0.5%", "736", "-8.8%"], ["Rate", "5,133", "", "93.2"]]
    lines = []
    for r, row in enumerate(cells):
        for c, text in enumerate(row):
            if text:  # boxes of neighbouring cells touch, and the scan is skewed by 1.5 pt a column
                x = 66.0 + 36.0 * c
                lines.append(TextLine((x - 2, 140 + 17 * r + 1.5 * c, x + 36, 156 + 17 * r + 1.5 * c), text, 12.0))
    assert grid_table(lines) == (
        "<table><tr><td>Station</td><td>Total</td><td>Count</td><td>2022</td></tr>"
        "<tr><td>Pendle</td><td>28.6</td><td>84.1</td><td>92.2</td></tr>"
        "<tr><td>Result</td><td>-0.5%</td><td>736</td><td>-8.8%</td></tr>"
        "<tr><td>Rate</td><td>5,133</td><td></td><td>93.2</td></tr></table>")
    # A header cell spanning two columns, or two lines of one row in one column: no clean grid.
    spanning = lines + [TextLine((66, 100, 170, 116), "Both years", 12.0)]
    assert grid_table(spanning) is None
    wrapped = lines + [TextLine((140, 145, 170, 152), "cont.", 12.0)]
    assert grid_table(wrapped) is None


def test_sideways_steps_count_in_python_ints_whatever_the_boxes_are_made_of():
    """OCR boxes come out of numpy; the count goes into the repairs a page's JSON carries."""
    import json

    import numpy as np

    from core.drafters.base import Region
    from core.drafters.layout_check import sideways_steps

    def region(x0, y0, x1, y1):
        return Region("text", tuple(np.float64(v) for v in (x0, y0, x1, y1)), "a paragraph", "test")

    order = [region(40, 100, 235, 180), region(265, 100, 460, 170),   # left 1, right 1
             region(40, 190, 235, 260), region(265, 175, 460, 250)]   # left 2, right 2
    steps = sideways_steps(order, np.float64(10.5))
    assert steps == 2 and type(steps) is int
    json.dumps({"interleaved_order": steps})
    assert sideways_steps([order[0], order[2], order[1], order[3]], 10.5) == 0
