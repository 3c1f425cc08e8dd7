"""From text lines to labelled Markdown regions in reading order (shared by the drafters).

``lines_to_regions`` groups lines into paragraphs, orders them (``core.drafters.layout``) and labels
each by typography and position: page margins -> header/footer/page_number, larger or bold short
blocks -> title (``#``/``##``), bullets -> list, "Fig. 3." -> caption, stacked numbers -> figure (axis
labels), monospaced blocks -> code (fenced). Right-to-left pages are mirrored so that the ordering
reads them right to left.
"""

from __future__ import annotations

import dataclasses
import re
import unicodedata

from core import tuning
from core.drafters.base import Region
from core.drafters.layout import (
    BULLET_RE, Block, TextLine, group_blocks, median_line_size, merge_rows, reading_order, union_box,
)
from core.drafters.normalize import clean_draft_text

_PAGE_NUMBER = re.compile(r"^(page\s*)?(\d{1,4}|[ivxlc]{1,6})(\s*(of|/)\s*\d{1,4})?$", re.IGNORECASE)
# "Fig. 3." / "Table 2 Results" / "图 1" start a caption; "Fig. 3 shows" starts body text.
_CAPTION = re.compile(r"^(fig\.?|figure|table|tab\.|chart|图|表)\s*[0-9IVX一二三四五六七八九十][-.\d]*"
                      r"(\s*$|[.:]|\s+[A-Z(\u4e00-\u9fff])", re.IGNORECASE)
_RTL_CHAR = re.compile(r"[\u0590-\u08ff\ufb1d-\ufdff\ufe70-\ufefc]")


def lines_to_regions(lines: list[TextLine], tables: list[tuple[tuple, str]], page_width: float,
                     page_height: float, source: str, size_tolerance: float | None = None,
                     table_confidence: float = 1.0, barriers: list[tuple[float, float]] = ()) -> list[Region]:
    """Group, order and label lines (plus pre-built ``(bbox, html)`` tables) into Markdown regions.

    ``size_tolerance``: relative font-size difference still allowed inside one paragraph (default
    ``tuning.TEXT_SIZE_TOLERANCE``; OCR line heights vary more than font sizes). A region's
    confidence is the mean of its lines' ``score``; tables get ``table_confidence``. ``barriers``:
    column gutters no line merges across (``layout.merge_rows``).
    """
    if size_tolerance is None:
        size_tolerance = tuning.TEXT_SIZE_TOLERANCE

    def same_style(a: TextLine, b: TextLine) -> bool:
        return abs(a.size - b.size) <= size_tolerance * max(a.size, b.size) and a.bold == b.bold \
            and a.mono == b.mono

    rtl = is_right_to_left(lines)
    if rtl:  # mirror the page so that "left to right" below means right to left
        lines = [_mirrored_line(ln, page_width) for ln in lines]
        tables = [(_mirror(b, page_width), t) for b, t in tables]
    lines = merge_rows(lines, barriers)
    body_size = median_line_size(lines)
    blocks = group_blocks(lines, same_style=same_style)
    # Running headers/footers are taken out before ordering: one that sits over the gutter (a
    # centred page label) would otherwise stop the column cut.
    ticks = axis_tick_blocks(blocks)
    margin, body = [], []
    for block in blocks:
        label, text, extra = label_block(block, body_size, page_height)
        if id(block) in ticks:
            label, extra = "figure", {"role": "axis_labels"}
        if label in ("header", "footer") and _touches_body(block, blocks):
            label = "text"
        item = (block.bbox, label, text, extra, block.score)
        (margin if label in ("header", "footer", "page_number") else body).append(item)
    body += [(bbox, "table", table_html, {}, table_confidence) for bbox, table_html in tables]
    order = reading_order([it[0] for it in body],
                          min_column_gap=max(tuning.COLUMN_GAP_MIN_PT, tuning.COLUMN_GAP_SIZES * body_size),
                          line_height=tuning.LINE_HEIGHT_SIZES * body_size)
    tops = sorted((m for m in margin if m[1] == "header" or m[0][1] < page_height / 2), key=lambda m: m[0][0])
    bottoms = sorted((m for m in margin if m not in tops), key=lambda m: (m[0][1], m[0][0]))
    regions: list[Region] = []
    for bbox, label, text, extra, confidence in tops + [body[i] for i in order] + bottoms:
        if rtl:
            bbox = _mirror(bbox, page_width)
        if label == "code":
            text = clean_code_text(text)
        elif label != "table":
            text = clean_draft_text(text)
        if not text:
            continue
        if label == "code" and regions and regions[-1].label == "code" and _stacked(regions[-1].bbox, bbox):
            prev = regions[-1]  # one listing broken by a blank line, or by a line set apart
            prev.text = prev.text[:-len(CODE_END)] + "\n" + text[len(CODE_FENCE):]
            prev.bbox = union_box([prev.bbox, bbox])
            continue
        if label == "list" and regions and regions[-1].label == "list" and _stacked(regions[-1].bbox, bbox) \
                and _list_kind(regions[-1].text.splitlines()[-1]) == _list_kind(text):
            prev = regions[-1]
            prev.text += "\n" + text
            prev.bbox = union_box([prev.bbox, bbox])
            continue
        regions.append(Region(label, bbox, text, source, confidence, extra))
    return regions


