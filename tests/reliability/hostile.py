"""Hostile inputs, generated on the fly (no binaries are committed).

Every builder writes into a folder it is given and returns the path it made. PDFs are written with
PyMuPDF or, where PyMuPDF refuses (zero pages) or is slow (a thousand pages), by ``raw_pdf``, a
minimal writer with a correct cross-reference table.
"""

from __future__ import annotations

import io
import os
import struct
import zlib
from pathlib import Path

import pymupdf
from PIL import Image, ImageDraw

TEXT = "Speculative decoding verifies drafted tokens in parallel."
JS_MARKER = "PWNED-BY-JAVASCRIPT"


# --- PDFs ------------------------------------------------------------------------------------------


def text_pdf(path: Path, pages: int = 2, width: float = 420, height: float = 560) -> Path:
    """A born-digital PDF: a heading and a paragraph per page."""
    doc = pymupdf.open()
    for k in range(pages):
        page = doc.new_page(width=width, height=height)
        page.insert_text((40, 60), f"Section {k + 1}: results", fontsize=16)
        page.insert_textbox(pymupdf.Rect(40, 80, width - 40, 220), (TEXT + " ") * 3, fontsize=10)
    doc.save(str(path))
    doc.close()
    return Path(path)


def raw_pdf(path: Path, page_streams: list, width: float = 200, height: float = 200, padding: int = 0) -> Path:
    """A PDF built byte by byte: one page per content stream, Helvetica as F1, a correct xref.

    A stream may be ``(data, extra)`` where ``extra`` goes into the stream dictionary. ``padding``:
    an unused stream of that many zero bytes before the pages (so that they lie past it in the file)."""
    objects: list[bytes] = [b"<< /Type /Catalog /Pages 2 0 R >>", b"",
                            b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"]
    if padding:
        objects.append(b"<< /Length %d >>\nstream\n" % padding + bytes(padding) + b"\nendstream")
    kids = []
    for stream in page_streams:
        stream, extra = stream if isinstance(stream, tuple) else (stream, b"")
        content_num = len(objects) + 1
        objects.append(b"<< /Length %d %s>>\nstream\n" % (len(stream), extra) + stream + b"\nendstream")
        kids.append(len(objects) + 1)
        objects.append(b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 %g %g] /Contents %d 0 R "
                       b"/Resources << /Font << /F1 3 0 R >> >> >>" % (width, height, content_num))
    objects[1] = (b"<< /Type /Pages /Kids [" + b" ".join(b"%d 0 R" % k for k in kids)
                  + b"] /Count %d >>" % len(kids))
    out = io.BytesIO()
    out.write(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for n, body in enumerate(objects, 1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n" % n + body + b"\nendobj\n")
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1))
    for off in offsets:
        out.write(b"%010d 00000 n \n" % off)
    out.write(b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref))
    Path(path).write_bytes(out.getvalue())
    return Path(path)


def many_pages_pdf(path: Path, pages: int = 1000) -> Path:
    """``pages`` pages, each saying its own number (milliseconds to write, unlike PyMuPDF's pages)."""
    streams = [b"BT /F1 12 Tf 20 150 Td (Page %d of a long document about speculative decoding.) Tj ET" % (n + 1)
               for n in range(pages)]
    return raw_pdf(path, streams, width=400, height=200)


def zero_page_pdf(path: Path) -> Path:
    return raw_pdf(path, [])


def truncated_pdf(path: Path, keep: float = 0.6) -> Path:
    """A real PDF with its tail (xref, trailer, the last objects) cut off."""
    tmp = Path(path).with_suffix(".whole")
    text_pdf(tmp, pages=3)
    data = tmp.read_bytes()
    tmp.unlink()
    Path(path).write_bytes(data[: int(len(data) * keep)])
    return Path(path)


def cut_pdf(path: Path, pages: int = 160, keep: int = 60_000) -> Path:
    """A PDF of ``pages`` text pages cut after ``keep`` bytes, as an interrupted download or copy
    leaves it: MuPDF repairs it and recovers some pages, blank or whole."""
    text_pdf(path, pages=pages)
    data = Path(path).read_bytes()
    assert len(data) > keep
    Path(path).write_bytes(data[:data.rfind(b"endobj", 0, keep)])  # cut inside the next object
    return Path(path)


