"""Build small PDFs and images with known text for the tests (PyMuPDF, base-14 fonts only)."""

from __future__ import annotations

from pathlib import Path

import pymupdf

TITLE = "Annual Report on Widgets"
INTRO_HEADING = "1. Introduction"
INTRO = ("Widgets are small parts that hold larger machines together. This report counts them, "
         "weighs them and explains where they go.")
LEFT = ("The left column starts here. Factories in the north made most of the widgets this year, "
        "and they shipped them by train to the coast.")
RIGHT = ("The right column follows. Buyers in the south asked for lighter widgets, so the design "
         "team changed the alloy and the shape.")
RESULTS_HEADING = "2. Results"
BULLETS = ["Output grew by a third.", "Costs fell slightly.", "Returns stayed low."]
STEPS = ["Count the widgets.", "Weigh the widgets."]
TABLE = [["Region", "Units", "Weight"], ["North", "1200", "30 kg"], ["South", "800", "16 kg"]]
CAPTION = "Table 1. Widgets by region."
HEADER = "Widget Council Report 2026"


def expected_page_one() -> list[str]:
    """The drafts of page one, in reading order, without Markdown markers."""
    return [TITLE, INTRO_HEADING, INTRO, LEFT, RIGHT, RESULTS_HEADING, *BULLETS,
            *[f"{n}. {step}" for n, step in enumerate(STEPS, 1)],
            *[" ".join(row) for row in TABLE], CAPTION]


def _paragraph(page, rect, text, size=10.5, font="helv"):
    left = page.insert_textbox(pymupdf.Rect(rect), text, fontsize=size, fontname=font)
    assert left >= 0, "text did not fit its box"
    return rect[1] + (rect[3] - rect[1]) - left


def add_report_page(doc: pymupdf.Document, page_label: str = "1") -> pymupdf.Page:
    """An A4 page: running header, title, heading, paragraph, two columns, lists, ruled table,
    caption, page number."""
    page = doc.new_page(width=595, height=842)
    page.insert_text((200, 36), HEADER, fontsize=8, fontname="helv")
    y = _paragraph(page, (56, 80, 540, 120), TITLE, size=22, font="hebo") + 14
    y = _paragraph(page, (56, y, 540, y + 30), INTRO_HEADING, size=15, font="hebo") + 8
    y = _paragraph(page, (56, y, 540, y + 60), INTRO) + 12
    top = y
    _paragraph(page, (56, top, 286, top + 90), LEFT)
    _paragraph(page, (310, top, 540, top + 90), RIGHT)
    y = top + 100
    y = _paragraph(page, (56, y, 540, y + 30), RESULTS_HEADING, size=15, font="hebo") + 8
    for item in BULLETS:
        y = _paragraph(page, (66, y, 540, y + 20), "- " + item) + 4
    y += 8
    for n, item in enumerate(STEPS, 1):
        y = _paragraph(page, (66, y, 540, y + 20), f"{n}. {item}") + 4
    y += 16
    for r, row in enumerate(TABLE):
        for c, cell in enumerate(row):
            x0, y0 = 56 + c * 120, y + r * 20
            page.draw_rect(pymupdf.Rect(x0, y0, x0 + 120, y0 + 20), color=(0, 0, 0), width=0.6)
            page.insert_text((x0 + 5, y0 + 14), cell, fontsize=10, fontname="helv")
    y += len(TABLE) * 20 + 10
    _paragraph(page, (56, y, 540, y + 20), CAPTION, size=9)
    page.insert_text((292, 812), page_label, fontsize=9, fontname="helv")
    return page


def report_pdf(path: Path, pages: int = 1) -> Path:
    doc = pymupdf.open()
    for i in range(pages):
        add_report_page(doc, str(i + 1))
    doc.save(path)
    doc.close()
    return path


def text_pdf(path: Path, lines: list[str], size: float = 11, width: float = 595, height: float = 842) -> Path:
    """One page with ``lines`` written top-down (no wrapping), Helvetica."""
    doc = pymupdf.open()
    page = doc.new_page(width=width, height=height)
    for i, line in enumerate(lines):
        page.insert_text((56, 72 + i * size * 1.5), line, fontsize=size, fontname="helv")
    doc.save(path)
    doc.close()
    return path


def page_image(path: Path, pdf: Path, dpi: int = 150, page: int = 0, alpha: bool = False) -> Path:
    """Render ``pdf``'s page to an image file (format from the suffix)."""
    with pymupdf.open(pdf) as doc:
        pix = doc[page].get_pixmap(dpi=dpi, alpha=alpha)
        if path.suffix.lower() in (".png", ".jpg", ".jpeg"):
            pix.save(path)
        else:  # PyMuPDF writes few formats; PIL does the rest
            pix.pil_save(path)
    return path


def image_only_pdf(path: Path, image: Path) -> Path:
    """A 'scanned' PDF: one page that is just ``image``, no text layer."""
    doc = pymupdf.open()
    with pymupdf.open(image) as img:
        rect = img[0].rect
    page = doc.new_page(width=rect.width, height=rect.height)
    page.insert_image(page.rect, filename=str(image))
    doc.save(path)
    doc.close()
    return path


def zero_page_pdf(path: Path) -> Path:
    """A well-formed PDF whose page tree is empty (PyMuPDF refuses to save one, so write it by hand)."""
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [] /Count 0 >>"]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for offset in offsets:
        out += b"%010d 00000 n \n" % offset
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    path.write_bytes(bytes(out))
    return path


def encrypted_pdf(path: Path, password: str) -> Path:
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), "Secret widget numbers are here.", fontsize=12)
    doc.save(path, encryption=pymupdf.PDF_ENCRYPT_AES_256, user_pw=password, owner_pw=password + "-owner")
    doc.close()
    return path
