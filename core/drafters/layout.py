"""Geometry shared by the drafters: text lines -> paragraph blocks -> reading order.

Drafters differ in where lines come from (the PDF text layer, OCR) but not in how lines become
paragraphs and how paragraphs are ordered, so that lives here. All coordinates are PDF points.

Reading order is a recursive XY-cut that tries column (vertical) cuts before row (horizontal)
cuts: in a two-column paper, paragraph gaps of the two columns often line up, so cutting rows first
would interleave the columns; a full-width title or figure blocks every column cut, so it still
ends up in its own band, above or between the column sections. Where a full-width element forces
a row cut, consecutive bands that share a column gutter are joined again before recursing. Grids
(three or more columns whose boxes share rows: tables, forms) read row by row.
"""

from __future__ import annotations

import bisect
import re
import statistics
from collections import Counter
from dataclasses import dataclass, field

from core import tuning

Box = tuple[float, float, float, float]

#: A line that starts with one of these is a list item (the bullet is replaced by "- ").
BULLET_RE = re.compile(r"^\s*([\u2022\u25cf\u25cb\u25aa\u25a0\u25a1\u25e6\u2023\u2043\u2219\u27a2\u25ba\u25b6\u2013\u2014\uf0b7\uf0a7\uf0d8*-])\s+")
#: A line that starts like "1." "1)" "(1)" "a)" "iv." is a numbered list item (kept as written).
ENUM_RE = re.compile(r"^\s*(\(?\d{1,3}[.)]|\(?[a-z][.)]|\((?:[ivx]{1,4}|\d{1,3}|[a-z])\))\s+")


@dataclass
class TextLine:
    """One visual line of text: bbox in points, font size (or glyph height) in points."""

    bbox: Box
    text: str
    size: float
    bold: bool = False
    source_index: int = 0  # position in the producer's own order (tie-breaker)
    group: int | None = None  # the producer's block id, when it has one (PyMuPDF blocks)
    score: float = 1.0  # the producer's confidence in the text (OCR score; 1.0 for a text layer)
    mono: bool = False  # set in a monospaced font (a code line), when the producer knows fonts

    @property
    def height(self) -> float:
        return self.bbox[3] - self.bbox[1]

    @property
    def is_list_start(self) -> bool:
        # A code line starting "- " or "1. " is code: a diff, a rule of dashes, a numbered listing.
        return not self.mono and bool(BULLET_RE.match(self.text) or ENUM_RE.match(self.text))


@dataclass
class Block:
    """Lines that read as one paragraph (or one list item), top to bottom."""

    lines: list[TextLine] = field(default_factory=list)

    @property
    def bbox(self) -> Box:
        return union_box([ln.bbox for ln in self.lines])

    @property
    def size(self) -> float:
        return statistics.median(ln.size for ln in self.lines)

    @property
    def bold(self) -> bool:
        return all(ln.bold for ln in self.lines)

    @property
    def mono(self) -> bool:
        return all(ln.mono for ln in self.lines)

    @property
    def score(self) -> float:
        return sum(ln.score for ln in self.lines) / len(self.lines)

    def text(self) -> str:
        return join_lines([ln.text for ln in self.lines])


def union_box(boxes) -> Box:
    boxes = list(boxes)
    return (min(b[0] for b in boxes), min(b[1] for b in boxes), max(b[2] for b in boxes), max(b[3] for b in boxes))


def smallest_holder(box: Box, boxes, slack: float = 0.0) -> int | None:
    """Index of the smallest of ``boxes`` holding the centre of ``box`` (each widened by ``slack``
    points on every side), None where none does."""
    cx, cy = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
    best, best_area = None, 0.0
    for i, (x0, y0, x1, y1) in enumerate(boxes):
        if x0 - slack <= cx <= x1 + slack and y0 - slack <= cy <= y1 + slack:
            area = (x1 - x0) * (y1 - y0)
            if best is None or area < best_area:
                best, best_area = i, area
    return best