def header_only_pdf(path: Path) -> Path:
    Path(path).write_bytes(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<< /Type /Catalog")
    return Path(path)


def garbage_pdf(path: Path, seed: int = 7) -> Path:
    """The PDF magic followed by random bytes."""
    import random

    rng = random.Random(seed)
    Path(path).write_bytes(b"%PDF-1.7\n" + bytes(rng.randrange(256) for _ in range(4096)))
    return Path(path)


def scrambled_xref_pdf(path: Path) -> Path:
    """A valid PDF whose xref offsets are all wrong (MuPDF repairs these by scanning)."""
    text_pdf(path, pages=2)
    data = bytearray(Path(path).read_bytes())
    start = data.rfind(b"xref")
    end = data.find(b"trailer", start)
    section = bytes(data[start:end])
    scrambled = section.replace(b"0000", b"9999")
    data[start:end] = scrambled
    Path(path).write_bytes(bytes(data))
    return Path(path)


def broken_page_pdf(path: Path) -> Path:
    """Three pages; page 2's content stream claims Flate but holds garbage (the others are fine)."""
    good = b"BT /F1 12 Tf 20 150 Td (A good page about speculative decoding.) Tj ET"
    return raw_pdf(path, [good, (b"\x78\x9c\xff\xff garbage", b"/Filter /FlateDecode "), good])


def encrypted_pdf(path: Path, password: str = "s3cret") -> Path:
    doc = pymupdf.open()
    page = doc.new_page(width=420, height=560)
    page.insert_text((40, 60), "Confidential: " + TEXT, fontsize=10)
    doc.save(str(path), encryption=pymupdf.PDF_ENCRYPT_AES_256, user_pw=password, owner_pw=password + "-owner")
    doc.close()
    return Path(path)


def javascript_pdf(path: Path) -> Path:
    """A PDF with JavaScript everywhere a viewer would run it: the document's OpenAction, a page's
    open action, a link and a form field's calculate action. Each script writes ``JS_MARKER`` into a
    form field, so that a renderer that ran it would show the marker."""
    doc = pymupdf.open()
    page = doc.new_page(width=420, height=560)
    page.insert_text((40, 60), "A document with scripts. " + TEXT, fontsize=10)
    widget = pymupdf.Widget()
    widget.field_name = "target"
    widget.field_type = pymupdf.PDF_WIDGET_TYPE_TEXT
    widget.rect = pymupdf.Rect(40, 100, 380, 130)
    widget.field_value = "untouched"
    widget.script_calc = f"event.value = '{JS_MARKER}';"
    widget.script_format = f"event.value = '{JS_MARKER}';"
    page.add_widget(widget)
    js = f"this.getField('target').value = '{JS_MARKER}'; app.alert('{JS_MARKER}');"
    page.insert_link({"kind": pymupdf.LINK_URI, "from": pymupdf.Rect(40, 140, 200, 160),
                      "uri": "javascript:app.alert(1)"})
    js_obj = doc.get_new_xref()
    doc.update_object(js_obj, f"<< /S /JavaScript /JS ({js}) >>")
    doc.xref_set_key(doc.pdf_catalog(), "OpenAction", f"{js_obj} 0 R")
    doc.xref_set_key(page.xref, "AA", f"<< /O {js_obj} 0 R >>")
    names = doc.get_new_xref()
    doc.update_object(names, f"<< /Names [(init) {js_obj} 0 R] >>")
    doc.xref_set_key(doc.pdf_catalog(), "Names", f"<< /JavaScript {names} 0 R >>")
    doc.save(str(path))
    doc.close()
    return Path(path)


def embedded_files_pdf(path: Path) -> Path:
    """A PDF carrying an embedded shell script and a file-attachment annotation."""
    doc = pymupdf.open()
    page = doc.new_page(width=420, height=560)
    page.insert_text((40, 60), "A document with attachments. " + TEXT, fontsize=10)
    doc.embfile_add("../../evil.sh", b"#!/bin/sh\necho owned > /tmp/owned\n", filename="../../evil.sh")
    page.add_file_annot(pymupdf.Point(300, 300), b"MZ\x90\x00 not really an exe", "../payload.exe")
    doc.save(str(path))
    doc.close()
    return Path(path)


def blank_pages_pdf(path: Path, pages: int = 2) -> Path:
    """Pages with nothing on them (no text layer, nothing to draft)."""
    return raw_pdf(path, [b""] * pages, width=420, height=560)


def drawing_only_pdf(path: Path) -> Path:
    """A page with vector shapes but no text: the text-layer drafter finds nothing."""
    doc = pymupdf.open()
    page = doc.new_page(width=420, height=560)
    page.draw_rect(pymupdf.Rect(60, 80, 360, 300), color=(0, 0, 0), fill=(0.2, 0.5, 0.9))
    page.draw_circle(pymupdf.Point(210, 420), 60, color=(1, 0, 0), fill=(1, 0.8, 0.8))
    doc.save(str(path))
    doc.close()
    return Path(path)


def scanned_pdf(path: Path) -> Path:
    """A page that is only an image of text (no text layer)."""
    image = text_image(Path(path).with_suffix(".tmp.png"))
    doc = pymupdf.open()
    page = doc.new_page(width=420, height=200)
    page.insert_image(page.rect, filename=str(image))
    doc.save(str(path))
    doc.close()
    image.unlink()
    return Path(path)


def a0_pdf(path: Path) -> Path:
    """An A0 poster page (2384 x 3370 pt): 139 megapixels at 300 dpi if rendering were not capped."""
    doc = pymupdf.open()
    page = doc.new_page(width=2384, height=3370)
    page.insert_text((100, 200), "A0 poster: " + TEXT, fontsize=40)
    doc.save(str(path))
    doc.close()
    return Path(path)


# --- images ----------------------------------------------------------------------------------------


def _text_picture(mode: str = "RGB", size=(420, 200)) -> Image.Image:
    image = Image.new("RGB", size, "white")
    draw = ImageDraw.Draw(image)
    draw.text((20, 40), "Speculative decoding", fill="black")
    draw.text((20, 80), "verifies drafts in parallel.", fill="black")
    return image


def text_image(path: Path, fmt: str = "PNG") -> Path:
    _text_picture().save(path, format=fmt)
    return Path(path)


def rgba_png(path: Path) -> Path:
    image = _text_picture().convert("RGBA")
    alpha = Image.new("L", image.size, 0)
    ImageDraw.Draw(alpha).rectangle((0, 0, image.width // 2, image.height), fill=255)  # half transparent
    image.putalpha(alpha)
    image.save(path, format="PNG")
    return Path(path)


def la_png(path: Path) -> Path:
    _text_picture().convert("LA").save(path, format="PNG")
    return Path(path)


def palette_transparent_png(path: Path) -> Path:
    image = _text_picture().convert("P")
    image.info["transparency"] = 0
    image.save(path, format="PNG", transparency=0)
    return Path(path)


def cmyk_jpeg(path: Path) -> Path:
    _text_picture().convert("CMYK").save(path, format="JPEG", quality=90)
    return Path(path)


def cmyk_tiff(path: Path) -> Path:
    _text_picture().convert("CMYK").save(path, format="TIFF")
    return Path(path)


def gray16_png(path: Path) -> Path:
    image = _text_picture().convert("L").point(lambda v: v * 257, mode="I").convert("I;16")
    image.save(path, format="PNG")
    return Path(path)


def gray16_tiff(path: Path) -> Path:
    image = _text_picture().convert("L").point(lambda v: v * 257, mode="I").convert("I;16")
    image.save(path, format="TIFF")
    return Path(path)


def rgb16_png(path: Path) -> Path:
    """A 16-bit-per-channel RGB PNG (PIL cannot write one, so the chunks are written here)."""
    picture = _text_picture()
    width, height = picture.size
    raw = bytearray()
    pixels = picture.tobytes()
    for y in range(height):
        raw.append(0)
        row = pixels[y * width * 3:(y + 1) * width * 3]
        for v in row:
            raw += struct.pack(">H", v * 257)

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)

    png = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 16, 2, 0, 0, 0))
           + chunk(b"IDAT", zlib.compress(bytes(raw))) + chunk(b"IEND", b""))
    Path(path).write_bytes(png)
    return Path(path)


