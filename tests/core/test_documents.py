"""core.documents: opening by content, typed errors, lazy pages, rendering, page ranges."""

from __future__ import annotations

import os

import pymupdf
import pytest
from hypothesis import given, strategies as st
from PIL import Image

from core import documents, tuning
from core.documents import open_document, parse_page_range, sniff_file_type
from core.errors import (
    CorruptDocumentError, EmptyDocumentError, EncryptedDocumentError, HSDError, PageRangeError,
    UnsupportedFileError,
)
from tests.core import pdf_factory


# -- opening good files ------------------------------------------------------------------------

def test_pdf_pages_sizes_and_words(report_pdf):
    with open_document(report_pdf) as doc:
        assert doc.page_count == 2 and len(doc) == 2 and not doc.is_image
        page = doc.page(1)
        assert (page.index, page.number) == (1, 2)
        assert (round(page.width), round(page.height)) == (595, 842)
        words = page.words()
        assert any(w.text == "Widgets" for w in words)
        assert all(0 <= w.x0 <= w.x1 <= page.width and 0 <= w.y0 <= w.y1 <= page.height for w in words)
        assert page.is_born_digital
        assert page.fitz_page.number == 1


def test_pages_iterates_lazily_in_the_given_order(report_pdf):
    with open_document(report_pdf) as doc:
        pages = doc.pages([1, 0])
        assert next(pages).number == 2
        assert next(pages).number == 1
        assert [p.number for p in doc.pages()] == [1, 2]


def test_many_page_pdf_opens_without_loading_pages(tmp_path):
    doc = pymupdf.open()
    for _ in range(1000):
        doc.new_page(width=200, height=200)
    doc.save(tmp_path / "long.pdf")
    with open_document(tmp_path / "long.pdf") as opened:
        assert opened.page_count == 1000
        assert opened.page(999).number == 1000


def test_render_is_rgb_at_the_asked_dpi(report_pdf):
    with open_document(report_pdf) as doc:
        page = doc.page(0)
        image = page.render(dpi=72)
        assert image.mode == "RGB" and image.size == (595, 842)
        assert page.last_render_dpi == 72 and page.last_render_scale == 1.0


def test_render_caps_huge_pages(report_pdf, monkeypatch):
    monkeypatch.setattr(tuning, "MAX_RENDER_PIXELS", 100_000)
    with open_document(report_pdf) as doc:
        page = doc.page(0)
        image = page.render(dpi=600)
        assert image.width * image.height <= 100_000 * 1.01
        assert page.last_render_dpi < 600
        assert page.last_render_scale == pytest.approx(page.last_render_dpi / 72)


def test_render_region_crops_with_padding(report_pdf):
    with open_document(report_pdf) as doc:
        crop = doc.page(0).render_region((100, 100, 200, 150), dpi=72, pad_pt=5)
        assert crop.size == (110, 60)
        with pytest.raises(ValueError):
            doc.page(0).render_region((700, 900, 800, 1000))


@pytest.mark.parametrize("suffix", [".png", ".jpg", ".bmp"])
def test_images_open_as_one_page(tmp_path, report_pdf, suffix):
    image = pdf_factory.page_image(tmp_path / f"page{suffix}", report_pdf, dpi=50)
    with open_document(image) as doc:
        assert doc.is_image and doc.page_count == 1
        page = doc.page(0)
        assert not page.is_born_digital
        assert page.render(dpi=72).mode == "RGB"


def test_multipage_tiff(tmp_path):
    frames = [Image.new("RGB", (100, 80), color) for color in ("white", "gray", "black")]
    frames[0].save(tmp_path / "scan.tiff", save_all=True, append_images=frames[1:])
    with open_document(tmp_path / "scan.tiff") as doc:
        assert doc.page_count == 3
        assert [p.render(dpi=72).getpixel((5, 5)) for p in doc.pages()][2] == (0, 0, 0)


def test_alpha_and_cmyk_images_become_rgb(tmp_path):
    Image.new("RGBA", (40, 30), (255, 0, 0, 0)).save(tmp_path / "alpha.png")
    Image.new("CMYK", (40, 30), (0, 255, 255, 0)).save(tmp_path / "cmyk.jpg")
    for name in ("alpha.png", "cmyk.jpg"):
        with open_document(tmp_path / name) as doc:
            assert doc.page(0).render(dpi=72).mode == "RGB"