def join_lines(lines: list[str]) -> str:
    """Join the lines of a paragraph with spaces, undoing end-of-line hyphenation.

    "inflam-" + "mation" -> "inflammation"; "COX-" + "2" keeps its hyphen. CJK lines join without a
    space.
    """
    out = ""
    for raw in lines:
        line = raw.strip()
        if not line:
            continue
        if not out:
            out = line
        elif re.search(r"[A-Za-z\u00c0-\u024f][-\u00ad\u2010]$", out) and line[:1].islower():
            out = out[:-1] + line
        elif out.endswith(("-", "\u2010", "/")) or (_is_cjk(out[-1]) and _is_cjk(line[0])):
            out += line
        else:
            out += " " + line
    return out


#: Characters of CJK text that wraps without a space (ideographs, kana, CJK and full-width
#: punctuation), as a regular-expression character range.
CJK_CHARS = "\u2e80-\u9fff\uf900-\ufaff\uff00-\uffef\u3000-\u303f"
_CJK_CHAR = re.compile(f"[{CJK_CHARS}]")


def _is_cjk(ch: str) -> bool:
    return _CJK_CHAR.fullmatch(ch) is not None


def merge_rows(lines: list[TextLine], barriers: list[tuple[float, float]] = ()) -> list[TextLine]:
    """Merge pieces of the same visual line (superscripts, split spans) that sit side by side.

    Pieces merge when they overlap vertically and the horizontal gap is under
    ``tuning.ROW_JOIN_GAP`` line heights, so text in neighbouring columns (a gutter is wider) stays
    apart; pieces of one producer block may be ``tuning.ROW_JOIN_GAP_SAME_BLOCK`` heights apart
    (justified text where every word is its own line). Pieces on either side of a ``barrier`` (a
    column gutter's x range) never merge.
    """
    pieces = sorted(lines, key=lambda ln: (ln.bbox[0], ln.bbox[1]))
    rows: list[list[TextLine]] = []
    # Each piece is tried against every row so far: the tests go cheapest first (most rows lie
    # above or below the piece), the barriers last.
    backtrack, overlap_share = tuning.ROW_JOIN_BACKTRACK, tuning.ROW_OVERLAP
    for piece in pieces:
        x0, y0, _, y1 = piece.bbox
        piece_height = y1 - y0
        for row in rows:
            last = row[-1]
            h = max(min(piece_height, last.height), 1.0)
            if min(y1, last.bbox[3]) - max(y0, last.bbox[1]) < overlap_share * h:
                continue
            gap = x0 - last.bbox[2]
            same_group = piece.group is not None and piece.group == last.group
            widest = tuning.ROW_JOIN_GAP_SAME_BLOCK if same_group else tuning.ROW_JOIN_GAP
            if not -backtrack * h <= gap <= widest * h:
                continue
            if any(last.bbox[2] - h <= b0 and b1 <= x0 + h for b0, b1 in barriers):
                continue
            row.append(piece)
            break
        else:
            rows.append([piece])
    merged = []
    for row in rows:
        if len(row) == 1:
            merged.append(row[0])
            continue
        main = max(row, key=lambda ln: len(ln.text))
        text = row[0].text
        for prev, piece in zip(row, row[1:]):
            gap = piece.bbox[0] - prev.bbox[2]
            cjk = _is_cjk(text[-1:] or "a") and _is_cjk(piece.text[:1] or "a")
            sep = "" if gap < tuning.WORD_SPACE_GAP * main.height or cjk else " "
            text = text.rstrip() + sep + piece.text.lstrip()
        merged.append(TextLine(union_box(p.bbox for p in row), text, main.size, main.bold,
                               min(p.source_index for p in row), main.group,
                               min(p.score for p in row), mono=all(p.mono for p in row)))
    return merged