def truncated_png(path: Path) -> Path:
    data = io.BytesIO()
    _text_picture(size=(800, 600)).save(data, format="PNG")
    Path(path).write_bytes(data.getvalue()[: len(data.getvalue()) // 2])
    return Path(path)


def huge_dimensions_png(path: Path) -> Path:
    """A tiny file that claims to be a 100000 x 100000 picture (a decompression bomb's header)."""
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)

    # one compressed stream of zero rows: tiny on disk, 30 GB if decoded at full size
    rows = zlib.compressobj(9)
    body = b""
    zero_row = b"\x00" * (1 + 100_000 * 3)
    for _ in range(200):  # only the first 200 rows are present: the rest is missing
        body += rows.compress(zero_row)
    body += rows.flush()
    png = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 100_000, 100_000, 8, 2, 0, 0, 0))
           + chunk(b"IDAT", body) + chunk(b"IEND", b""))
    Path(path).write_bytes(png)
    return Path(path)


# --- files that are not documents ------------------------------------------------------------------


def text_file(path: Path) -> Path:
    Path(path).write_text("just some notes, not a PDF\n", "utf-8")
    return Path(path)


def empty_file(path: Path) -> Path:
    Path(path).write_bytes(b"")
    return Path(path)


def folder(path: Path) -> Path:
    Path(path).mkdir()
    return Path(path)


def dangling_symlink(path: Path) -> Path:
    os.symlink(Path(path).with_name("no-such-target.pdf"), path)
    return Path(path)


def fifo(path: Path) -> Path:
    os.mkfifo(path)
    return Path(path)


def non_utf8_name(folder_path: Path, builder=text_pdf, suffix: str = ".pdf") -> Path:
    """A file whose name is not valid UTF-8 (Latin-1 "résumé.pdf"), as Python sees it on Linux."""
    made = builder(Path(folder_path) / f"plain-name{suffix}")  # PyMuPDF cannot save under such a name
    target = Path(folder_path) / os.fsdecode(b"r\xe9sum\xe9" + os.fsencode(suffix))
    os.rename(made, target)
    return target
