"""Draft from the PDF text layer (born-digital pages): no model, tens of ms per page.

Lines from PyMuPDF (with font size and weight) go through ``core.drafters.regions`` (paragraphs,
reading order, labels); ruled tables found by ``find_tables`` become HTML regions.
"""

from __future__ import annotations

import html
import re

import pymupdf

from core.drafters.base import Region
from core.drafters.layout import TextLine
from core.drafters.regions import lines_to_regions

# Ligature glyphs that some PDFs follow with a spurious space ("signiﬁ cantly").
_LIGATURE_GAP = re.compile(r"([\ufb00-\ufb06]) (?=[a-z])")
_TEXT_FLAGS = pymupdf.TEXT_PRESERVE_LIGATURES | pymupdf.TEXT_PRESERVE_WHITESPACE | pymupdf.TEXT_MEDIABOX_CLIP


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
            tables = [(box, text if text is not None else _rows_text(lines, box)) for box, text in tables]
            lines = [ln for ln in lines if not any(_center_inside(ln.bbox, t[0]) for t in tables)]
        # Text comes in the unrotated page space; order it there, then turn the boxes with the page.
        unrotated = fitz_page.rect * fitz_page.derotation_matrix
        regions = lines_to_regions(lines, tables, abs(unrotated.width), abs(unrotated.height), source=self.name)
        if fitz_page.rotation:
            for region in regions:
                region.bbox = tuple(pymupdf.Rect(region.bbox) * fitz_page.rotation_matrix)
        return regions


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
                                  bold_chars >= 0.95 * chars, len(lines), block_number))
    return lines


def find_ruled_tables(fitz_page: pymupdf.Page) -> list[tuple[tuple, str | None]]:
    """Ruled tables as (bbox, html); html None where the grid's cells miss text inside its box (read
    the box's lines instead). Skipped fast when the page lacks horizontal and vertical rules."""
    try:
        paths = fitz_page.get_cdrawings()
    except Exception:
        return []
    horizontal = vertical = 0
    for path in paths:
        for item in path["items"]:
            if item[0] in ("re", "qu"):  # a rectangle brings two edges of each direction
                rect = pymupdf.Rect(item[1]) if item[0] == "re" else pymupdf.Quad(item[1]).rect
                if rect.width > 10 and rect.height > 10:
                    horizontal += 2
                    vertical += 2
                elif rect.width > 10:
                    horizontal += 1
                elif rect.height > 10:
                    vertical += 1
            elif item[0] == "l":
                (x0, y0), (x1, y1) = item[1], item[2]
                if abs(y1 - y0) <= 1 and abs(x1 - x0) > 10:
                    horizontal += 1
                elif abs(x1 - x0) <= 1 and abs(y1 - y0) > 10:
                    vertical += 1
    if horizontal < 2 or horizontal + vertical < 4:
        return []  # find_tables costs 100s of ms; without ruling lines it finds nothing we want
    try:
        found = fitz_page.find_tables()
    except Exception:
        return []  # find_tables is heuristic; a failure must not cost the page its text
    tables = []
    words = fitz_page.get_text("words", flags=_TEXT_FLAGS)
    for table in found.tables:
        held = cell_words(table, words)
        rows = table_cell_texts(held)
        cells = [c for r in rows for c in r if c is not None]
        empty = sum(1 for c in cells if not c.strip())
        if table.row_count < 2 or table.col_count < 2 or empty > 0.5 * len(cells):
            continue  # mostly empty grids are page frames or forms, better read as text
        if _cell_coverage(table, words, held) < 0.9:
            # the grid misses text inside its box (two tables read as one): its lines row by row
            tables.append((tuple(table.bbox), None))
            continue
        split = _side_by_side_split(rows)
        if split:
            first_right = table.rows[0].cells[split]
            left = [r[:split] for r in rows]
            right = [r[split:] for r in rows]
            x0, y0, x1, y1 = table.bbox
            mid = first_right[0] if first_right else (x0 + x1) / 2
            tables.append(((x0, y0, mid, y1), table_to_html(left)))
            tables.append(((mid, y0, x1, y1), table_to_html(right)))
            continue
        tables.append((tuple(table.bbox), table_to_html(rows)))
    return tables


def cell_words(table, words) -> list[list[list | None]]:
    """Per row and cell slot, the page's words whose centres lie in the cell, in reading order
    (None where a merged cell covers the slot)."""
    rows = []
    for row in table.rows:
        slots = []
        for cell in row.cells:
            if cell is None:
                slots.append(None)
                continue
            inside = [w for w in words if _center_inside(w[:4], cell)]
            inside.sort(key=lambda w: (w[5], w[6], w[7]))  # block, line, word number
            slots.append(inside)
        rows.append(slots)
    return rows


def table_cell_texts(held: list[list[list | None]]) -> list[list[str | None]]:
    """Cell texts row by row from ``cell_words`` (None where a merged cell covers the slot), built
    from the page's words so that spaces survive (``Table.extract`` glues some words together)."""
    return [[None if slot is None else " ".join(w[4] for w in slot) for slot in row] for row in held]


def _rows_text(lines: list[TextLine], box) -> str:
    """The lines inside ``box`` as text rows: lines whose vertical centres are close share a row,
    left to right; rows top to bottom."""
    inside = sorted((ln for ln in lines if _center_inside(ln.bbox, box)), key=lambda ln: (ln.bbox[1] + ln.bbox[3]) / 2)
    rows: list[list[TextLine]] = []
    for ln in inside:
        mid = (ln.bbox[1] + ln.bbox[3]) / 2
        if rows and abs(mid - (rows[-1][0].bbox[1] + rows[-1][0].bbox[3]) / 2) < 0.5 * (ln.bbox[3] - ln.bbox[1]):
            rows[-1].append(ln)
        else:
            rows.append([ln])
    return "\n".join(" ".join(ln.text.strip() for ln in sorted(row, key=lambda ln: ln.bbox[0])) for row in rows)


def _cell_coverage(table, words, held: list[list[list | None]]) -> float:
    """Share of the words inside the table's box that some cell holds (``held``: ``cell_words``;
    1.0 for an empty box)."""
    inside = [w for w in words if _center_inside(w[:4], table.bbox)]
    if not inside:
        return 1.0
    in_cells = {id(w) for row in held for slot in row if slot for w in slot}
    return sum(1 for w in inside if id(w) in in_cells) / len(inside)


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
