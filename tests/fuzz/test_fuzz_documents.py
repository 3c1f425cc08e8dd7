"""Fuzz the document loader: whatever the bytes, ``open_document`` returns a document or raises a
``DocumentError``; pages of an opened document load and render or raise ``CorruptDocumentError``.
Never another exception, never a crash of the process."""

from __future__ import annotations

import io
import tempfile
from pathlib import Path

import pymupdf
from hypothesis import given, strategies as st
from PIL import Image

from core.documents import open_document, parse_page_range
from core.errors import CorruptDocumentError, DocumentError, PageRangeError
from tests.fuzz.conftest import fuzz_settings

MAGIC = [b"%PDF-1.7\n", b"\x89PNG\r\n\x1a\n", b"\xff\xd8\xff\xe0", b"II*\x00", b"MM\x00*", b"BM",
         b"RIFF\x00\x00\x00\x00WEBP", b"GIF89a", b"\xff\x4f\xff\x51", b""]


def _seed_pdf() -> bytes:
    doc = pymupdf.open()
    page = doc.new_page(width=200, height=150)
    page.insert_text((20, 40), "Fuzzing the loader", fontsize=11)
    page.draw_rect(pymupdf.Rect(20, 60, 120, 120), color=(0, 0, 1), fill=(0.8, 0.8, 1))
    doc.new_page(width=150, height=200).insert_text((10, 30), "page two", fontsize=9)
    return doc.tobytes(garbage=0, deflate=False)


def _seed_png() -> bytes:
    buf = io.BytesIO()
    Image.new("RGBA", (24, 16), (10, 200, 30, 128)).save(buf, format="PNG")
    return buf.getvalue()


SEEDS = {"pdf": _seed_pdf(), "png": _seed_png()}


def _exercise(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "fuzz.bin"
        path.write_bytes(data)
        try:
            doc = open_document(path)
        except DocumentError:
            return
        with doc:
            assert doc.page_count >= 1
            for i in range(min(doc.page_count, 3)):
                try:
                    page = doc.page(i)
                    image = page.render(24)
                    assert image.mode == "RGB" and image.width >= 1 and image.height >= 1
                    if page.width > 8 and page.height > 8:
                        page.render_region((2, 2, page.width / 2, page.height / 2), dpi=24)
                except CorruptDocumentError:
                    continue


@fuzz_settings(120)
@given(magic=st.sampled_from(MAGIC), body=st.binary(max_size=2048))
def test_random_bytes_behind_a_magic_number(magic, body):
    _exercise(magic + body)


@st.composite
def mutated(draw):
    data = bytearray(SEEDS[draw(st.sampled_from(sorted(SEEDS)))])
    for _ in range(draw(st.integers(1, 8))):
        kind = draw(st.sampled_from(["flip", "cut", "insert", "delete", "dup"]))
        pos = draw(st.integers(0, max(0, len(data) - 1)))
        if kind == "flip" and data:
            data[pos] = draw(st.integers(0, 255))
        elif kind == "cut":
            del data[pos:]
        elif kind == "insert":
            data[pos:pos] = draw(st.binary(min_size=1, max_size=64))
        elif kind == "delete":
            del data[pos:pos + draw(st.integers(1, 256))]
        elif kind == "dup":
            data[pos:pos] = data[pos:pos + draw(st.integers(1, 512))]
    return bytes(data)


@fuzz_settings(250)
@given(data=mutated())
def test_mutated_pdfs_and_pngs(data):
    _exercise(data)


@fuzz_settings(300)
@given(spec=st.one_of(st.text(max_size=30),
                      st.lists(st.sampled_from(["1", "2", "10", "-", ",", " ", "all", "0", "99", "\u2013", "５"]),
                               max_size=10).map("".join)),
       count=st.integers(1, 50))
def test_page_ranges(spec, count):
    try:
        pages = parse_page_range(spec, count)
    except PageRangeError as exc:
        assert str(exc)
        return
    assert pages == sorted(set(pages)) and all(0 <= p < count for p in pages)
