"""Draft from the PDF text layer (born-digital pages): no model, tens of ms per page.

Lines from PyMuPDF (with font size and weight) go through ``core.drafters.regions`` (paragraphs,
reading order, labels); ruled tables found by ``find_tables`` become HTML regions.
"""

from __future__ import annotations

import dataclasses
import html
import re

import pymupdf

from core import tuning
from core.drafters.base import DrafterBase, Region
from core.documents import turn_matrix
from core.drafters.charts import graphics, merge_charts
from core.drafters.layout import TextLine, median_line_size
from core.drafters.orientation import line_turn
from core.drafters.regions import lines_to_regions

# Ligature glyphs that some PDFs follow with a spurious space ("signiﬁ cantly").
_LIGATURE_GAP = re.compile(r"([\ufb00-\ufb06]) (?=[a-z])")
_TEXT_FLAGS = pymupdf.TEXT_PRESERVE_LIGATURES | pymupdf.TEXT_PRESERVE_WHITESPACE | pymupdf.TEXT_MEDIABOX_CLIP


class TextLayerDrafter(DrafterBase):
    """Regions from the text layer. ``tables``: look for ruled tables (costs a few ms on pages with
    vector lines, nothing on pages without)."""

    name = "textlayer"

    def __init__(self, tables: bool = True):
        self.tables = tables

    def draft(self, page) -> list[Region]:
        fitz_page = page.fitz_page if hasattr(page, "fitz_page") else page
        turn_of_page = getattr(page, "turn", 0)
        # Text comes in the unrotated page space; ``to_page`` takes it to the page's frame (the file's
        # rotation, then the page's turn: what the model sees).
        to_page = fitz_page.rotation_matrix * turn_matrix(fitz_page.rect, turn_of_page)
        by_turn = extract_lines_by_turn(fitz_page, to_page)
        own = line_turn((1.0, 0.0), to_page)  # the turn of text upright in the unrotated space
        chars = {t: _chars(group) for t, group in by_turn.items()}
        dominant = max(chars, key=chars.get) if chars else own
        if dominant != own:
            # Most of the text is drawn turned inside the page (a slide printed sideways): the page
            # is drawn again with that text upright, and drafted whole there (tables, charts).
            regions = self._draft_upright_copy(fitz_page, (dominant + turn_of_page) % 360, turn_of_page)
            if regions is not None:
                return regions
        return self._draft(fitz_page, to_page, by_turn, own)

    def _draft_upright_copy(self, fitz_page, display_turn: int, turn_of_page: int) -> list[Region] | None:
        """The regions of ``fitz_page`` drawn turned by ``display_turn`` on a page of its own (its
        text then upright in that page's own space), boxes turned back into the frame the page's
        ``turn_of_page`` makes; None where the page cannot be drawn again."""
        shown = fitz_page.rect
        try:
            copy = pymupdf.open()
            turned = shown * turn_matrix(shown, display_turn)
            upright = copy.new_page(width=turned.width, height=turned.height)
            upright.show_pdf_page(upright.rect, fitz_page.parent, fitz_page.number, rotate=(360 - display_turn) % 360)
        except Exception:  # a page MuPDF cannot draw as a form: its lines in their frames instead
            return None
        by_turn = extract_lines_by_turn(upright, pymupdf.Matrix(1, 1))
        regions = self._draft(upright, pymupdf.Matrix(1, 1), by_turn, 0)
        back = ~turn_matrix(shown, display_turn) * turn_matrix(shown, turn_of_page)
        turn = (display_turn - turn_of_page) % 360  # the text's turn in the page's frame
        for region in regions:
            region.bbox = tuple(pymupdf.Rect(region.bbox) * back)
            extra = (region.extra.get("turn", 0) + turn) % 360
            region.extra = {k: v for k, v in region.extra.items() if k != "turn"}
            if extra:
                region.extra["turn"] = extra
        copy.close()
        return regions

    def _draft(self, fitz_page, to_page: pymupdf.Matrix, by_turn: dict[int, list[TextLine]], own: int | None) -> list[Region]:
        """Regions of the lines ``by_turn`` (``extract_lines_by_turn`` with ``to_page``), each
        direction in its own frame, ruled tables and charts with the unrotated space's own (``own``)."""
        page_rect = fitz_page.rect * to_page
        lines = by_turn.get(own, [])
        tables = find_ruled_tables(fitz_page) if self.tables else []
        if tables:
            tables = [t for box, text in tables
                      for t in ([(box, text)] if text is not None else lines_as_tables(lines, box))]
            lines = [ln for ln in lines if not any(_center_inside(ln.bbox, t[0]) for t in tables)]
        by_turn[own] = lines
        regions = []
        for turn in drafted_turns({t: _chars(group) for t, group in by_turn.items()}, own):
            # Each direction is ordered in its own frame, where it reads left to right; its boxes
            # are then turned into the page's frame.
            frame = to_page * turn_matrix(page_rect, turn)
            framed = [dataclasses.replace(ln, bbox=tuple(pymupdf.Rect(ln.bbox) * frame)) for ln in by_turn[turn]]
            framed_tables = [(tuple(pymupdf.Rect(box) * frame), text) for box, text in tables] if turn == own else []
            size = page_rect * turn_matrix(page_rect, turn)
            back = ~frame * to_page
            drafted = lines_to_regions(framed, framed_tables, abs(size.width), abs(size.height), source=self.name)
            if turn == own and drafted:  # a chart's labels and drawing: one figure region
                drafted = merge_charts(drafted, graphics(fitz_page, frame), median_line_size(framed),
                                       abs(size.width * size.height))
            for region in drafted:
                region.bbox = tuple(pymupdf.Rect(region.bbox) * back)
                if turn:  # read upright, its crop turns by this much (``Page.turn``)
                    region.extra = {**region.extra, "turn": turn}
                regions.append(region)
        return regions


