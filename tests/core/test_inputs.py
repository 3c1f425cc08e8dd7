"""``core.inputs``: what an input is, from its first bytes and its file type, without a document library."""

from __future__ import annotations

import os

import pytest

from core.errors import UnsupportedFileError
from core.inputs import check_input, sniff_file_type

HEADS = {
    "pdf": b"%PDF-1.7\n", "png": b"\x89PNG\r\n\x1a\n" + bytes(8), "jpeg": b"\xff\xd8\xff\xe0",
    "tiff": b"II*\x00", "bmp": b"BM" + bytes(20), "webp": b"RIFF\x00\x00\x00\x00WEBPVP8 ", "gif": b"GIF89a",
    "jpx": b"\x00\x00\x00\x0cjP  \r\n\x87\n",
}


@pytest.mark.parametrize("kind", sorted(HEADS))
def test_each_supported_type_is_known_by_its_first_bytes(kind):
    assert sniff_file_type(HEADS[kind]) == kind


def test_a_pdf_header_may_start_anywhere_in_the_first_kilobyte():
    assert sniff_file_type(b" " * 1000 + b"%PDF-1.4") == "pdf"
    assert sniff_file_type(b" " * 1030 + b"%PDF-1.4") is None


def test_lookalikes_are_not_supported():
    for head in (b"", b"BM", b"RIFF\x00\x00\x00\x00WAVE", b"GIF90a", b"hello"):
        assert sniff_file_type(head) is None, head


def test_check_input_names_what_the_file_is_instead(tmp_path):
    (tmp_path / "doc.pdf").write_bytes(b"%PDF-1.7\n")
    assert check_input(tmp_path / "doc.pdf") == "pdf"
    cases = {"empty": (b"", "empty file"), "notes.txt": (b"just words\n", "looks like text"),
             "blob.bin": (b"\xff\xfe\x00\x81", "looks like binary data")}
    for name, (data, words) in cases.items():
        (tmp_path / name).write_bytes(data)
        with pytest.raises(UnsupportedFileError, match=words):
            check_input(tmp_path / name)


def test_what_is_not_a_regular_file_is_refused_without_opening_it(tmp_path):
    os.mkfifo(tmp_path / "fifo")  # opening it for reading would block
    os.symlink(tmp_path / "gone", tmp_path / "dangling")
    os.symlink(tmp_path / "loop", tmp_path / "loop")
    (tmp_path / "folder").mkdir()
    for name, words in (("missing", "no such file"), ("fifo", "not a regular file"),
                        ("dangling", "broken symbolic link"), ("loop", "symbolic link loop"),
                        ("folder", "is a folder")):
        with pytest.raises(UnsupportedFileError, match=words):
            check_input(tmp_path / name)