_TICK = re.compile(r"^[-+]?\d[\d.,]*\s*%?$|^\d{2,4}[-/.]\d{1,2}([-/.]\d{1,2})?$|^\d{1,2}[A-Z]?$")


def axis_tick_blocks(blocks: list[Block]) -> set[int]:
    """ids of one-line numeric blocks stacked ``tuning.AXIS_TICK_RUN`` or more in a row or column:
    chart axis labels, which a document reader leaves out (the references do too)."""
    candidates = [b for b in blocks if len(b.lines) == 1 and _TICK.match(b.lines[0].text.strip())]
    if len(candidates) < tuning.AXIS_TICK_RUN:
        return set()
    others = [b for b in blocks if b not in candidates]
    ticks: set[int] = set()
    for b in candidates:
        x0, y0, x1, y1 = b.bbox
        if any(abs((o.bbox[1] + o.bbox[3]) - (y0 + y1)) < 2 * tuning.AXIS_TICK_ROW_PT for o in others):
            continue  # a number with a label on its row is a table cell, not an axis label
        # centres compared as sums of two edges: twice the distance
        same_column = [c for c in candidates if abs(c.bbox[2] - x1) < tuning.AXIS_TICK_COLUMN_PT
                       or abs((c.bbox[0] + c.bbox[2]) - (x0 + x1)) < 2 * tuning.AXIS_TICK_COLUMN_PT]
        same_row = [c for c in candidates if abs((c.bbox[1] + c.bbox[3]) - (y0 + y1)) < 2 * tuning.AXIS_TICK_ROW_PT]
        if len(same_column) >= tuning.AXIS_TICK_RUN or len(same_row) >= tuning.AXIS_TICK_RUN:
            ticks.add(id(b))
    return ticks


def _touches_body(block: Block, blocks: list[Block]) -> bool:
    """True if another block continues right under (or above) ``block`` in the same column, as body
    text does; a running header or footer is set apart by at least about a line."""
    x0, y0, x1, y1 = block.bbox
    for other in blocks:
        if other is block:
            continue
        ox0, oy0, ox1, oy1 = other.bbox
        if min(x1, ox1) - max(x0, ox0) <= 0:
            continue
        gap = oy0 - y1 if oy0 >= y1 else y0 - oy1
        if 0 <= gap < tuning.MARGIN_APART_SIZES * block.size:
            return True
    return False


def is_right_to_left(lines) -> bool:
    """True if most letters on the page are Arabic or Hebrew."""
    text = "".join(ln.text for ln in lines)
    letters = sum(1 for c in text if c.isalpha())
    return letters > 0 and len(_RTL_CHAR.findall(text)) > tuning.RTL_SHARE * letters


def _mirror(box, page_width):
    return (page_width - box[2], box[1], page_width - box[0], box[3])


def _mirrored_line(line: TextLine, page_width: float) -> TextLine:
    return dataclasses.replace(line, bbox=_mirror(line.bbox, page_width))


def _list_kind(item: str) -> str:
    """"bullet" or "numbered": a bulleted list and a numbered one stay separate regions."""
    return "bullet" if item.startswith("- ") else "numbered"


def _stacked(upper, lower) -> bool:
    """True if ``lower`` sits just under ``upper`` in the same column (consecutive list items)."""
    return abs(upper[0] - lower[0]) < tuning.STACKED_LEFT_PT and 0 <= lower[1] - upper[3] < tuning.STACKED_GAP_PT


CODE_FENCE, CODE_END = "```\n", "\n```"
_INNER_SPACES = re.compile(r"[ \t]{2,}")