def test_wrong_extension_still_opens_by_content(tmp_path, report_pdf):
    disguised = tmp_path / "really_a_pdf.png"
    disguised.write_bytes(report_pdf.read_bytes())
    with open_document(disguised) as doc:
        assert not doc.is_image and doc.page_count == 2
    png = pdf_factory.page_image(tmp_path / "page.png", report_pdf, dpi=30)
    renamed = tmp_path / "page.pdf"
    renamed.write_bytes(png.read_bytes())
    with open_document(renamed) as doc:
        assert doc.is_image


def test_sniff_file_type():
    assert sniff_file_type(b"%PDF-1.7\n") == "pdf"
    assert sniff_file_type(b"\n\n%PDF-1.4") == "pdf"
    assert sniff_file_type(b"\x89PNG\r\n\x1a\n....") == "png"
    assert sniff_file_type(b"RIFF\x00\x00\x00\x00WEBPVP8 ") == "webp"
    assert sniff_file_type(b"hello world") is None


# -- born-digital heuristic --------------------------------------------------------------------

def test_scan_with_a_stamp_is_not_born_digital(tmp_path, report_pdf):
    image = pdf_factory.page_image(tmp_path / "scan.png", report_pdf, dpi=60)
    scan = pdf_factory.image_only_pdf(tmp_path / "scan.pdf", image)
    with pymupdf.open(scan) as doc:
        doc[0].insert_text((20, 20), "Downloaded 2026-11-30 from the archive", fontsize=6)
        doc.save(tmp_path / "stamped.pdf")
    with open_document(tmp_path / "stamped.pdf") as doc:
        assert not doc.page(0).is_born_digital
    with open_document(scan) as doc:
        assert not doc.page(0).is_born_digital


def test_scan_with_an_invisible_ocr_layer_counts_as_born_digital(tmp_path, report_pdf):
    image = pdf_factory.page_image(tmp_path / "scan.png", report_pdf, dpi=60)
    scan = pdf_factory.image_only_pdf(tmp_path / "scan.pdf", image)
    with pymupdf.open(scan) as doc:
        page = doc[0]
        for i, text in enumerate(pdf_factory.expected_page_one()):
            page.insert_text((56, 90 + 18 * i), text, fontsize=11, render_mode=3)  # 3 = invisible
        doc.save(tmp_path / "ocred.pdf")
    with open_document(tmp_path / "ocred.pdf") as doc:
        assert doc.page(0).is_born_digital


def test_a_few_characters_are_not_a_text_layer(tmp_path):
    pdf = pdf_factory.text_pdf(tmp_path / "few.pdf", ["Fig. 1"])
    with open_document(pdf) as doc:
        assert not doc.page(0).is_born_digital


def test_mojibake_text_layer_is_not_usable(tmp_path):
    garbage = "êÆ#(¯K) 1›ÊÏ Ì±: +¡) 1˜K. ´ü Eê. y²•3ü Eê ¦: †‚ ‡Œƒ ÚçÆ þ°ŒÆ ekt øK)"
    pdf = pdf_factory.text_pdf(tmp_path / "garbage.pdf", [garbage] * 6)
    with open_document(pdf) as doc:
        assert not doc.page(0).is_born_digital


# -- bad input: one typed error each -----------------------------------------------------------

def _error(path, password=None) -> HSDError:
    with pytest.raises(HSDError) as info:
        open_document(path, password=password)
    message = str(info.value)
    assert "\n" not in message and str(path) in message
    return info.value


def test_missing_file(tmp_path):
    assert isinstance(_error(tmp_path / "nope.pdf"), UnsupportedFileError)


def test_folder(tmp_path):
    error = _error(tmp_path)
    assert isinstance(error, UnsupportedFileError) and "folder" in str(error)


def test_dangling_symlink(tmp_path):
    link = tmp_path / "link.pdf"
    os.symlink(tmp_path / "gone.pdf", link)
    error = _error(link)
    assert isinstance(error, UnsupportedFileError) and "symbolic link" in str(error)


def test_text_file_named_pdf(tmp_path):
    fake = tmp_path / "notes.pdf"
    fake.write_text("just some notes\n")
    error = _error(fake)
    assert isinstance(error, UnsupportedFileError) and "text" in str(error)


def test_empty_file(tmp_path):
    (tmp_path / "empty.pdf").write_bytes(b"")
    assert isinstance(_error(tmp_path / "empty.pdf"), UnsupportedFileError)


def test_truncated_pdf(tmp_path, report_pdf):
    broken = tmp_path / "truncated.pdf"
    broken.write_bytes(report_pdf.read_bytes()[:300])
    assert isinstance(_error(broken), CorruptDocumentError)


