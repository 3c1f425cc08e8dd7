"""core.drafters.layout: line joining, paragraph grouping and XY-cut reading order."""

from __future__ import annotations

from core.drafters.base import OcrLine, stack_lines
from core.drafters.layout import (TextLine, group_blocks, join_lines, line_blocks, line_reading_order, line_stacks,
                                  merge_rows, reading_order)


def test_join_lines_undoes_hyphenation():
    assert join_lines(["an inflam-", "mation of the", "bowel"]) == "an inflammation of the bowel"
    assert join_lines(["COX-", "2 inhibitors"]) == "COX-2 inhibitors"
    assert join_lines(["中文第一行", "第二行"]) == "中文第一行第二行"


def test_two_columns_read_column_by_column():
    title = (50, 40, 550, 70)
    left = [(50, 100 + 60 * i, 290, 150 + 60 * i) for i in range(3)]
    right = [(310, 100 + 60 * i, 550, 150 + 60 * i) for i in range(3)]  # paragraph gaps line up
    footer_wide = (50, 300, 550, 330)
    boxes = [right[0], left[2], title, left[0], right[2], footer_wide, left[1], right[1]]
    order = [boxes[i] for i in reading_order(boxes)]
    assert order == [title, *left, *right, footer_wide]


def test_full_width_title_over_two_columns_with_aligned_gaps():
    title = (100, 10, 500, 40)
    left = [(50, 60, 290, 140), (50, 150, 290, 230)]
    right = [(310, 60, 550, 140), (310, 150, 550, 230)]
    boxes = [title, left[0], right[0], left[1], right[1]]
    assert [boxes[i] for i in reading_order(boxes, line_height=10)] == [title, *left, *right]


def test_grid_reads_row_by_row():
    cells = [(50 + 100 * c, 100 + 20 * r, 120 + 100 * c, 112 + 20 * r) for r in range(3) for c in range(3)]
    shuffled = cells[::-1]
    assert [shuffled[i] for i in reading_order(shuffled)] == cells


def test_form_rows_under_a_wide_heading_read_across():
    # Known limit: with nothing spanning the gutter, two columns of single lines read column by
    # column (they are indistinguishable from two text columns); under a full-width element the
    # one-line bands stay apart and read across.
    heading = (50, 60, 400, 80)
    rows = [((50, 100 + 20 * r, 150, 112 + 20 * r), (300, 100 + 20 * r, 400, 112 + 20 * r)) for r in range(4)]
    boxes = [heading] + [b for row in rows for b in row]
    assert [boxes[i] for i in reading_order(boxes, line_height=12)] == boxes


def _column(x0, x1, y0, count, pitch=12.0, height=14.0):
    """A column of text lines whose boxes overlap a little (line pitch under the boxes' height)."""
    return [(x0, y0 + pitch * k, x1, y0 + pitch * k + height) for k in range(count)]


def test_early_lines_read_down_each_column_under_a_spanning_title():
    # Three columns whose lines share baselines, under a title and a running head that span them:
    # the XY-cut on the lines alone finds no gutter over the page and reads row by row across.
    head = (50, 20, 560, 34)
    title = (50, 50, 500, 80)
    cols = [_column(50, 210, 100, 20), _column(225, 385, 100, 20), _column(400, 560, 100, 20)]
    boxes = [head, title] + [b for row in zip(*cols) for b in row]  # the detector's order: across
    order = [boxes[i] for i in line_reading_order(boxes)]
    assert order == [head, title, *cols[0], *cols[1], *cols[2]]


def test_early_lines_of_a_table_read_row_by_row():
    cells = [(50 + 100 * c, 100 + 14 * r, 90 + 100 * c, 112 + 14 * r) for r in range(5) for c in range(4)]
    shuffled = cells[::-1]
    assert [shuffled[i] for i in line_reading_order(shuffled)] == cells
    assert all(len(block) == 1 for block in line_blocks(cells, 12.0))  # cells are no prose: none joined


def test_a_line_over_two_columns_joins_neither():
    wide = (50, 88, 560, 102)
    left, right = _column(50, 290, 100, 3), _column(310, 560, 100, 3)
    boxes = [wide, *left, *right]
    blocks = line_blocks(boxes, 14.0)
    assert [0] in blocks and [1, 2, 3] in blocks and [4, 5, 6] in blocks


def _line(x0, y0, x1, text, size=10.0):
    return TextLine((x0, y0, x1, y0 + size * 1.2), text, size)


def test_group_blocks_splits_columns_and_bullets():
    lines = [_line(50, 100, 280, "left one"), _line(50, 112, 280, "left two"),
             _line(310, 100, 540, "right one"), _line(310, 112, 540, "right two"),
             _line(50, 140, 280, "- item"), _line(60, 152, 280, "continues")]
    blocks = group_blocks(lines)
    assert sorted(b.text() for b in blocks) == ["- item continues", "left one left two", "right one right two"]


def test_a_paragraph_left_of_a_bullet_does_not_continue_the_last_item():
    """born_tabulate p2: the line under a list's last item, close below it but starting left of its
    bullet, is the next paragraph (it had been drafted as part of the item)."""
    lines = [_line(87, 164, 280, "- record arrays"), _line(87, 176, 180, "- pandas.DataFrame"),
             _line(66, 190, 200, "Tabulate is a Python3 library.")]
    assert [b.text() for b in group_blocks(lines)] == ["- record arrays", "- pandas.DataFrame",
                                                        "Tabulate is a Python3 library."]


