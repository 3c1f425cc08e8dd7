"""The lines a page's figures need read after its decode ended (``rapidocr.figure_lines``): a
figure's own lines and a table's, and walking back the reading order, the nearest earlier text
whose last characters place the figure in the Markdown (``core.export``'s anchor), read whole;
the rest of any box a stop cut in two before the last figure; nothing after the last figure.
Figures' links are numbered by their place among the page's regions: each box before a figure
must give as many regions as a whole read's (``test_stop_figures`` checks the exported Markdown)."""

from __future__ import annotations

from core.drafters.rapidocr import figure_lines

TITLE, ABOVE, NEAR, FIGURE, CAPTION, BELOW = ((40, y, 400, y + h) for y, h in
                                               ((20, 20), (50, 60), (120, 60), (200, 150), (360, 14), (390, 60)))


def lines_in(box, count):
    """``count`` line boxes stacked inside ``box``."""
    x0, y0, x1, y1 = box
    step = (y1 - y0) / count
    return [(x0 + 2, y0 + k * step + 1, x1 - 2, y0 + (k + 1) * step - 1) for k in range(count)]


def page(layout_counts):
    """``(layout, boxes, members)``: the layout ``[(label, box)]`` and its lines, each box's indices."""
    layout, boxes, members = [], [], []
    for label, box, count in layout_counts:
        layout.append((label, box))
        members.append(list(range(len(boxes), len(boxes) + count)))
        boxes += lines_in(box, count)
    return layout, boxes, members


ONE_FIGURE = [("title", TITLE, 1), ("text", ABOVE, 4), ("text", NEAR, 4), ("figure", FIGURE, 5),
              ("caption", CAPTION, 1), ("text", BELOW, 4)]


def test_nothing_read_yet_wants_the_figure_and_the_text_before_it_whole():
    layout, boxes, members = page(ONE_FIGURE)
    wanted = figure_lines(layout, boxes, [None] * len(boxes))
    assert wanted == set(members[3]) | set(members[2])


def test_the_text_before_a_figure_read_is_its_anchor_and_the_walk_ends_there():
    layout, boxes, members = page(ONE_FIGURE)
    texts = [None] * len(boxes)
    for i in members[2]:
        texts[i] = "the survey was published in the autumn"
    assert figure_lines(layout, boxes, texts) == set(members[3]) | set(members[2])


def test_text_too_short_to_place_a_figure_is_passed_over_as_the_anchor_passes_it():
    layout, boxes, members = page(ONE_FIGURE)
    texts = [None] * len(boxes)
    for i in members[2]:
        texts[i] = "a." if i == members[2][0] else " "
    wanted = figure_lines(layout, boxes, texts)
    assert wanted == set(members[3]) | set(members[2]) | set(members[1])
    # four characters are enough (``Data``): the walk ends there
    texts[members[2][0]] = "Data"
    assert figure_lines(layout, boxes, texts) == set(members[3]) | set(members[2])


def test_a_figure_first_on_the_page_wants_its_own_lines_alone():
    layout, boxes, members = page([("figure", FIGURE, 3), ("caption", CAPTION, 1), ("text", BELOW, 4)])
    assert figure_lines(layout, boxes, [None] * len(boxes)) == set(members[0])


def test_several_figures_each_want_the_text_before_them_and_a_figure_is_no_anchor():
    second = (40, 460, 400, 560)
    layout, boxes, members = page(ONE_FIGURE + [("figure", second, 3)])
    assert figure_lines(layout, boxes, [None] * len(boxes)) == \
        set(members[2]) | set(members[3]) | set(members[5]) | set(members[6])
    # two figures in a row: the second's anchor is the text before the first
    layout, boxes, members = page([("text", ABOVE, 3), ("figure", FIGURE, 2), ("figure", second, 2)])
    assert figure_lines(layout, boxes, [None] * len(boxes)) == set(range(len(boxes)))


def test_a_box_before_the_last_figure_that_a_stop_cut_in_two_is_read_whole_and_none_after_it():
    layout, boxes, members = page(ONE_FIGURE)
    texts = [None] * len(boxes)
    texts[members[1][0]] = "The committee reviewed the annual figures"  # read before the stop
    texts[members[5][0]] = "After the figure"  # after the last figure: nothing more is wanted there
    wanted = figure_lines(layout, boxes, texts)
    assert wanted == set(members[1]) | set(members[2]) | set(members[3])


def test_a_tables_lines_before_the_last_figure_are_all_wanted_and_a_line_outside_every_box_is_not():
    layout, boxes, members = page([("table", ABOVE, 6), ("figure", FIGURE, 2), ("table", BELOW, 4)])
    boxes.append((420, 600, 480, 610))
    assert figure_lines(layout, boxes, [None] * len(boxes)) == set(members[0]) | set(members[1])


def test_a_page_without_a_figure_wants_no_line():
    layout, boxes, _ = page([("title", TITLE, 1), ("table", ABOVE, 4), ("caption", CAPTION, 1)])
    assert figure_lines(layout, boxes, [None] * len(boxes)) == set()