def test_garbage_after_pdf_header(tmp_path):
    broken = tmp_path / "garbage.pdf"
    broken.write_bytes(b"%PDF-1.7\n" + bytes(range(256)) * 20)
    assert isinstance(_error(broken), CorruptDocumentError)


def test_truncated_png(tmp_path, report_pdf):
    png = pdf_factory.page_image(tmp_path / "page.png", report_pdf, dpi=40)
    broken = tmp_path / "broken.png"
    broken.write_bytes(png.read_bytes()[:60])
    assert isinstance(_error(broken), CorruptDocumentError)


def test_zero_page_pdf(tmp_path):
    assert isinstance(_error(pdf_factory.zero_page_pdf(tmp_path / "zero.pdf")), EmptyDocumentError)


def test_encrypted_pdf_without_password(tmp_path):
    pdf = pdf_factory.encrypted_pdf(tmp_path / "secret.pdf", "s3cret")
    error = _error(pdf)
    assert isinstance(error, EncryptedDocumentError) and "--password" in str(error)


def test_encrypted_pdf_with_wrong_password(tmp_path):
    pdf = pdf_factory.encrypted_pdf(tmp_path / "secret.pdf", "s3cret")
    error = _error(pdf, password="guess")
    assert isinstance(error, EncryptedDocumentError) and "wrong password" in str(error)


def test_encrypted_pdf_with_password(tmp_path):
    pdf = pdf_factory.encrypted_pdf(tmp_path / "secret.pdf", "s3cret")
    with open_document(pdf, password="s3cret") as doc:
        assert "Secret widget" in doc.page(0).fitz_page.get_text()


def test_page_index_out_of_range(report_pdf):
    with open_document(report_pdf) as doc, pytest.raises(PageRangeError):
        doc.page(2)


# -- page ranges ------------------------------------------------------------------------------

@pytest.mark.parametrize("spec, expected", [
    (None, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]), ("all", list(range(10))), ("1-3,7", [0, 1, 2, 6]),
    ("5-", [4, 5, 6, 7, 8, 9]), ("-2", [0, 1]), ("3,1,3", [0, 2]), (" 2 - 4 ", [1, 2, 3]), ("10", [9]),
])
def test_parse_page_range(spec, expected):
    assert parse_page_range(spec, 10) == expected


@pytest.mark.parametrize("spec", ["0", "11", "3-1", "a", "1-2-3", "1,,2", "-", "1.5", "2-11", "-0"])
def test_bad_page_range(spec):
    with pytest.raises(PageRangeError) as info:
        parse_page_range(spec, 10)
    assert "\n" not in str(info.value)


@given(st.lists(st.integers(1, 50), min_size=1, max_size=8))
def test_page_range_of_single_pages_round_trips(pages):
    spec = ",".join(map(str, pages))
    assert parse_page_range(spec, 50) == sorted({p - 1 for p in pages})


# -- damaged documents -----------------------------------------------------------------------------

def test_a_pdf_mupdf_repaired_is_damaged_and_a_sound_one_is_not(tmp_path, report_pdf):
    with open_document(report_pdf) as doc:
        assert doc.damaged is None
    data = report_pdf.read_bytes()
    cut = tmp_path / "cut.pdf"
    cut.write_bytes(data[: data.rfind(b"xref")])  # no xref, no trailer: MuPDF rebuilds them
    with open_document(cut) as doc:
        assert doc.repaired and doc.damaged.startswith("the PDF is damaged: MuPDF had to repair it")


def test_pages_that_cannot_be_read_are_named_in_damaged(report_pdf, monkeypatch):
    with open_document(report_pdf) as doc:
        def broken(index):
            raise RuntimeError("object out of range")

        monkeypatch.setattr(doc.fitz_doc, "load_page", broken)
        with pytest.raises(CorruptDocumentError):
            doc.page(1)
        assert doc.unreadable_pages == {2}
        assert doc.damaged == "the PDF is damaged: page 2 could not be read"


def test_check_document_warns_once_for_a_damaged_pdf(tmp_path, report_pdf):
    import warnings

    from core.documents import check_document
    from core.errors import HSDWarning

    data = report_pdf.read_bytes()
    cut = tmp_path / "cut.pdf"
    cut.write_bytes(data[: data.rfind(b"xref")])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_document(report_pdf)
        check_document(cut)
    assert [str(w.message) for w in caught if w.category is HSDWarning] == [
        f"{cut}: the PDF is damaged: MuPDF had to repair it, so pages may be missing, blank or incomplete"]