def rows_of(lines: list[TextLine]) -> list[list[TextLine]]:
    """Lines grouped into visual rows, top to bottom: a line joins the first row whose first line
    it overlaps vertically by half the smaller height (unsorted within a row)."""
    rows: list[list[TextLine]] = []
    share = tuning.ROW_OVERLAP
    # A row whose first line ends above a line's top overlaps no line from there on (they come
    # top-down): it is no longer tried, which leaves the same first match (unless a box is upside
    # down or the share negative, where a negative overlap could still count).
    prune = share >= 0 and all(ln.bbox[3] >= ln.bbox[1] for ln in lines)
    open_rows: list[tuple[float, float, float, list[TextLine]]] = []  # (top, bottom, height, row)
    for line in sorted(lines, key=lambda ln: (ln.bbox[1], ln.bbox[0])):
        top, bottom = line.bbox[1], line.bbox[3]
        height = bottom - top
        if prune:
            open_rows = [item for item in open_rows if item[1] >= top]
        for first_top, first_bottom, first_height, row in open_rows:
            if min(first_bottom, bottom) - max(first_top, top) >= share * min(first_height, height):
                row.append(line)
                break
        else:
            rows.append([line])
            open_rows.append((top, bottom, height, rows[-1]))
    return rows


def group_blocks(lines: list[TextLine], same_style=None) -> list[Block]:
    """Group lines into paragraph blocks: a line joins the block directly above it when the gap is
    small, the horizontal extents overlap and the style matches; a list bullet starts a new block.

    ``same_style(a, b)`` decides whether two lines may share a block (default: font sizes within
    ``tuning.PARAGRAPH_SIZE_TOLERANCE``).
    """
    same_style = same_style or (lambda a, b: abs(a.size - b.size)
                                <= tuning.PARAGRAPH_SIZE_TOLERANCE * max(a.size, b.size))
    cells = table_cell_lines(lines)
    blocks: list[Block] = []
    for line in sorted(lines, key=lambda ln: (ln.bbox[1], ln.bbox[0])):
        best, best_gap = None, None
        if not line.is_list_start and id(line) not in cells:
            for block in blocks:
                last = block.lines[-1]
                h = max(min(line.height, last.height), 1.0)
                gap = line.bbox[1] - last.bbox[3]
                if line.bbox[1] < last.bbox[1] + tuning.PARAGRAPH_BELOW_TOP * h or gap > tuning.PARAGRAPH_GAP * h:
                    continue
                bx0, _, bx1, _ = block.bbox
                overlap = min(line.bbox[2], bx1) - max(line.bbox[0], bx0)
                if line.mono and last.mono:
                    if overlap <= 0:  # a listing's lines differ in length and indentation
                        continue
                elif overlap < tuning.PARAGRAPH_OVERLAP * min(line.bbox[2] - line.bbox[0], bx1 - bx0):
                    continue
                elif line.bbox[0] < bx0 - tuning.PARAGRAPH_OVERREACH * h \
                        or line.bbox[2] > bx1 + tuning.PARAGRAPH_OVERREACH * h and len(block.lines) > 1:
                    continue  # reaches far outside this column: a wider element below it
                if block.lines[0].is_list_start and line.bbox[0] < bx0 - tuning.LIST_LEFT_SLACK * h:
                    continue  # a list item continues under its own text, never left of its bullet
                if id(last) in cells or not same_style(last, line):
                    continue
                if best is None or gap < best_gap:
                    best, best_gap = block, gap
        if best is None:
            blocks.append(Block([line]))
        else:
            best.lines.append(line)
    return blocks


def table_cell_lines(lines: list[TextLine]) -> set[int]:
    """ids of lines that look like cells of an unruled table: short (the text width over
    ``tuning.TABLE_CELL_WIDTH_DIVISOR`` at most) and sharing their row with another line. Such
    lines are kept out of paragraphs so that the table reads row by row instead of column by column."""
    if not lines:
        return set()
    left = min(ln.bbox[0] for ln in lines)
    right = max(ln.bbox[2] for ln in lines)
    short_width = (right - left) / tuning.TABLE_CELL_WIDTH_DIVISOR
    by_top = sorted(lines, key=lambda ln: ln.bbox[1])
    prose = paragraph_lines(by_top)
    cells: set[int] = set()
    for i, a in enumerate(by_top):
        if a.bbox[2] - a.bbox[0] > short_width or id(a) in prose:
            continue
        for b in by_top[i + 1:]:
            if b.bbox[1] > a.bbox[3]:
                break
            overlap = min(a.bbox[3], b.bbox[3]) - max(a.bbox[1], b.bbox[1])
            if overlap >= tuning.TABLE_CELL_ROW_OVERLAP * min(a.height, b.height) and b.bbox[2] - b.bbox[0] <= short_width \
                    and id(b) not in prose:
                cells.update((id(a), id(b)))
    return cells