def code_text(block: Block) -> str:
    """A monospaced block as a fenced code block, one source line per line, indentation rebuilt from
    each line's left edge in character widths (the text layer drops leading spaces)."""
    widths = [(ln.bbox[2] - ln.bbox[0]) / len(ln.text.strip()) for ln in block.lines
              if len(ln.text.strip()) >= tuning.CODE_MEASURED_CHARS]
    char = sorted(widths)[len(widths) // 2] if widths else max(block.size * tuning.CODE_CHAR_WIDTH, 1.0)
    left = min(ln.bbox[0] for ln in block.lines)
    body = "\n".join(" " * round((ln.bbox[0] - left) / char) + ln.text.strip() for ln in block.lines)
    return CODE_FENCE + body + CODE_END


def clean_code_text(text: str) -> str:
    """``clean_draft_text`` for a code block: NFKC, and space runs inside a line become one space
    (the convention drafts and references share: ``core.bench.corpus.collapse_spaces``), but
    indentation is kept."""
    text = unicodedata.normalize("NFKC", text).replace("\r\n", "\n")
    lines = []
    for line in text.split("\n"):
        body = line.lstrip(" ")
        lines.append(line[:len(line) - len(body)] + _INNER_SPACES.sub(" ", body.rstrip()))
    return "\n".join(lines).strip("\n")


def label_block(block: Block, body_size: float, page_height: float) -> tuple[str, str, dict]:
    """(label, Markdown text, extra) for one block."""
    text = block.text()
    x0, y0, x1, y1 = block.bbox
    in_top = y1 <= tuning.MARGIN_BAND * page_height
    in_bottom = y0 >= (1 - tuning.MARGIN_BAND) * page_height
    if (in_top or in_bottom) and len(block.lines) <= tuning.MARGIN_MAX_LINES and not _CAPTION.match(text) \
            and block.size <= body_size * tuning.MARGIN_MAX_SIZE:
        if _PAGE_NUMBER.match(text.strip()):
            return "page_number", text, {}
        return ("header" if in_top else "footer"), text, {}
    if block.mono and any(c.isalnum() for c in text):
        return "code", code_text(block), {}
    first = block.lines[0].text
    if _CAPTION.match(first):
        return "caption", text, {}
    if BULLET_RE.match(first):
        return "list", BULLET_RE.sub("- ", text, count=1), {}
    # "2. Methods" in a larger or bold font is a numbered heading, not a list item.
    heading_font = block.size >= tuning.H2_SIZE * body_size or block.bold
    short = len(block.lines) <= tuning.TITLE_MAX_LINES and len(text) <= tuning.TITLE_MAX_CHARS
    if short and any(c.isalpha() for c in text) \
            and (heading_font or not block.lines[0].is_list_start):
        level = 0
        if block.size >= tuning.H1_SIZE * body_size:
            level = 1
        elif block.size >= tuning.H2_SIZE * body_size:
            level = 2
        elif block.bold and block.size >= tuning.H3_SIZE * body_size and len(text) <= tuning.H3_MAX_CHARS \
                and not text.rstrip().endswith((".", ":", ",")):
            level = 3 if len(text) >= tuning.H3_MIN_CHARS else 0
        if level:
            return "title", "#" * level + " " + text, {"level": level}
    if block.lines[0].is_list_start:
        return "list", text, {}
    if len(block.lines) <= tuning.FORMULA_MAX_LINES and looks_like_formula(text):
        return "formula", text, {}
    return "text", text, {}


#: Relations and operators that make a line a formula (with few words around them); ``-``, ``+``
#: and ``/`` alone also join dates, ranges and compounds.
_MATH_OPERATOR = re.compile(r"[=<>\u2264\u2265\u2260\u2248\u00b1\u00d7\u00f7\u2211\u220f\u222b\u221a\u2202\u221e"
                            r"\u2208\u2209\u2282\u2286\u2192\u21d2\u2207\u2200\u2203^]")
_WORD = re.compile(r"[^\W\d_]{3,}")
#: Words a formula may hold (functions, operators written out).
_MATH_WORDS = frozenset("sin cos tan log exp lim max min sup inf det arg mod and for".split())


def looks_like_formula(text: str) -> bool:
    """True for a line of mathematics (``a² + 8 = 12``, ``x ∈ ∂U``): an operator or relation, and
    at most one word of three letters or more per four symbols, functions aside."""
    compact = text.replace(" ", "")
    if len(compact) < tuning.FORMULA_MIN_CHARS or not _MATH_OPERATOR.search(text) or _CJK_TEXT.search(text):
        return False
    words = [w for w in _WORD.findall(text) if w.lower() not in _MATH_WORDS]
    return sum(len(w) for w in words) <= tuning.FORMULA_WORD_SHARE * len(compact) and len(words) <= tuning.FORMULA_MAX_WORDS


_CJK_TEXT = re.compile("[\u4e00-\u9fff\u3040-\u30ff]")
