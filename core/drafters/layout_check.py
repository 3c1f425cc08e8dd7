"""A page-level check of an OCR page's layout: what would garble the drafts, and its repair.

A layout model's mistakes are cheap to see from the OCR lines it was given, and expensive when
they reach the drafts: a "table" over three columns of prose is drafted cell by cell across the
columns, a line outside every box is missing from the drafts, a title called a picture is left to
the model to read alone. ``RapidOCRDrafter`` runs these checks on every page and repairs what they
find; ``LayoutReport`` says what was found, and the drafter records it in the first region's
``extra["layout_repairs"]`` (shown by ``hsd draft``).

* ``reads_as_prose``: a table box whose lines are long and wrap from one line to the next under
  each other, as running text does; the box is not a table (its lines become paragraphs, ordered
  column by column).
* ``caption_rows``: a table box whose top rows are one long line each across the box (the layout
  model took the caption above the table into it); the box starts below them, the lines stay text.
* ``uncovered_lines``: OCR lines whose text no region's draft holds; each becomes a region of
  its own, at its place in the reading order (invariant: every OCR line's text appears in exactly
  one region's draft).
* ``text_in_figure``: a region labelled figure whose lines are sentences or a heading in the
  body's size or larger is text (a title, a paragraph): labels and legends in figures are short
  and small.
* ``sideways_steps``: a reading order that steps from a paragraph to one standing beside it, again
  and again: the layout model sorted the paragraphs of two columns by their tops, and the drafts
  would read across the columns; the regions are read in XY-cut's order instead.
* Formula lines labelled text are found where all text is labelled (``regions.label_block``,
  ``looks_like_formula``), for the text layer and OCR alike.
"""

from __future__ import annotations

import dataclasses
import html
import re
from dataclasses import dataclass, field

from core import tuning
from core.drafters.base import Region
from core.drafters.layout import CJK_CHARS, TextLine, _words, next_line_gap, rows_of
from core.drafters.normalize import normalize_for_match

_CJK = re.compile(f"[{CJK_CHARS}]")
_SENTENCE_END = re.compile(r"[.!?:;。！？：；]\s*$")


@dataclass
class LayoutReport:
    """What the check found on one page and repaired."""
    prose_tables: int = 0
    table_captions: int = 0
    uncovered_lines: int = 0
    figure_text: int = 0
    interleaved_order: int = 0  # sideways steps of the model's reading order that XY-cut's removed
    notes: list[str] = field(default_factory=list)

    @property
    def repaired(self) -> bool:
        return bool(self.prose_tables or self.table_captions or self.uncovered_lines or self.figure_text
                    or self.interleaved_order)

    def summary(self) -> dict:
        return {k: v for k, v in (("prose_tables", self.prose_tables), ("table_captions", self.table_captions),
                                  ("uncovered_lines", self.uncovered_lines),
                                  ("figure_text", self.figure_text),
                                  ("interleaved_order", self.interleaved_order)) if v}


def words(text: str) -> float:
    """Words in ``text``: Latin words, and CJK characters at two to a word."""
    return _words(text)


def reads_as_prose(lines: list[TextLine]) -> bool:
    """True if the lines inside a table box read as running text: columns of long lines side by
    side (most rows that hold two lines or more hold two long ones), many of which wrap onto the
    next line of their column (the upper line fills the column and does not end a sentence). A
    table's cells are short; where one column holds long text (a description), its neighbours hold
    numbers."""
    if len(lines) < tuning.PROSE_MIN_LINES:
        return False
    rows = [row for row in rows_of(lines) if len(row) >= 2]
    side_by_side = sum(sum(words(ln.text) >= tuning.PROSE_LINE_WORDS for ln in row) >= 2 for row in rows)
    if len(rows) < 2 or side_by_side < tuning.PROSE_LONG_SHARE * len(rows):
        return False
    wraps = 0
    for ln in lines:
        below = _next_in_column(ln, lines)
        if below is None or _SENTENCE_END.search(ln.text):
            continue
        column_right = max(ln.bbox[2], below.bbox[2])
        fills = ln.bbox[2] >= column_right - tuning.PROSE_FILL_SLACK * (column_right - ln.bbox[0])
        if fills and words(ln.text) >= tuning.PROSE_LINE_WORDS:
            wraps += 1
    return wraps >= tuning.PROSE_WRAP_SHARE * len(lines)