def paragraph_lines(by_top: list[TextLine]) -> set[int]:
    """ids of lines that read as running text: ``tuning.PARAGRAPH_LINE_WORDS`` words or more, with a
    line of the same width and as many words right above or below in the same column (justified
    text). Three columns of justified text have lines
    a third of the page wide that share their rows, as an unruled table's cells do; their words and
    their stacking tell them apart. ``by_top``: the lines sorted by their top."""
    out: set[int] = set()
    for i, a in enumerate(by_top):
        if _words(a.text) < tuning.PARAGRAPH_LINE_WORDS:
            continue
        for b in by_top[i + 1:]:
            h = max(min(a.height, b.height), 1.0)
            if b.bbox[1] > a.bbox[3] + tuning.NEXT_LINE_GAP_MAX * h:
                break
            gap = b.bbox[1] - a.bbox[3]
            overlap = min(a.bbox[2], b.bbox[2]) - max(a.bbox[0], b.bbox[0])
            wa, wb = a.bbox[2] - a.bbox[0], b.bbox[2] - b.bbox[0]
            if next_line_gap(gap, h) and overlap >= tuning.PROSE_STACK_OVERLAP * min(wa, wb) \
                    and abs(wa - wb) <= tuning.PROSE_STACK_WIDTH_DIFF * max(wa, wb) \
                    and _words(b.text) >= tuning.PARAGRAPH_LINE_WORDS:
                out.update((id(a), id(b)))
    return out


def next_line_gap(gap: float, h: float) -> bool:
    """True where a line ``gap`` points under another (``h``: the line height) may be the next line
    of its column: from reaching up into it (boxes taller than the ink) to most of a line's height
    apart (``tuning.NEXT_LINE_GAP_MIN`` .. ``NEXT_LINE_GAP_MAX``)."""
    return tuning.NEXT_LINE_GAP_MIN * h <= gap <= tuning.NEXT_LINE_GAP_MAX * h


_WORD = re.compile(r"[^\W\d_]{2,}")


def _words(text: str) -> float:
    """Words of two letters or more (symbols and numbers are not), a CJK character half a word."""
    cjk = len(_CJK_CHAR.findall(text))
    return len(_WORD.findall(_CJK_CHAR.sub(" ", text))) + cjk / 2


def _rows_aligned(boxes, indices, columns) -> bool:
    """True if most boxes have partners on the same row in two other columns or more: a grid
    (table, form) whose rows, not columns, carry the reading order. (Two text columns often have
    their lines on the same baselines, so one partner proves nothing.)"""
    column_of = {i: c for c, col in enumerate(columns) for i in col}
    aligned = 0
    for i in indices:
        h = boxes[i][3] - boxes[i][1]
        partner_columns = {
            column_of[j] for j in indices
            if column_of[j] != column_of[i] and abs(boxes[j][1] - boxes[i][1]) < tuning.GRID_ROW_TOP_SLACK * h
            and abs((boxes[j][3] - boxes[j][1]) - h) < tuning.GRID_ROW_HEIGHT_SLACK * h
        }
        aligned += len(partner_columns) >= 2
    return aligned >= tuning.GRID_ROW_SHARE * len(indices)