def drafted_turns(chars: dict[int, int], own: int | None) -> list[int]:
    """The directions whose lines are drafted, most characters first: the unrotated space's own
    (as always), the dominant one, and any holding ``tuning.TURNED_LINES_SHARE`` of the characters
    (fewer are a margin stamp or an axis title)."""
    total = sum(chars.values())
    if not total:
        return []
    dominant = max(chars, key=chars.get)
    kept = [t for t, n in chars.items() if n and (t in (own, dominant) or n >= tuning.TURNED_LINES_SHARE * total)]
    return sorted(kept, key=lambda t: -chars[t])


def _chars(lines: list[TextLine]) -> int:
    return sum(len(ln.text.replace(" ", "")) for ln in lines)


def extract_lines(fitz_page: pymupdf.Page) -> list[TextLine]:
    """Horizontal text lines of the page (in its unrotated space) with their dominant font size and
    boldness."""
    return extract_lines_by_turn(fitz_page, pymupdf.Matrix(1, 1)).get(0, [])


def extract_lines_by_turn(fitz_page: pymupdf.Page, to_page: pymupdf.Matrix) -> dict[int, list[TextLine]]:
    """The page's text lines (boxes in its unrotated space) by the turn that shows each upright
    on the page that ``to_page`` makes of the unrotated space (``orientation.line_turn``); slanted
    lines are left out."""
    by_turn: dict[int, list[TextLine]] = {}
    count = 0
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
            mono_chars = sum(len(s["text"]) for s in spans if is_monospaced(s))
            turn = line_turn(line["dir"], to_page)
            if turn is None:  # slanted text (a diagonal watermark)
                continue
            by_turn.setdefault(turn, []).append(
                TextLine(tuple(line["bbox"]), _LIGATURE_GAP.sub(r"\1", text), size,
                         bold_chars >= tuning.STYLE_CHAR_SHARE * chars, count, block_number,
                         mono=mono_chars >= tuning.STYLE_CHAR_SHARE * chars))
            count += 1
    return by_turn


#: Monospaced font names that do not set PyMuPDF's monospace flag: TeX's typewriter faces (CMTT9,
#: LMMono10, txtt), IBM's BookMaster (Redbooks' code), and the usual code faces.
_MONO_FONT = re.compile(r"mono|courier|consol|menlo|typewriter|code|cmtt|sftt|txtt|bookmaster", re.IGNORECASE)


def is_monospaced(span: dict) -> bool:
    """True for a span set in a monospaced font (PyMuPDF's flag bit 3, or a known code face)."""
    return bool(span["flags"] & 8) or bool(_MONO_FONT.search(span["font"]))


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
        if table.row_count < 2 or table.col_count < 2 or empty > tuning.TABLE_MAX_EMPTY_SHARE * len(cells):
            continue  # mostly empty grids are page frames or forms, better read as text
        if _cell_coverage(table, words, held) < tuning.TABLE_MIN_WORD_COVERAGE:
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


