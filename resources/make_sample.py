"""Build resources/sample.pdf: a tiny born-digital document for the README's first command.

    python resources/make_sample.py [OUT]

Two A4 pages drawn with PyMuPDF's built-in Helvetica (no embedded fonts, so the file stays a few
KB): a title, headings, a two-column section, a bulleted and a numbered list, a ruled table with
its caption, and page numbers. The text is original and free to reuse.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pymupdf

A4 = pymupdf.paper_rect("a4")
MARGIN = 56
BODY = 10.5

LEFT_COLUMN = (
    "Speculative decoding lets a large model check many tokens in one forward pass. A cheap drafter "
    "proposes the text and the large model keeps the longest prefix it agrees with. When the drafts "
    "are good, most tokens cost a fraction of a decoding step."
)
RIGHT_COLUMN = (
    "Documents are a good fit for this idea. A born-digital PDF already carries its text, and a scanned "
    "page can be read by a small OCR model. Either source gives drafts for every region of the page, "
    "in reading order."
)
INTRO = (
    "This sample shows what the drafters extract from a simple page: headings, two columns of text, "
    "lists and a small table. Run hsd draft on it to see the regions."
)
BULLETS = ["The text layer drafter reads born-digital pages.", "The OCR drafter reads scans and images.",
           "The auto drafter picks one of them for each page."]
STEPS = ["Open the document.", "Draft every page.", "Verify the drafts with the target model."]
TABLE = [["Drafter", "Input", "Speed"], ["textlayer", "PDF text", "fast"], ["rapidocr", "page image", "slow"]]
CAPTION = "Table 1: The two built-in drafters."


def _text(page, y: float, text: str, size: float = BODY, font: str = "helv", x: float = MARGIN) -> float:
    """Write a wrapped paragraph from y; return the y below it."""
    rect = pymupdf.Rect(x, y, A4.width - MARGIN, y + 400)
    left = page.insert_textbox(rect, text, fontsize=size, fontname=font)
    return y + (400 - left) + size * 0.8


def _table(page, top: float, rows: list[list[str]]) -> float:
    col_width, row_height = 130, 20
    for r, row in enumerate(rows):
        for c, cell in enumerate(row):
            x0, y0 = MARGIN + c * col_width, top + r * row_height
            page.draw_rect(pymupdf.Rect(x0, y0, x0 + col_width, y0 + row_height), color=(0, 0, 0), width=0.6)
            page.insert_text((x0 + 5, y0 + 14), cell, fontsize=BODY, fontname="hebo" if r == 0 else "helv")
    return top + len(rows) * row_height


def build(out: Path) -> None:
    doc = pymupdf.open()
    page = doc.new_page(width=A4.width, height=A4.height)
    y = _text(page, 60, "HSD Studio Sample Document", size=22, font="hebo")
    y = _text(page, y + 6, "1. Introduction", size=14, font="hebo")
    y = _text(page, y, INTRO)
    y = _text(page, y + 8, "2. Two Columns", size=14, font="hebo")
    half = (A4.width - 2 * MARGIN - 24) / 2
    for i, column in enumerate((LEFT_COLUMN, RIGHT_COLUMN)):
        x0 = MARGIN + i * (half + 24)
        page.insert_textbox(pymupdf.Rect(x0, y, x0 + half, y + 160), column, fontsize=BODY, fontname="helv")
    page.insert_text((A4.width / 2 - 3, A4.height - 30), "1", fontsize=9, fontname="helv")

    page = doc.new_page(width=A4.width, height=A4.height)
    y = _text(page, 60, "3. Lists", size=14, font="hebo")
    for item in BULLETS:
        y = _text(page, y, "- " + item, x=MARGIN + 10)
    y += 6
    for n, item in enumerate(STEPS, 1):
        y = _text(page, y, f"{n}. {item}", x=MARGIN + 10)
    y = _text(page, y + 8, "4. A Small Table", size=14, font="hebo")
    y = _table(page, y + 4, TABLE)
    _text(page, y + 8, CAPTION, size=9)
    page.insert_text((A4.width / 2 - 3, A4.height - 30), "2", fontsize=9, fontname="helv")

    doc.set_metadata({"title": "HSD Studio sample", "author": "HSD Studio"})
    doc.save(out, garbage=4, deflate=True)
    doc.close()


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).with_name("sample.pdf")
    build(target)
    print(f"wrote {target} ({target.stat().st_size} bytes)")