def caption_rows(lines: list[TextLine], box: tuple) -> tuple:
    """``box`` without the caption the layout model took into it: the rows at its top that hold one
    line of ``PROSE_LINE_WORDS`` words or more running across most of the box (a sentence, not a
    header row of short cells) are cut off; returns the box that starts below them (``box`` itself
    when its first row is not such a line). Cells are short: a table's own first row has several
    lines side by side, or short ones."""
    top, above = box[1], None
    width = max(box[2] - box[0], 1.0)
    for row in rows_of(lines):
        line = row[0]
        long = (words(line.text) >= tuning.PROSE_LINE_WORDS
                and line.bbox[2] - line.bbox[0] >= tuning.CAPTION_ROW_WIDTH * width)
        # a wrapped caption's last line is short: it continues the sentence of the line above
        wraps_on = above is not None and not _SENTENCE_END.search(above.text) \
            and abs(line.bbox[0] - above.bbox[0]) <= line.height and line.bbox[1] - above.bbox[3] <= line.height
        if len(row) != 1 or not (long or wraps_on):
            break
        top, above = line.bbox[3], line
        if not long:
            break
    return box if above is None else (box[0], top, box[2], box[3])


def _next_in_column(line: TextLine, lines: list[TextLine]) -> TextLine | None:
    """The line right under ``line`` that shares most of its horizontal extent, within a line's gap."""
    h = max(line.height, 1.0)
    best, best_gap = None, None
    for other in lines:
        gap = other.bbox[1] - line.bbox[3]
        if other is line or not next_line_gap(gap, h):
            continue
        overlap = min(line.bbox[2], other.bbox[2]) - max(line.bbox[0], other.bbox[0])
        if overlap < tuning.NEXT_LINE_OVERLAP * min(line.bbox[2] - line.bbox[0], other.bbox[2] - other.bbox[0]):
            continue
        if best is None or gap < best_gap:
            best, best_gap = other, gap
    return best


def uncovered_lines(lines: list[TextLine], regions: list[Region]) -> list[TextLine]:
    """Lines whose text (letters, digits, CJK) no region's draft holds."""
    drafts = [normalize_for_match(r.text) for r in regions]
    out = []
    for line in lines:
        key = normalize_for_match(line.text)
        if key and not any(key in d for d in drafts):
            out.append(line)
    return out


def sideways_steps(regions: list[Region], body_size: float) -> int:
    """How often a reading order goes from a paragraph to the next beside it: both running text
    (two lines or more), no shared x range, sharing at least two body sizes of height. Read column
    by column, a page has none (a column is left at its foot, the next entered at its top); a form
    read row by row steps between short fields, which do not count.

        left column:  A (y 100-180)  C (y 190-260)      right column:  B (y 100-170)  D (y 175-250)
        order A B C D: 2 steps (A->B, C->D; B and C share no height)     order A C B D: 0
    """
    def paragraph(region: Region) -> bool:
        return region.label in ("text", "list") and region.bbox[3] - region.bbox[1] >= tuning.SIDEWAYS_SIZES * body_size

    steps = 0
    for a, b in zip(regions, regions[1:]):
        if not (paragraph(a) and paragraph(b)):
            continue
        beside = min(a.bbox[2], b.bbox[2]) <= max(a.bbox[0], b.bbox[0])
        shared = min(a.bbox[3], b.bbox[3]) - max(a.bbox[1], b.bbox[1])
        if beside and shared >= tuning.SIDEWAYS_SIZES * body_size:
            steps += 1
    return steps


def text_in_figure(region: Region, lines: list[TextLine], body_size: float) -> bool:
    """True if a region labelled figure holds a sentence or heading (see module docstring)."""
    inside = [ln for ln in lines if _center_inside(ln.bbox, region.bbox)]
    if not inside:
        return False
    size = max(ln.size for ln in inside)
    return words(region.text) >= tuning.FIGURE_TEXT_WORDS and size >= tuning.FIGURE_TEXT_SIZE * body_size \
        and any(words(row_text) >= tuning.FIGURE_TEXT_WORDS for row_text in (" ".join(ln.text for ln in row)
                                                                      for row in rows_of(inside)))


def slot(box, regions: list[Region]) -> int:
    """Where a region at ``box`` goes in reading order: before the first region below it that
    shares its columns (before the page's footers when none does)."""
    for i, region in enumerate(regions):
        b = region.bbox
        if b[1] >= box[1] and min(b[2], box[2]) > max(b[0], box[0]) and region.label not in ("header", "page_number"):
            return i
    end = len(regions)
    while end and regions[end - 1].label in ("footer", "page_number"):
        end -= 1
    return end