def test_a_listing_stays_one_block_however_its_line_lengths_differ():
    """scan_rich p4: a short ``table.add_row(`` above a long indented string had split a listing
    in two (the long line "reached far outside" the block's column, as a wider element would)."""
    import dataclasses
    lines = [dataclasses.replace(ln, mono=True) for ln in (
        _line(64, 80, 140, "table.add_row("), _line(86, 92, 168, '"Dec 15, 2017",'),
        _line(86, 104, 283, '"Star Wars Ep. VIII: The Last Jedi",'))]
    assert len(group_blocks(lines)) == 1
    prose = [dataclasses.replace(ln, mono=False) for ln in lines]
    assert len(group_blocks(prose)) == 2


def test_merge_rows_joins_superscripts_not_columns():
    lines = [_line(50, 100, 100, "x"), TextLine((100.5, 98, 104, 105), "2", 6),
             _line(107, 100, 150, "+ y"), _line(170, 100, 300, "other column")]
    texts = sorted(ln.text for ln in merge_rows(lines))
    assert texts == ["other column", "x2 + y"]


def _stacked_lines(top: float, count: int, height: float = 12.0, pitch: float = 14.0, x0: float = 50.0, x1: float = 300.0):
    return [(x0, top + k * pitch, x1, top + k * pitch + height) for k in range(count)]


def test_line_stacks_cut_a_paragraph_into_runs_and_keep_the_rest_alone():
    heading = [(50.0, 20.0, 200.0, 38.0)]   # taller type, far above
    paragraph = _stacked_lines(60.0, 5)
    cell = [(50.0, 200.0, 80.0, 212.0)]     # below a gap, narrow: a table cell
    assert line_stacks(heading + paragraph + cell, 3) == [[0], [1, 2, 3], [4, 5], [6]]
    assert line_stacks(paragraph, 1) == [[0], [1], [2], [3], [4]]
    # lines read out of the page's order are not stacked: neighbours in reading, not on the page
    assert line_stacks([paragraph[0], paragraph[2], paragraph[1]], 3) == [[0], [1], [2]]
    # a line without a box stands alone and ends the run before it
    assert line_stacks(paragraph[:2] + [None] + paragraph[2:4], 3) == [[0, 1], [2], [3, 4]]
    # two columns side by side: a run never crosses to the other column
    right = _stacked_lines(60.0, 2, x0=320.0, x1=570.0)
    assert line_stacks(paragraph[:2] + right, 3) == [[0, 1], [2, 3]]


def test_stack_lines_joins_texts_as_a_paragraph_and_unites_boxes():
    boxes = _stacked_lines(60.0, 4)
    lines = [OcrLine("an inflam-", boxes[0]), OcrLine("mation of the", boxes[1]), OcrLine("bowel", boxes[2]),
             OcrLine("again", boxes[3]), OcrLine("no box")]
    out = stack_lines(lines, 3)
    assert out == [OcrLine("an inflammation of the bowel", (50.0, 60.0, 300.0, 100.0)), lines[3], lines[4]]
    assert stack_lines(lines, 1) == lines
    # the lines' second readings go with their stack
    lines[0] = OcrLine("an inflam-", boxes[0], {"inflam": [[0, "j", 0.3]]})
    lines[2] = OcrLine("bowel", boxes[2], {"bowel": [[0, "h", 0.2]]})
    assert stack_lines(lines, 3)[0].readings == {"inflam": [[0, "j", 0.3]], "bowel": [[0, "h", 0.2]]}


def test_rows_are_those_of_the_rule_trying_every_row():
    """``rows_of`` stops trying rows that ended above a line; its rows are those of the rule as
    written (a line joins the first row whose first line it overlaps by half the smaller height),
    trying every row, also where boxes are upside down or flat."""
    import random

    from core import tuning
    from core.drafters.layout import rows_of

    def every_row(lines):
        rows = []
        for line in sorted(lines, key=lambda ln: (ln.bbox[1], ln.bbox[0])):
            for row in rows:
                first = row[0]
                if min(first.bbox[3], line.bbox[3]) - max(first.bbox[1], line.bbox[1]) \
                        >= tuning.ROW_OVERLAP * min(first.height, line.height):
                    row.append(line)
                    break
            else:
                rows.append([line])
        return rows

    rnd = random.Random(7)
    for trial in range(400):
        lines = []
        for i in range(rnd.randint(0, 40)):
            y = rnd.choice([rnd.uniform(0, 600), 20.0 * rnd.randint(0, 30)])
            h = rnd.choice([rnd.uniform(0, 30), 10.0, 0.0, -2.0 if trial % 5 == 0 else 8.0])
            x = rnd.uniform(0, 400)
            lines.append(TextLine((x, y, x + 60, y + h), f"l{i}", 10.0, source_index=i))
        assert [[ln.source_index for ln in row] for row in rows_of(lines)] == \
            [[ln.source_index for ln in row] for row in every_row(lines)]