def reading_order(boxes: list[Box], min_column_gap: float = 4.0, line_height: float = 10.0) -> list[int]:
    """Indices of ``boxes`` in reading order (recursive XY-cut, columns before rows unless the boxes
    form a grid)."""

    def project(indices, axis):
        lo_i, hi_i = (0, 2) if axis == "x" else (1, 3)
        # tolerate slight vertical overlaps of stacked blocks
        shrink = 0.0 if axis == "x" else tuning.XY_CUT_ROW_OVERLAP_PT
        spans = sorted((boxes[i][lo_i] + shrink, boxes[i][hi_i] - shrink, i) for i in indices)
        return spans

    def split(indices, axis, min_gap):
        spans = project(indices, axis)
        groups, current, reach = [], [], None
        for lo, hi, i in spans:
            if current and lo - reach >= min_gap:
                groups.append(current)
                current = []
            current.append(i)
            reach = hi if reach is None or not current[:-1] else max(reach, hi)
        groups.append(current)
        return groups

    def gutters(indices):
        """Empty vertical strips (x0, x1) between the columns of ``indices``."""
        spans, out, reach = project(indices, "x"), [], None
        for lo, hi, _ in spans:
            if reach is not None and lo - reach >= min_column_gap:
                out.append((reach, lo))
            reach = hi if reach is None else max(reach, hi)
        return out

    def common(a, b):
        return [(max(x0, y0), min(x1, y1)) for x0, x1 in a for y0, y1 in b
                if min(x1, y1) - max(x0, y0) >= min_column_gap]

    def height(indices):
        return max(boxes[i][3] for i in indices) - min(boxes[i][1] for i in indices)

    def merge_bands(bands):
        """Join consecutive bands whose columns share a gutter: two columns whose paragraph gaps
        happen to line up are cut into bands, which must read column by column again. Runs of
        short bands (one or two lines) stay apart: those are form rows ("label | value"), read
        across; a short band joins only as a bridge between tall ones."""
        def tall(indices):
            return height(indices) > tuning.TALL_BAND_LINES * line_height

        merged = [(list(bands[0]), gutters(bands[0]))]
        for k, band in enumerate(bands[1:], 1):
            shared = common(merged[-1][1], gutters(band))
            bridge = tall(merged[-1][0]) and k + 1 < len(bands) and tall(bands[k + 1])
            if shared and (tall(band) and tall(merged[-1][0]) or bridge):
                merged[-1] = (merged[-1][0] + band, shared)
            else:
                merged.append((list(band), gutters(band)))
        return [m[0] for m in merged]

    def order(indices):
        if len(indices) <= 1:
            return list(indices)
        columns = split(indices, "x", min_column_gap)
        bands = split(indices, "y", 0.0)
        grid = len(columns) >= 3 and len(bands) > 1 and _rows_aligned(boxes, indices, columns)
        if len(columns) > 1 and not grid:
            return [i for col in columns for i in order(col)]
        if len(bands) > 1 and not grid:
            bands = merge_bands(bands)
        if len(bands) > 1:
            return [i for band in bands for i in order(band)]
        return sorted(indices, key=lambda i: (boxes[i][1], boxes[i][0]))

    return order(list(range(len(boxes))))


def line_reading_order(boxes: list[Box]) -> list[int]:
    """Indices of text lines' ``boxes`` in reading order: the lines joined into paragraphs
    (``line_blocks``), the paragraphs put in reading order (``reading_order``, down a column before
    the next), each paragraph's lines top to bottom. Their median height is the line height, and a
    gap of ``tuning.LINE_COLUMN_GAP`` of it between paragraphs makes a column (4 points in 10-point type).

    Why paragraphs: the lines of neighbouring columns often stand on the same baselines, and a
    line spanning the columns (a title, a running head) leaves the XY-cut no gutter over the whole
    page; it then cuts the page into one band per row and reads across the columns. Paragraphs'
    tops and bottoms do not line up, so their gutters survive."""
    if not boxes:
        return []
    height = statistics.median(b[3] - b[1] for b in boxes)
    blocks = line_blocks(boxes, height)
    spans = [(min(boxes[i][0] for i in b), min(boxes[i][1] for i in b), max(boxes[i][2] for i in b),
              max(boxes[i][3] for i in b)) for b in blocks]
    return [i for k in reading_order(spans, min_column_gap=tuning.LINE_COLUMN_GAP * height, line_height=height)
            for i in blocks[k]]