def _center_inside(box, outer) -> bool:
    cx, cy = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
    slack = tuning.FIGURE_EDGE_SLACK_PT
    return outer[0] - slack <= cx <= outer[2] + slack and outer[1] - slack <= cy <= outer[3] + slack


def column_gutters(lines: list[TextLine], chars: list[list[tuple[str, float, float]]]) -> list[tuple[float, float]]:
    """The page's column gutters: x ranges ``(x0, x1)`` of wide gaps between characters, inside a
    line or between two lines on one row, found on at least three rows, that other lines end just
    left of or start just right of, and that few lines run across with text. ``chars``: per line, ``(character, x0, x1)`` of each
    of its non-space characters, in points (empty where unknown).

    The evidence is the page's: a wide space inside one justified line has none of it. The
    detector's boxes are wider than the ink by about half a line height, so two columns' lines can
    be a few points apart or one box, while the ink leaves a gutter."""
    def ink(i):
        spans = chars[i]
        return (spans[0][1], spans[-1][2]) if spans else (lines[i].bbox[0], lines[i].bbox[2])

    candidates = []  # (line index or None, gap x0, gap x1, height)
    for i, (line, spans) in enumerate(zip(lines, chars)):
        if len(spans) >= tuning.GUTTER_MIN_CHARS and len(spans) == sum(not c.isspace() for c in line.text):
            for k in range(1, len(spans)):
                x0, x1 = spans[k - 1][2], spans[k][1]
                wide = min(x0 - spans[0][1], spans[-1][2] - x1) >= tuning.GUTTER_SIDE_HEIGHTS * line.height
                if x1 - x0 >= tuning.GUTTER_GAP_HEIGHTS * line.height and wide:
                    candidates.append((i, x0, x1, line.height))
    for row in rows_of(lines):
        ordered = sorted(row, key=lambda ln: ln.bbox[0])
        for a, b in zip(ordered, ordered[1:]):
            ia, ib = lines.index(a), lines.index(b)
            x0, x1 = ink(ia)[1], ink(ib)[0]
            h = min(a.height, b.height)
            wide = min(x0 - ink(ia)[0], ink(ib)[1] - x1) >= tuning.GUTTER_SIDE_HEIGHTS * h
            if x1 - x0 >= tuning.GUTTER_GAP_HEIGHTS * h and wide:
                candidates.append((None, x0, x1, min(a.height, b.height)))
    gaps_of: dict[int, list[tuple[float, float]]] = {}
    for i, x0, x1, _ in candidates:
        if i is not None:
            gaps_of.setdefault(i, []).append((x0, x1))
    gutters = []
    for i, x0, x1, h in candidates:
        edges = crossing = 0
        for j, other in enumerate(lines):
            if j == i:
                continue
            left, right = ink(j)
            at_edge = abs(right - x0) <= tuning.GUTTER_EDGE_SLACK * h or abs(left - x1) <= tuning.GUTTER_EDGE_SLACK * h
            if at_edge and right - left >= tuning.GUTTER_SIDE_HEIGHTS * h:
                edges += 1
            elif left < x0 and right > x1 and not any(
                    min(g1, x1) - max(g0, x0) >= tuning.GUTTER_OWN_GAP_SHARE * (x1 - x0) for g0, g1 in gaps_of.get(j, ())):
                crossing += 1  # runs across the gap with text (not through a gap of its own)
        recurs = sum(1 for c in candidates if c[1] < x1 and c[2] > x0) - 1  # the same gap on other rows
        if edges >= tuning.GUTTER_EDGE_LINES and crossing <= tuning.GUTTER_CROSSING_SHARE * edges \
                and recurs >= tuning.GUTTER_EDGE_LINES - 1:
            gutters.append((x0, x1))
    return gutters


