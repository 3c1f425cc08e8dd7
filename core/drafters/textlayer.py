"""Draft from the PDF text layer (born-digital pages): milliseconds per page, no model.

Lines from PyMuPDF -> paragraph blocks -> XY-cut reading order (``core.drafters.layout``), then
each block is labelled by simple typography: page margins -> header/footer/page_number, larger or
bold short blocks -> title (``#``/``##``), bullets -> list, ruled tables (``find_tables``) -> HTML.
"""

from __future__ import annotations

import html
import re

import pymupdf

from core.drafters.base import Region
from core.drafters.layout import (
    BULLET_RE, Block, TextLine, group_blocks, median_line_size, merge_rows, reading_order, union_box,
)
from core.drafters.normalize import clean_draft_text

# Ligature glyphs that some PDFs follow with a spurious space ("signiﬁ cantly").
_LIGATURE_GAP = re.compile(r"([\ufb00-\ufb06]) (?=[a-z])")
_PAGE_NUMBER = re.compile(r"^(page\s*)?(\d{1,4}|[ivxlc]{1,6})(\s*(of|/)\s*\d{1,4})?$", re.IGNORECASE)
# "Fig. 3." / "Table 2 Results" / "图 1" start a caption; "Fig. 3 shows" starts body text.
_CAPTION = re.compile(r"^(fig\.?|figure|table|tab\.|chart|图|表)\s*[0-9IVX一二三四五六七八九十][-.\d]*"
                      r"(\s*$|[.:]|\s+[A-Z(\u4e00-\u9fff])", re.IGNORECASE)
_RTL_CHAR = re.compile(r"[\u0590-\u08ff\ufb1d-\ufdff\ufe70-\ufefc]")
_TEXT_FLAGS = pymupdf.TEXT_PRESERVE_LIGATURES | pymupdf.TEXT_PRESERVE_WHITESPACE | pymupdf.TEXT_MEDIABOX_CLIP
#: Fraction of the page height at the top/bottom where running headers and footers live.
MARGIN_BAND = 0.085


class TextLayerDrafter:
    """Regions from the text layer. ``tables``: look for ruled tables (costs a few ms on pages with
    vector lines, nothing on pages without)."""

    name = "textlayer"

    def __init__(self, tables: bool = True):
        self.tables = tables

    def draft(self, page) -> list[Region]:
        fitz_page = page.fitz_page if hasattr(page, "fitz_page") else page
        lines = extract_lines(fitz_page)
        tables = find_ruled_tables(fitz_page) if self.tables else []
        if tables:
            lines = [ln for ln in lines if not any(_center_inside(ln.bbox, t[0]) for t in tables)]
        return lines_to_regions(lines, tables, fitz_page.rect.width, fitz_page.rect.height, source=self.name)


def extract_lines(fitz_page: pymupdf.Page) -> list[TextLine]:
    """Horizontal text lines of the page with their dominant font size and boldness."""
    lines: list[TextLine] = []
    data = fitz_page.get_text("dict", flags=_TEXT_FLAGS)
    for block_number, block in enumerate(data["blocks"]):
        for line in block.get("lines", []):
            spans = [s for s in line["spans"] if s["text"].strip()]
            if not spans:
                continue
            text = "".join(s["text"] for s in line["spans"]).strip()
            chars = sum(len(s["text"]) for s in spans)
            size = max(spans, key=lambda s: len(s["text"]))["size"]
            bold_chars = sum(len(s["text"]) for s in spans if s["flags"] & 16 or "Bold" in s["font"])
            dx, dy = line["dir"]
            if abs(dy) > 0.2:  # rotated margin text (arXiv stamps, vertical labels)
                continue
            lines.append(TextLine(tuple(line["bbox"]), _LIGATURE_GAP.sub(r"\1", text), size,
                                  bold_chars >= 0.6 * chars, len(lines), block_number))
    return lines