def line_blocks(boxes: list[Box], height: float) -> list[list[int]]:
    """Text lines' ``boxes`` joined into paragraphs (lists of indices, top to bottom). A line joins
    the nearest line stacked over it (a gap under ``tuning.PARAGRAPH_LINE_GAP`` line heights, a
    similar height, overlapping by half the narrower) where that one is a line of prose (at least
    ``tuning.PROSE_LINE_HEIGHTS`` heights wide: table cells stay apart, to be read by rows) and
    the nearest over no other line (a line over two columns joins neither)."""
    order = sorted(range(len(boxes)), key=lambda i: (boxes[i][1], boxes[i][0]))

    def stacked(upper: Box, lower: Box) -> bool:
        gap = lower[1] - upper[3]
        h_up, h_low = upper[3] - upper[1], lower[3] - lower[1]
        overlap = min(upper[2], lower[2]) - max(upper[0], lower[0])
        return (-tuning.LINE_STACK_BACKTRACK * height <= gap <= tuning.PARAGRAPH_LINE_GAP * height
                and max(h_up, h_low) <= tuning.LINE_STACK_HEIGHT_RATIO * max(min(h_up, h_low), 1e-6)
                and overlap >= tuning.PARAGRAPH_OVERLAP * min(upper[2] - upper[0], lower[2] - lower[0]))

    tops = [boxes[i][1] for i in order]
    above: dict[int, int] = {}  # a line -> the nearest line stacked over it
    for n, j in enumerate(order):
        # the tallest stackable line
        reach = tuning.LINE_STACK_HEIGHT_RATIO * (boxes[j][3] - boxes[j][1]) + tuning.PARAGRAPH_LINE_GAP * height
        over = [i for i in order[bisect.bisect_left(tops, boxes[j][1] - reach, 0, n):n] if stacked(boxes[i], boxes[j])]
        if over:
            above[j] = max(over, key=lambda i: boxes[i][3])
    under = Counter(above.values())  # a line -> how many lines it is the nearest over
    block_of: dict[int, int] = {}
    blocks: list[list[int]] = []
    for i in order:
        up = above.get(i)
        if up is not None and under[up] == 1 and boxes[up][2] - boxes[up][0] >= tuning.PROSE_LINE_HEIGHTS * height:
            block_of[i] = block_of[up]
            blocks[block_of[i]].append(i)
        else:
            block_of[i] = len(blocks)
            blocks.append([i])
    return blocks


def line_stacks(boxes: list[Box | None], most: int) -> list[list[int]]:
    """Runs of lines that follow each other both in ``boxes`` (the order they are read) and in one
    paragraph (``line_blocks``, top to bottom), cut after ``most`` lines: each run can be read on
    one crop. A line without a box stands alone.

    Example, ``most`` 3: a heading, then a paragraph of five lines read top to bottom, then a table
    cell -> ``[[0], [1, 2, 3], [4, 5], [6]]``."""
    known = [i for i, b in enumerate(boxes) if b is not None]
    place: dict[int, tuple[int, int]] = {}  # a line -> (its paragraph, its place in it, top to bottom)
    if known:
        height = statistics.median(boxes[i][3] - boxes[i][1] for i in known)
        for k, block in enumerate(line_blocks([boxes[i] for i in known], height)):
            place.update((known[j], (k, n)) for n, j in enumerate(block))
    stacks: list[list[int]] = []
    for i in range(len(boxes)):
        last = stacks[-1] if stacks else None
        before = place.get(last[-1]) if last is not None else None
        if before is not None and len(last) < most and place.get(i) == (before[0], before[1] + 1):
            last.append(i)
        else:
            stacks.append([i])
    return stacks


def median_line_size(lines: list[TextLine], default: float = 10.0) -> float:
    """The body font size: the size carrying the most characters."""
    weight: dict[float, int] = {}
    for ln in lines:
        key = round(ln.size * 2) / 2
        weight[key] = weight.get(key, 0) + len(ln.text)
    return max(weight, key=weight.get) if weight else default