def column_seams(lines: list[TextLine]) -> list[tuple[float, float]]:
    """Where two columns' lines touch: x ranges ``(a's right end, b's left start)`` of row
    neighbours ``a`` and ``b`` closer than a row's pieces may be (``tuning.ROW_JOIN_GAP``), at a
    column's edges: at least ``GUTTER_EDGE_LINES`` other lines end where ``a`` ends and as many
    start where ``b`` starts, and few lines run across with text (``GUTTER_CROSSING_SHARE``).

    On narrow gutters (a newspaper's, a rule between the columns) the OCR detector's boxes of two
    columns' lines touch, and would be read as pieces of one line ("the river wasIn Bellmont").
    A justified line the detector cut at a wide space is told apart by the lines of its column
    that run across the cut."""
    seams = []
    for row in rows_of(lines):
        ordered = sorted(row, key=lambda ln: ln.bbox[0])
        for a, b in zip(ordered, ordered[1:]):
            h = max(min(a.height, b.height), 1.0)
            x0, x1 = a.bbox[2], b.bbox[0]
            long = min(a.bbox[2] - a.bbox[0], b.bbox[2] - b.bbox[0]) >= tuning.GUTTER_SIDE_HEIGHTS * h
            if not long or not -tuning.ROW_JOIN_BACKTRACK * h <= x1 - x0 <= tuning.ROW_JOIN_GAP * h:
                continue
            ends, starts, across = [], [], []
            for other in lines:
                if other is a or other is b:
                    continue
                left, right = other.bbox[0], other.bbox[2]
                wide = right - left >= tuning.GUTTER_SIDE_HEIGHTS * h
                if wide and abs(right - x0) <= tuning.GUTTER_EDGE_SLACK * h:
                    ends.append(other)
                elif wide and abs(left - x1) <= tuning.GUTTER_EDGE_SLACK * h:
                    starts.append(other)
                elif left < min(x0, x1) - h and right > max(x0, x1) + h:
                    across.append(other)
            if min(len(ends), len(starts)) < tuning.GUTTER_EDGE_LINES:
                continue
            # Only lines beside the columns count against them: a headline above them, or a box
            # below them set in other columns, runs across their seam's x elsewhere on the page.
            top = min(ln.bbox[1] for ln in ends + starts + [a, b])
            bottom = max(ln.bbox[3] for ln in ends + starts + [a, b])
            crossing = sum(top < (ln.bbox[1] + ln.bbox[3]) / 2 < bottom for ln in across)
            if crossing <= tuning.GUTTER_CROSSING_SHARE * (len(ends) + len(starts)):
                seams.append((min(x0, x1), max(x0, x1)))
    return seams


def separate_stacked(lines: list[TextLine]) -> list[TextLine]:
    """The lines with the boxes of lines stacked in one column made not to overlap: where a line's
    box runs into the box of the line below it (set tight, small type: the detector's boxes are
    taller than the ink by about half a line), both are cut at the middle of the overlap. The
    paragraph grouping and the layout model then see a column of lines, not of one-row overlaps.
    Lines side by side (overlapping by half their height or more) are pieces of one row: left
    alone. Font sizes are kept."""
    boxes = [list(ln.bbox) for ln in lines]
    order = sorted(range(len(lines)), key=lambda i: lines[i].bbox[1])
    for k, i in enumerate(order):
        upper = lines[i].bbox
        for j in order[k + 1:]:
            lower = lines[j].bbox
            if lower[1] >= upper[3]:
                break  # sorted by top: no later line reaches up into this one
            width = min(upper[2] - upper[0], lower[2] - lower[0])
            across = min(upper[2], lower[2]) - max(upper[0], lower[0])
            overlap = upper[3] - lower[1]
            h = min(upper[3] - upper[1], lower[3] - lower[1])
            if width <= 0 or across < tuning.SEPARATE_ACROSS_SHARE * width or overlap >= tuning.ROW_OVERLAP * h \
                    or lower[3] <= upper[3]:
                continue
            cut = lower[1] + overlap / 2
            boxes[i][3] = min(boxes[i][3], cut)
            boxes[j][1] = max(boxes[j][1], cut)
    return [ln if tuple(b) == ln.bbox else dataclasses.replace(ln, bbox=tuple(b)) for ln, b in zip(lines, boxes)]