def find_ruled_tables(fitz_page: pymupdf.Page) -> list[tuple[tuple, str]]:
    """Ruled tables as (bbox, html). Skipped fast when the page lacks horizontal and vertical rules."""
    try:
        paths = fitz_page.get_cdrawings()
    except Exception:
        return []
    horizontal = vertical = 0
    for path in paths:
        x0, y0, x1, y1 = path["rect"]
        if abs(y1 - y0) <= 3 and x1 - x0 > 10:
            horizontal += 1
        elif abs(x1 - x0) <= 3 and y1 - y0 > 10:
            vertical += 1
        elif path.get("type") != "s" and x1 - x0 > 10 and y1 - y0 > 10:
            horizontal += 1  # filled or framed boxes can be cells too
            vertical += 1
    if horizontal < 2 or horizontal + vertical < 4:
        return []  # find_tables costs 100s of ms; without ruling lines it finds nothing we want
    try:
        found = fitz_page.find_tables()
    except Exception:
        return []  # find_tables is heuristic; a failure must not cost the page its text
    tables = []
    for table in found.tables:
        rows = table.extract()
        cells = [c for r in rows for c in r if c is not None]
        empty = sum(1 for c in cells if not c.strip())
        if table.row_count < 2 or table.col_count < 2 or empty > 0.5 * len(cells):
            continue  # mostly empty grids are page frames or forms, better read as text
        split = _side_by_side_split(rows)
        if split:
            x_split = table.cells[split][0] if len(table.cells) > split and table.cells[split] else None
            left = [r[:split] for r in rows]
            right = [r[split:] for r in rows]
            x0, y0, x1, y1 = table.bbox
            mid = x_split if x_split is not None else (x0 + x1) / 2
            tables.append(((x0, y0, mid, y1), table_to_html(left)))
            tables.append(((mid, y0, x1, y1), table_to_html(right)))
            continue
        tables.append((tuple(table.bbox), table_to_html(rows)))
    return tables


def _side_by_side_split(rows) -> int | None:
    """Column index where a table is really two tables side by side: the first row's column
    headers repeat ("item 2021 2022E | item 2021 2022E"), as in financial statements."""
    head = [(c or "").strip() for c in rows[0]]
    n = len(head)
    for k in range(2, n - 1):
        if n - k == k and head[1:k] == head[k + 1:] and any(head[1:k]):
            return k
    return None


def table_to_html(rows: list[list[str | None]]) -> str:
    """Rows of cell texts (None = covered by a merged cell) -> a compact HTML table."""
    out = ["<table>"]
    for row in rows:
        cells = "".join(f"<td>{html.escape(' '.join((c or '').split()))}</td>" for c in row if c is not None)
        out.append(f"<tr>{cells}</tr>")
    out.append("</table>")
    return "".join(out)


def _center_inside(box, outer) -> bool:
    cx, cy = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
    return outer[0] <= cx <= outer[2] and outer[1] <= cy <= outer[3]


def _same_style(a: TextLine, b: TextLine) -> bool:
    return abs(a.size - b.size) <= 0.12 * max(a.size, b.size) and a.bold == b.bold


def lines_to_regions(lines, tables, page_width: float, page_height: float, source: str,
                     confidence: float = 1.0) -> list[Region]:
    """Group, order and label lines (plus pre-built table regions) into Markdown regions."""
    rtl = is_right_to_left(lines)
    if rtl:  # mirror the page so that "left to right" below means right to left
        lines = [_mirrored_line(ln, page_width) for ln in lines]
        tables = [(_mirror(b, page_width), t) for b, t in tables]
    lines = merge_rows(lines)
    body_size = median_line_size(lines)
    blocks = group_blocks(lines, same_style=_same_style)
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
        (margin if label in ("header", "footer", "page_number") else body).append((block.bbox, label, text, extra))
    body += [(bbox, "table", table_html, {}) for bbox, table_html in tables]
    order = reading_order([it[0] for it in body], min_column_gap=max(2.0, 0.3 * body_size))
    tops = sorted((m for m in margin if m[1] == "header" or m[0][1] < page_height / 2), key=lambda m: m[0][0])
    bottoms = sorted((m for m in margin if m not in tops), key=lambda m: (m[0][1], m[0][0]))
    regions: list[Region] = []
    for bbox, label, text, extra in tops + [body[i] for i in order] + bottoms:
        if rtl:
            bbox = _mirror(bbox, page_width)
        if label != "table":
            text = clean_draft_text(text)
        if not text:
            continue
        if label == "list" and regions and regions[-1].label == "list" and _stacked(regions[-1].bbox, bbox):
            prev = regions[-1]
            prev.text += "\n" + text
            prev.bbox = union_box([prev.bbox, bbox])
            continue
        regions.append(Region(label, bbox, text, source, confidence, extra))
    return regions


