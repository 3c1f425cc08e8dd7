"""Checks of an input file that need no document library: it exists, is a regular readable file,
and its first bytes say PDF or a supported image.

Light on purpose (the standard library only): the CLI runs them on every input before it imports
PyMuPDF, torch or transformers, so a mistyped name is one line at once.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

from core.errors import UnsupportedFileError

#: What ``sniff_file_type`` recognises, for messages.
SUPPORTED = "PDF or a supported image (PNG, JPEG, TIFF, BMP, WebP, GIF, JPEG 2000)"


def sniff_file_type(head: bytes) -> str | None:
    """The file type of a file's first bytes ('pdf', 'png', ...), or None if not supported."""
    if b"%PDF-" in head[:1024]:  # the PDF spec lets the header start anywhere in the first KB
        return "pdf"
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "png"
    if head.startswith(b"\xff\xd8\xff"):
        return "jpeg"
    if head[:4] in (b"II*\x00", b"MM\x00*", b"II+\x00", b"MM\x00+"):
        return "tiff"
    if head.startswith(b"BM") and len(head) > 14:
        return "bmp"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "webp"
    if head[:6] in (b"GIF87a", b"GIF89a"):
        return "gif"
    if head.startswith(b"\x00\x00\x00\x0cjP  \r\n\x87\n") or head.startswith(b"\xff\x4f\xff\x51"):
        return "jpx"
    return None


def check_readable_file(path: Path) -> None:
    """Raise ``UnsupportedFileError`` unless ``path`` is an existing regular file (never opens it,
    so a FIFO cannot block)."""
    path = Path(path)
    if not os.path.lexists(path):
        raise UnsupportedFileError(f"{path}: no such file")
    try:
        os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UnsupportedFileError(f"{path}: is a symbolic link loop (following it never reaches a file)") from None
        if exc.errno in (errno.ENOENT, errno.ENOTDIR) and path.is_symlink():
            raise UnsupportedFileError(f"{path}: is a broken symbolic link (its target does not exist)") from None
        raise UnsupportedFileError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    if path.is_dir():
        raise UnsupportedFileError(f"{path}: is a folder, not a PDF or image file")
    if not path.is_file():
        raise UnsupportedFileError(f"{path}: is not a regular file")


def read_head(path: Path, size: int = 1024) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read(size)
    except OSError as exc:
        raise UnsupportedFileError(f"{path}: cannot be read ({exc.strerror or exc})") from None


def check_input(path: Path) -> str:
    """The type of input ``path`` ('pdf', 'png', ...) after the checks above; one clear
    ``UnsupportedFileError`` otherwise."""
    path = Path(path)
    check_readable_file(path)
    head = read_head(path)
    if not head:
        raise UnsupportedFileError(f"{path}: is an empty file (0 bytes), not a PDF or image")
    kind = sniff_file_type(head)
    if kind is None:
        looks = "text" if _looks_like_text(head) else "binary data"
        raise UnsupportedFileError(f"{path}: is not a {SUPPORTED}; it looks like {looks}")
    return kind


def _looks_like_text(head: bytes) -> bool:
    try:
        head.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True