def lines_as_tables(lines: list[TextLine], box) -> list[tuple[tuple, str]]:
    """Draft the lines inside a ruled ``box`` whose grid missed text: one (bbox, text) per block of
    lines that stand side by side with a clear vertical gutter between them (a financial report's
    "stock data" box beside its "forecasts" box, under one frame). A block whose rows line up in
    two or more columns becomes an HTML table (cells placed by column, empty cells kept), as the
    model writes tables; anything else is rows of text."""
    inside = [ln for ln in lines if _center_inside(ln.bbox, box)]
    blocks = _side_by_side_blocks(inside)
    if len(blocks) < 2:
        return [(tuple(box), _rows_text(inside))]
    out = []
    for block in blocks:
        bbox = (min(ln.bbox[0] for ln in block), min(ln.bbox[1] for ln in block),
                max(ln.bbox[2] for ln in block), max(ln.bbox[3] for ln in block))
        rows = _rows(block)
        grid = _column_grid(rows)
        out.append((bbox, table_to_html(grid) if grid else _rows_text(block)))
    return out


def _side_by_side_blocks(lines: list[TextLine], min_gutter: float = 3.0, min_rows: int = 3) -> list[list[TextLine]]:
    """Split lines at every vertical gutter (an x-range no line crosses, ``min_gutter`` points or
    wider) with ``min_rows`` or more rows on each side whose rows do not line up: the columns of
    one table share its rows, two tables set side by side each keep their own row pitch."""
    spans = sorted((ln.bbox[0], ln.bbox[2]) for ln in lines)
    cuts, reach = [], None
    for x0, x1 in spans:
        if reach is not None and x0 - reach >= min_gutter:
            cuts.append((reach + x0) / 2)
        reach = x1 if reach is None else max(reach, x1)
    blocks, rest = [], lines
    for cut in cuts:
        left = [ln for ln in rest if ln.bbox[2] <= cut]
        right = [ln for ln in rest if ln.bbox[0] >= cut]
        left_rows, right_rows = _rows(left), _rows(right)
        if min(len(left_rows), len(right_rows)) >= min_rows and _aligned_share(left_rows, right_rows) < 0.5:
            blocks.append(left)
            rest = right
    return blocks + [rest] if rest else blocks


def _aligned_share(a: list[list[TextLine]], b: list[list[TextLine]]) -> float:
    """Share of the rows of the shorter list whose vertical centre is within a fifth of a line
    height of some row of the other."""
    if len(a) > len(b):
        a, b = b, a
    def centre(row):
        return (row[0].bbox[1] + row[0].bbox[3]) / 2
    aligned = sum(1 for row in a
                  if any(abs(centre(row) - centre(other)) <= 0.2 * (row[0].bbox[3] - row[0].bbox[1]) for other in b))
    return aligned / len(a)


def _rows(lines: list[TextLine]) -> list[list[TextLine]]:
    """Lines whose vertical centres are close share a row, left to right; rows top to bottom."""
    ordered = sorted(lines, key=lambda ln: (ln.bbox[1] + ln.bbox[3]) / 2)
    rows: list[list[TextLine]] = []
    for ln in ordered:
        mid = (ln.bbox[1] + ln.bbox[3]) / 2
        if rows and abs(mid - (rows[-1][0].bbox[1] + rows[-1][0].bbox[3]) / 2) < 0.5 * (ln.bbox[3] - ln.bbox[1]):
            rows[-1].append(ln)
        else:
            rows.append([ln])
    return [sorted(row, key=lambda ln: ln.bbox[0]) for row in rows]


def _rows_text(lines: list[TextLine]) -> str:
    """``lines`` as rows of text: a row's lines joined by spaces, rows by newlines."""
    return "\n".join(" ".join(ln.text.strip() for ln in row) for row in _rows(lines))


def _column_grid(rows: list[list[TextLine]]) -> list[list[str]] | None:
    """Cell texts of ``rows`` placed in columns, or None if fewer than two rows have two or more
    lines. Columns are the x-ranges that the lines of multi-line rows cover (a single-line row is a
    title or a note, which may span several columns); a line goes to the column its centre falls
    in (the nearest one between columns); lines that share a cell are joined by a space."""
    multi = [row for row in rows if len(row) > 1]
    if len(multi) < 2:
        return None
    columns: list[list[float]] = []
    for x0, x1 in sorted((ln.bbox[0], ln.bbox[2]) for row in multi for ln in row):
        if columns and x0 < columns[-1][1]:
            columns[-1][1] = max(columns[-1][1], x1)
        else:
            columns.append([x0, x1])
    if len(columns) < 2:
        return None
    grid = []
    for row in rows:
        if len(row) == 1:
            grid.append([row[0].text.strip()])
            continue
        cells = [""] * len(columns)
        for ln in row:
            mid = (ln.bbox[0] + ln.bbox[2]) / 2
            k = min(range(len(columns)), key=lambda i: max(columns[i][0] - mid, mid - columns[i][1], 0.0))
            cells[k] = f"{cells[k]} {ln.text.strip()}".strip()
        grid.append(cells)
    return grid


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