_TICK = re.compile(r"^[-+]?\d[\d.,]*\s*%?$|^\d{2,4}[-/.]\d{1,2}([-/.]\d{1,2})?$|^\d{1,2}[A-Z]?$")


def axis_tick_blocks(blocks: list[Block]) -> set[int]:
    """ids of one-line numeric blocks stacked four or more in a row or column: chart axis labels,
    which a document reader leaves out (the references do too)."""
    candidates = [b for b in blocks if len(b.lines) == 1 and _TICK.match(b.lines[0].text.strip())]
    if len(candidates) < 4:
        return set()
    others = [b for b in blocks if b not in candidates]
    ticks: set[int] = set()
    for b in candidates:
        x0, y0, x1, y1 = b.bbox
        if any(abs((o.bbox[1] + o.bbox[3]) - (y0 + y1)) < 4 for o in others):
            continue  # a number with a label on its row is a table cell, not an axis label
        same_column = [c for c in candidates if abs(c.bbox[2] - x1) < 3 or abs((c.bbox[0] + c.bbox[2]) - (x0 + x1)) < 6]
        same_row = [c for c in candidates if abs((c.bbox[1] + c.bbox[3]) - (y0 + y1)) < 4]
        if len(same_column) >= 4 or len(same_row) >= 4:
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
        if 0 <= gap < 0.5 * block.size:
            return True
    return False


def is_right_to_left(lines) -> bool:
    """True if most letters on the page are Arabic or Hebrew."""
    text = "".join(ln.text for ln in lines)
    letters = sum(1 for c in text if c.isalpha())
    return letters > 0 and len(_RTL_CHAR.findall(text)) > 0.5 * letters


def _mirror(box, page_width):
    return (page_width - box[2], box[1], page_width - box[0], box[3])


def _mirrored_line(line: TextLine, page_width: float) -> TextLine:
    return TextLine(_mirror(line.bbox, page_width), line.text, line.size, line.bold, line.source_index, line.group)


def _stacked(upper, lower) -> bool:
    """True if ``lower`` sits just under ``upper`` in the same column (consecutive list items)."""
    return abs(upper[0] - lower[0]) < 30 and 0 <= lower[1] - upper[3] < 20


def label_block(block: Block, body_size: float, page_height: float) -> tuple[str, str, dict]:
    """(label, Markdown text, extra) for one block."""
    text = block.text()
    x0, y0, x1, y1 = block.bbox
    in_top = y1 <= MARGIN_BAND * page_height
    in_bottom = y0 >= (1 - MARGIN_BAND) * page_height
    if (in_top or in_bottom) and len(block.lines) <= 4 and not _CAPTION.match(text) and block.size <= body_size * 1.1:
        if _PAGE_NUMBER.match(text.strip()):
            return "page_number", text, {}
        return ("header" if in_top else "footer"), text, {}
    first = block.lines[0].text
    if _CAPTION.match(first):
        return "caption", text, {}
    if BULLET_RE.match(first):
        return "list", BULLET_RE.sub("- ", text, count=1), {}
    if len(block.lines) <= 3 and len(text) <= 160 and not block.lines[0].is_list_start \
            and any(c.isalpha() for c in text):
        level = 0
        if block.size >= 1.6 * body_size:
            level = 1
        elif block.size >= 1.15 * body_size:
            level = 2
        elif block.bold and block.size >= 0.95 * body_size and len(text) <= 100 and not text.rstrip().endswith((".", ":", ",")):
            level = 3 if len(text) > 2 else 0
        if level:
            return "title", "#" * level + " " + text, {"level": level}
    if block.lines[0].is_list_start:
        return "list", text, {}
    return "text", text, {}
