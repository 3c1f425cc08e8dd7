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
* ``uncovered_lines``: OCR lines whose text no region's draft holds; each becomes a region of
  its own, at its place in the reading order (invariant: every OCR line's text appears in exactly
  one region's draft).
* ``text_in_figure``: a region labelled figure whose lines are sentences or a heading in the
  body's size or larger is text (a title, a paragraph): labels and legends in figures are short
  and small.
* Formula lines labelled text are found where all text is labelled (``regions.label_block``,
  ``looks_like_formula``), for the text layer and OCR alike.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from core.drafters.base import Region
from core.drafters.layout import CJK_CHARS, TextLine, rows_of
from core.drafters.normalize import normalize_for_match

#: A table's lines read as prose when at least this share of them are long ...
PROSE_LONG_SHARE = 0.5
#: ... (this many words or more; a CJK character counts as half a word) ...
PROSE_LINE_WORDS = 5
#: ... and at least this share of them wrap onto the line under them in the same column.
PROSE_WRAP_SHARE = 0.35
#: A figure's text is a sentence or heading when it has at least this many words (CJK: twice as
#: many characters) and its lines are at least this share of the body's size.
FIGURE_TEXT_WORDS = 4
FIGURE_TEXT_SIZE = 0.9

_CJK = re.compile(f"[{CJK_CHARS}]")
_SENTENCE_END = re.compile(r"[.!?:;。！？：；]\s*$")


@dataclass
class LayoutReport:
    """What the check found on one page and repaired."""
    prose_tables: int = 0
    uncovered_lines: int = 0
    figure_text: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def repaired(self) -> bool:
        return bool(self.prose_tables or self.uncovered_lines or self.figure_text)

    def summary(self) -> dict:
        return {k: v for k, v in (("prose_tables", self.prose_tables), ("uncovered_lines", self.uncovered_lines),
                                  ("figure_text", self.figure_text)) if v}


def words(text: str) -> float:
    """Words in ``text``: Latin words, and CJK characters at two to a word."""
    cjk = len(_CJK.findall(text))
    return len(_CJK.sub(" ", text).split()) + cjk / 2


def reads_as_prose(lines: list[TextLine]) -> bool:
    """True if the lines inside a table box read as running text: most are long, and many wrap
    onto the next line of their column (the upper line fills the column and does not end a
    sentence). Table cells are short, or stand apart row by row."""
    if len(lines) < 4:
        return False
    long = sum(words(ln.text) >= PROSE_LINE_WORDS for ln in lines)
    if long < PROSE_LONG_SHARE * len(lines):
        return False
    wraps = 0
    for ln in lines:
        below = _next_in_column(ln, lines)
        if below is None or _SENTENCE_END.search(ln.text):
            continue
        column_right = max(ln.bbox[2], below.bbox[2])
        fills = ln.bbox[2] >= column_right - 0.1 * (column_right - ln.bbox[0])
        if fills and words(ln.text) >= PROSE_LINE_WORDS:
            wraps += 1
    return wraps >= PROSE_WRAP_SHARE * len(lines)


def _next_in_column(line: TextLine, lines: list[TextLine]) -> TextLine | None:
    """The line right under ``line`` that shares most of its horizontal extent, within a line's gap."""
    h = max(line.height, 1.0)
    best, best_gap = None, None
    for other in lines:
        gap = other.bbox[1] - line.bbox[3]
        if other is line or gap < -0.3 * h or gap > 0.8 * h:
            continue
        overlap = min(line.bbox[2], other.bbox[2]) - max(line.bbox[0], other.bbox[0])
        if overlap < 0.6 * min(line.bbox[2] - line.bbox[0], other.bbox[2] - other.bbox[0]):
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


def text_in_figure(region: Region, lines: list[TextLine], body_size: float) -> bool:
    """True if a region labelled figure holds a sentence or heading (see module docstring)."""
    inside = [ln for ln in lines if _center_inside(ln.bbox, region.bbox)]
    if not inside:
        return False
    size = max(ln.size for ln in inside)
    return words(region.text) >= FIGURE_TEXT_WORDS and size >= FIGURE_TEXT_SIZE * body_size \
        and any(words(row_text) >= FIGURE_TEXT_WORDS for row_text in (" ".join(ln.text for ln in row)
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
    return outer[0] - 1 <= cx <= outer[2] + 1 and outer[1] - 1 <= cy <= outer[3] + 1