def grid_table(lines: list[TextLine]) -> str | None:
    """The HTML of a table whose OCR lines stand in a clean grid (each line one cell), else None.

    Rows are the lines' visual rows; columns are the x ranges the lines of all rows fall into,
    found by overlap. The grid is clean where at least two rows and two columns are found, no row
    puts two lines in one column, no line reaches over two columns, and most rows fill most columns.
    A borderless table set in a report (rules above and below only) is read cell by cell this way;
    the table recogniser, asked to find its structure in the pixels, often puts a whole row in one
    cell. Where half the lines hold ``tuning.GRID_TEXT_WORDS`` words or more, the box is text set
    in columns or a table of descriptions: left to the other checks and the recogniser.

    Worked example: lines ``Station | Total`` over ``Pendle | 28.6`` give two columns and
    ``<table><tr><td>Station</td><td>Total</td></tr><tr><td>Pendle</td><td>28.6</td></tr></table>``."""
    rows = [sorted(row, key=lambda ln: ln.bbox[0]) for row in rows_of(lines)]
    if len(rows) < 2 or sum(words(ln.text) >= tuning.GRID_TEXT_WORDS for ln in lines) \
            >= tuning.GRID_TEXT_LINE_SHARE * len(lines):
        return None  # cells of several words: columns of text, or a table of descriptions

    def shared(a, b) -> bool:
        # The detector's boxes run past the ink, so neighbouring cells' boxes touch: x ranges are
        # one column where they share more than ``tuning.GRID_COLUMN_SHARE`` of the narrower.
        return min(a[1], b[1]) - max(a[0], b[0]) > tuning.GRID_COLUMN_SHARE * min(a[1] - a[0], b[1] - b[0])

    columns: list[list[float]] = []  # [x0, x1] of each column, widened by its lines
    for line in sorted(lines, key=lambda ln: ln.bbox[0]):
        hits = [c for c in columns if shared(c, line.bbox[::2])]
        if len(hits) > 1:
            return None  # the line reaches over two columns: a spanning cell, not a clean grid
        if hits:
            hits[0][0], hits[0][1] = min(hits[0][0], line.bbox[0]), max(hits[0][1], line.bbox[2])
        else:
            columns.append([line.bbox[0], line.bbox[2]])
    columns.sort()
    if len(columns) < 2 or any(shared(a, b) for a, b in zip(columns, columns[1:])):
        return None  # fewer than two columns, or columns grown into each other
    cells = []
    for row in rows:
        at = [next((i for i, c in enumerate(columns) if shared(c, ln.bbox[::2])), -1) for ln in row]
        if -1 in at or len(set(at)) < len(at):
            return None  # a line in no column, or two lines of one row in one (wrapped cells)
        cells.append(dict(zip(at, (ln.text.strip() for ln in row))))
    full = sum(len(row) >= tuning.GRID_FULL_SHARE * len(columns) for row in cells)
    if full < tuning.GRID_FULL_SHARE * len(cells):
        return None
    body = "".join("<tr>" + "".join(f"<td>{html.escape(row.get(i, ''), quote=False)}</td>"
                                    for i in range(len(columns))) + "</tr>" for row in cells)
    return "<table>" + body + "</table>"


def split_at_gutters(lines: list[TextLine], chars: list[list[tuple[str, float, float]]],
                     gutters: list[tuple[float, float]]) -> list[list[TextLine]]:
    """Each line as the pieces it reads as: a line the OCR detector ran across a column gutter (two
    columns' lines on one baseline) is cut where a gutter (``column_gutters``) is."""
    out = []
    for line, spans in zip(lines, chars):
        at = []
        if len(spans) >= tuning.GUTTER_MIN_CHARS and len(spans) == sum(not c.isspace() for c in line.text):
            h = line.height
            # The gap is itself gutter-wide and holds most of a gutter: a word's letters that stand
            # where the gutter's estimate runs (the detector's boxes are not the ink), the letters
            # of a masthead, and a justified line's wide spaces inside a gap spanning a whole
            # column (an empty column beside a row's lines) stay together.
            at = [k for k in range(1, len(spans))
                  if spans[k][1] - spans[k - 1][2] >= tuning.GUTTER_GAP_HEIGHTS * h
                  and any(min(spans[k][1], g1) - max(spans[k - 1][2], g0) >= tuning.GUTTER_OWN_GAP_SHARE * (g1 - g0)
                          for g0, g1 in gutters)]
        out.append(_cut(line, spans, at) if at else [line])
    return out


def _cut(line: TextLine, spans: list[tuple[str, float, float]], at: list[int]) -> list[TextLine]:
    """``line`` cut before its non-space characters number ``at``."""
    positions = [p for p, c in enumerate(line.text) if not c.isspace()]
    pieces, start = [], 0
    for k in at + [len(spans)]:
        end_char = positions[k] if k < len(positions) else len(line.text)
        text = line.text[positions[start]:end_char].strip()
        if text:
            box = (spans[start][1], line.bbox[1], spans[k - 1][2], line.bbox[3])
            pieces.append(dataclasses.replace(line, bbox=box, text=text))
        start = k
    return pieces
