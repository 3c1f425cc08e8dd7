"""Open PDFs and page images as a sequence of pages (PyMuPDF underneath).

Coordinates everywhere are PDF points (1/72 inch), origin top-left, the space of ``Page.width`` x
``Page.height``. Images become one page per frame (multi-page TIFF too); their size in points follows
the image's resolution metadata, as PyMuPDF reports it.

Bad input raises one typed ``HSDError`` subclass each (see ``core.errors``); callers never see a
PyMuPDF exception from ``open_document``.
"""

from __future__ import annotations

import math
import os
import re
import warnings
import unicodedata
from pathlib import Path
from typing import Iterator, NamedTuple

import pymupdf
from PIL import Image

from core import tuning
from core.errors import (
    CorruptDocumentError, EmptyDocumentError, EncryptedDocumentError, HSDWarning, PageRangeError,
)
from core.inputs import check_input, sniff_file_type  # noqa: F401 (sniff_file_type: part of this API)

#: ``open_document(rotate=...)``: "auto" turns sideways and upside-down pages upright, "off" never.
ROTATE_MODES = ("auto", "off")

#: Types MuPDF cannot open (WebP) or opens without telling the frames apart (GIF): decoded by Pillow.
PILLOW_KINDS = frozenset({"webp", "gif"})

pymupdf.TOOLS.mupdf_display_errors(False)  # MuPDF warnings go to stderr otherwise
pymupdf.TOOLS.mupdf_display_warnings(False)
# Pillow refuses images above twice its own limit (about 179 megapixels) with its own error; ours is
# tuning.MAX_IMAGE_PIXELS, checked on the size an image claims, so that message is the one users see.
Image.MAX_IMAGE_PIXELS = tuning.MAX_IMAGE_PIXELS


class Word(NamedTuple):
    """One text-layer word: bbox in points and its text."""

    x0: float
    y0: float
    x1: float
    y1: float
    text: str


def open_document(path: str | os.PathLike, password: str | None = None, rotate: str = "off") -> "Document":
    """Open a PDF or an image file, deciding the type by its content, not its extension.

    ``rotate``: "auto" shows a page whose text runs sideways or upside down turned upright
    (``Page.turn``); "off" shows every page as the file draws it.

    Raises UnsupportedFileError, CorruptDocumentError, EncryptedDocumentError or EmptyDocumentError.
    """
    path = Path(path)
    kind = check_input(path)
    try:
        if kind in PILLOW_KINDS:
            doc = pymupdf.open(stream=_first_frame_as_png(path, kind), filetype="png")
        else:
            if kind == "jpeg":
                _check_jpeg_size(path)
            try:
                str(path).encode("utf-8")
                doc = pymupdf.open(str(path), filetype=kind)
            except UnicodeEncodeError:  # a non-UTF-8 file name (bytes on Linux): PyMuPDF cannot take it
                doc = pymupdf.open(stream=path.read_bytes(), filetype=kind)
    except CorruptDocumentError:
        raise
    except Exception as exc:  # PyMuPDF raises FileDataError, RuntimeError, ValueError, ...
        raise CorruptDocumentError(f"{path}: cannot be parsed as {kind.upper()} ({_short(exc)})") from None
    try:
        _unlock(doc, path, password)
        if doc.page_count == 0:
            if kind == "pdf" and doc.is_repaired:
                raise CorruptDocumentError(f"{path}: the PDF is damaged and no page could be recovered")
            raise EmptyDocumentError(f"{path}: the document has no pages")
        first = doc.load_page(0)  # fails early on a broken page tree
        if kind != "pdf":
            _check_image_decodes(first, path, kind)
    except (EncryptedDocumentError, EmptyDocumentError, CorruptDocumentError):
        doc.close()
        raise
    except Exception as exc:
        doc.close()
        raise CorruptDocumentError(f"{path}: cannot be parsed as {kind.upper()} ({_short(exc)})") from None
    return Document(doc, path, is_image=(kind != "pdf"), password=password, rotate=rotate)


def check_document(path: str | os.PathLike, password: str | None = None, pages: str | None = None) -> None:
    """Open and close the document at ``path``: the checks of ``open_document`` (its errors) and
    of the page range ``pages`` against it (``PageRangeError``), for a caller that wants them
    before any model loads, and one ``HSDWarning`` when the file is damaged (``Document.damaged``)."""
    with open_document(path, password=password) as doc:
        parse_page_range(pages, doc.page_count)
        if doc.damaged:
            warnings.warn(HSDWarning(f"{path}: {doc.damaged}"), stacklevel=2)


def _first_frame_as_png(path: Path, kind: str) -> bytes:
    """The image's first frame as PNG bytes (its resolution kept), warning when frames are dropped."""
    import io

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            with Image.open(path) as image:
                _check_pixels(path, kind, *image.size)
                frames = getattr(image, "n_frames", 1)
                image.seek(0)
                frame = image.convert("RGBA" if _has_alpha(image) else "RGB")
                dpi = image.info.get("dpi")
    except CorruptDocumentError:
        raise
    except Image.DecompressionBombError:
        raise CorruptDocumentError(f"{path}: the {kind.upper()} image is larger than "
                                   f"{tuning.MAX_IMAGE_PIXELS // 1_000_000} megapixels") from None
    except Exception as exc:  # Pillow raises OSError, ValueError, SyntaxError, EOFError...
        raise CorruptDocumentError(f"{path}: cannot be parsed as {kind.upper()} ({_short(exc)})") from None
    if frames > 1:
        dropped = "2" if frames == 2 else f"2-{frames}"
        warnings.warn(HSDWarning(f"{path}: an animated {kind.upper()} of {frames} frames; only the first "
                                 f"is converted (frames {dropped} are left out)"), stacklevel=3)
    buffer = io.BytesIO()
    frame.save(buffer, format="PNG", **({"dpi": dpi} if dpi else {}))
    return buffer.getvalue()


def _has_alpha(image: Image.Image) -> bool:
    return image.mode in ("RGBA", "LA", "PA") or "transparency" in image.info


def _check_pixels(path: Path, kind: str, width: int, height: int) -> None:
    if width * height > tuning.MAX_IMAGE_PIXELS:
        raise CorruptDocumentError(f"{path}: the {kind.upper()} image claims {width} x {height} pixels, more "
                                   f"than the {tuning.MAX_IMAGE_PIXELS // 1_000_000} megapixels read here")


def _check_jpeg_size(path: Path) -> None:
    """A Huffman-coded JPEG spends at least one bit on every 8 x 8 block of its full-resolution
    component, so a file under pixels / 512 bytes is cut short or forged (MuPDF would paint the
    missing blocks white, at full size). Refused below an eighth of that bound, which leaves room
    for arithmetic coding."""
    with open(path, "rb") as f:
        head = f.read(1 << 16)
    found = _jpeg_dimensions(head)
    if found is None:
        return  # MuPDF reports what it cannot read
    width, height = found
    size = os.path.getsize(path)
    if width * height > tuning.MAX_IMAGE_PIXELS:
        _check_pixels(path, "jpeg", width, height)
    if size * 4096 < width * height:
        raise CorruptDocumentError(f"{path}: the JPEG image claims {width} x {height} pixels but holds only "
                                   f"{size} bytes (cut short or damaged)")


def _jpeg_dimensions(data: bytes) -> tuple[int, int] | None:
    """(width, height) from a JPEG's start-of-frame marker, or None if not found in ``data``."""
    at = 2
    while at + 9 <= len(data):
        if data[at] != 0xFF:
            return None
        marker = data[at + 1]
        if marker == 0xFF:  # fill byte
            at += 1
            continue
        if 0xD0 <= marker <= 0xD9 or marker == 0x01:  # markers without a length
            at += 2
            continue
        length = int.from_bytes(data[at + 2:at + 4], "big")
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            height = int.from_bytes(data[at + 5:at + 7], "big")
            width = int.from_bytes(data[at + 7:at + 9], "big")
            return width, height
        at += 2 + length
    return None


def _check_image_decodes(page: pymupdf.Page, path: Path, kind: str) -> None:
    """Images decode lazily and MuPDF paints what a truncated file lacks in white, only warning;
    decode the first frame now and treat such warnings as corruption."""
    pymupdf.TOOLS.mupdf_warnings(reset=True)
    page.get_pixmap(matrix=pymupdf.Matrix(0.05, 0.05))
    warnings = pymupdf.TOOLS.mupdf_warnings(reset=True)
    if any(word in warnings.lower() for word in ("truncated", "missing pixel", "premature", "corrupt")):
        raise CorruptDocumentError(f"{path}: the {kind.upper()} image is damaged ({warnings.splitlines()[0]})")


def _unlock(doc: pymupdf.Document, path: Path, password: str | None) -> None:
    if not doc.needs_pass:
        return
    if password is None:
        raise EncryptedDocumentError(f"{path}: the PDF is encrypted; give its password (--ask-password, the "
                                     "HSD_PASSWORD environment variable or --password)")
    if not doc.authenticate(password):
        raise EncryptedDocumentError(f"{path}: wrong password for this encrypted PDF")


def capped_scale(width_pt: float, height_pt: float, scale: float) -> float:
    """``scale`` (pixels per point) lowered where needed so that an image of a ``width_pt`` x
    ``height_pt`` area holds at most ``tuning.MAX_RENDER_PIXELS``: every image made of a page (its
    renders, the drafters' own pictures of it) is sized here, so a poster page never takes gigabytes."""
    pixels = (width_pt * scale) * (height_pt * scale)
    if pixels > tuning.MAX_RENDER_PIXELS:
        scale *= math.sqrt(tuning.MAX_RENDER_PIXELS / pixels)
    return scale


def _short(exc: Exception) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text[:160]


def release_render_caches() -> None:
    """Empty MuPDF's store: what it keeps of the pages rendered so far (decoded pictures, fonts),
    up to its own cap of some 256 MB, for every document in the process. Nothing is lost: a page
    rendered again is decoded again. A long-lived process (the app) calls it once a document is
    done, so that each document's pictures do not stay behind it."""
    pymupdf.TOOLS.store_shrink(100)


class Document:
    """An open document. Pages are loaded on demand; use as a context manager or call ``close()``.

    ``damaged``: one line saying how the file is damaged (MuPDF had to repair it, or pages could
    not be read or rendered so far), or None. A damaged PDF still converts: MuPDF recovers what it
    can, and the pages it lost come out blank or fail one by one, so callers say it once.
    """

    def __init__(self, fitz_doc: pymupdf.Document, path: Path, is_image: bool, password: str | None = None,
                 rotate: str = "off"):
        if rotate not in ROTATE_MODES:
            raise ValueError(f"rotate must be one of {ROTATE_MODES}, not {rotate!r}")
        self.fitz_doc = fitz_doc
        self.rotate = rotate
        self.turns: dict[int, int] = {}  # 0-based index -> the page's turn, once decided (``Page.turn``)
        self.path = path
        self.is_image = is_image
        self.password = password  # the one it was opened with: a drafting process opens it again
        self.repaired = not is_image and bool(getattr(fitz_doc, "is_repaired", False))
        self.unreadable_pages: set[int] = set()  # 1-based; filled as pages fail to load or render

    @property
    def damaged(self) -> str | None:
        what = []
        if self.repaired:
            what.append("MuPDF had to repair it, so pages may be missing, blank or incomplete")
        if self.unreadable_pages:
            numbers = sorted(self.unreadable_pages)
            listed = ", ".join(map(str, numbers[:10])) + (f" and {len(numbers) - 10} more" if len(numbers) > 10 else "")
            what.append(f"page{'s' if len(numbers) > 1 else ''} {listed} could not be read")
        if not what:
            return None
        return f"the {'image' if self.is_image else 'PDF'} is damaged: {'; '.join(what)}"

    @property
    def page_count(self) -> int:
        return self.fitz_doc.page_count

    def page(self, index: int) -> "Page":
        """The page at 0-based ``index``."""
        if not 0 <= index < self.page_count:
            raise PageRangeError(f"page {index + 1} is outside the document (it has {self.page_count} pages)")
        try:
            return Page(self, self.fitz_doc.load_page(index), index)
        except Exception as exc:
            self.unreadable_pages.add(index + 1)
            raise CorruptDocumentError(f"{self.path}: page {index + 1} cannot be read ({_short(exc)})") from None

    def pages(self, indices: list[int] | None = None) -> Iterator["Page"]:
        """Yield pages one at a time (all pages if ``indices`` is None); nothing is rendered here."""
        for i in range(self.page_count) if indices is None else indices:
            yield self.page(i)

    def close(self) -> None:
        self.fitz_doc.close()

    def __enter__(self) -> "Document":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __len__(self) -> int:
        return self.page_count

    def __repr__(self) -> str:
        return f"Document({str(self.path)!r}, pages={self.page_count}, is_image={self.is_image})"


class Page:
    """One page. ``width``/``height`` in points; ``render*`` give RGB PIL images.

    After each render, ``last_render_dpi`` holds the DPI actually used (lower than asked when the
    pixel cap applied) and ``last_render_scale`` the pixels per point.
    """

    def __init__(self, document: Document, fitz_page: pymupdf.Page, index: int):
        self.document = document
        self.fitz_page = fitz_page
        self.index = index
        self.last_render_dpi: float | None = None
        self.last_render_scale: float | None = None
        self._born_digital: bool | None = None
        self._turn: int | None = None

    @property
    def turn(self) -> int:
        """Degrees (0, 90, 180, 270; ``pymupdf.Matrix(turn)``) the page is turned from how the file
        draws it: what the model sees, and the frame of ``width``, ``height``, every render and
        every region box. Decided once per page where the document was opened with
        ``rotate="auto"`` (``core.drafters.orientation.page_turn``: the text layer's, else OCR's,
        dominant direction of text), else 0."""
        if self._turn is None:
            turns = self.document.turns
            if self.index not in turns:
                if self.document.rotate == "auto":
                    from core.drafters.orientation import page_turn

                    turns[self.index] = page_turn(self)
                else:
                    turns[self.index] = 0
            self._turn = turns[self.index]
        return self._turn

    def turned(self, extra: int) -> "Page":
        """This page seen turned ``extra`` more degrees (a view on the same document page)."""
        view = Page(self.document, self.fitz_page, self.index)
        view._turn = (self.turn + extra) % 360
        view._born_digital = self._born_digital
        return view

    @property
    def turn_matrix(self) -> pymupdf.Matrix:
        """From the file's displayed page (``fitz_page.rect``) to this page's frame (``turn``)."""
        return turn_matrix(self.fitz_page.rect, self.turn)

    @property
    def number(self) -> int:
        return self.index + 1

    @property
    def width(self) -> float:
        rect = self.fitz_page.rect
        return float(rect.height if self.turn in (90, 270) else rect.width)

    @property
    def height(self) -> float:
        rect = self.fitz_page.rect
        return float(rect.width if self.turn in (90, 270) else rect.height)

    @property
    def is_image(self) -> bool:
        return self.document.is_image

    def _capped_dpi(self, dpi: float, width_pt: float, height_pt: float) -> float:
        if dpi <= 0:
            raise ValueError(f"dpi must be positive, got {dpi}")
        return capped_scale(width_pt, height_pt, dpi / 72.0) * 72.0

    def _pixmap_to_image(self, clip: pymupdf.Rect | None, dpi: float) -> Image.Image:
        scale = dpi / 72.0
        matrix = pymupdf.Matrix(scale, scale)
        if self.turn:
            matrix = pymupdf.Matrix(self.turn) * matrix
        try:
            pix = self.fitz_page.get_pixmap(matrix=matrix, clip=clip, colorspace=pymupdf.csRGB, alpha=False)
        except Exception as exc:
            self.document.unreadable_pages.add(self.number)
            raise CorruptDocumentError(
                f"{self.document.path}: page {self.number} cannot be rendered ({_short(exc)})"
            ) from None
        self.last_render_dpi = dpi
        self.last_render_scale = scale
        # samples_mv: a view of MuPDF's buffer, so the only copy is PIL's own (pages can be 60 MP)
        image = Image.frombytes("RGB", (pix.width, pix.height), pix.samples_mv)
        del pix
        return image

    def render(self, dpi: int = 144) -> Image.Image:
        """The whole page as an RGB image at ``dpi``, lowered to stay under ``tuning.MAX_RENDER_PIXELS``
        with a warning: every renderer of a page (drafters, the model's page image) comes here."""
        capped = self._capped_dpi(dpi, self.width, self.height)
        if capped < dpi:
            warnings.warn(HSDWarning(
                f"{self.document.path}: page {self.number} is {self.width:,.0f} x {self.height:,.0f} pt: rendered at "
                f"{capped:.0f} dpi instead of {dpi:g}, to stay under {tuning.MAX_RENDER_PIXELS / 1e6:g} megapixels"),
                stacklevel=2)
        return self._pixmap_to_image(None, capped)

    def render_region(self, bbox, dpi: int = 144, pad_pt: float = 4.0) -> Image.Image:
        """An RGB crop of ``bbox`` (points) grown by ``pad_pt`` on each side, clipped to the page."""
        rect = pymupdf.Rect(bbox[0] - pad_pt, bbox[1] - pad_pt, bbox[2] + pad_pt, bbox[3] + pad_pt)
        if self.turn:
            rect = rect * ~self.turn_matrix  # the same area of the page as the file draws it
        rect &= self.fitz_page.rect
        if rect.is_empty:
            raise ValueError(f"region {tuple(bbox)} lies outside page {self.number}")
        return self._pixmap_to_image(rect, self._capped_dpi(dpi, rect.width, rect.height))

    def words(self) -> list[Word]:
        """Text-layer words in PyMuPDF's extraction order, bboxes in points (empty for images).

        On a rotated or turned page the boxes are turned into the page's displayed (rendered) space."""
        words = self.fitz_page.get_text("words")
        if not self.fitz_page.rotation and not self.turn:
            return [Word(*w[:5]) for w in words]
        matrix = self.fitz_page.rotation_matrix * self.turn_matrix
        return [Word(*tuple(pymupdf.Rect(w[:4]) * matrix), w[4]) for w in words]

    @property
    def is_born_digital(self) -> bool:
        """True if the text layer is good enough to draft from (see ``text_layer_is_usable``)."""
        if self._born_digital is None:
            self._born_digital = (not self.is_image) and text_layer_is_usable(self.fitz_page)
        return self._born_digital

    def __repr__(self) -> str:
        return f"Page({self.number}, {self.width:.0f}x{self.height:.0f}pt)"


def turn_matrix(rect: pymupdf.Rect, turn: int) -> pymupdf.Matrix:
    """``pymupdf.Matrix(turn)`` moved so that ``rect`` turned starts at (0, 0): what a pixmap
    rendered with ``Matrix(turn)`` shows of ``rect``, in points."""
    if not turn:
        return pymupdf.Matrix(1, 0, 0, 1, -rect.x0, -rect.y0) if (rect.x0 or rect.y0) else pymupdf.Matrix(1, 1)
    rotation = pymupdf.Matrix(turn)
    turned = rect * rotation
    return rotation * pymupdf.Matrix(1, 0, 0, 1, -turned.x0, -turned.y0)


# Characters that say a text layer is mojibake when they dominate: private-use code points, the
# replacement char, controls, Latin-1/Latin Extended letters and the cp1252 oddities (what a CJK
# font without a ToUnicode map decodes to).
_SUSPECT_CHAR = re.compile(r"[\ue000-\uf8ff\ufffd\x00-\x08\x0e-\x1f\x7f-\u024f\u02c6\u02dc\u201a\u201e\u2020\u2021\u2030\u2039\u203a]")


def text_layer_is_usable(fitz_page: pymupdf.Page, min_chars: int | None = None) -> bool:
    """Decide per page whether the text layer can stand in for OCR.

    Usable means: at least ``min_chars`` letters/digits (default ``tuning.TEXT_LAYER_MIN_CHARS``), at
    most ``tuning.TEXT_LAYER_MAX_SUSPECT_SHARE`` suspect characters (mojibake from fonts without a
    Unicode map), and, when one image covers most of the page (a scan), text spans that cover a real
    share of it. An invisible OCR layer over a scan counts as usable when it
    passes these checks: its text is then as good a draft as our own OCR would be, and much cheaper.
    """
    text = fitz_page.get_text("text")
    chars = [c for c in text if not c.isspace()]
    real = sum(1 for c in chars if c.isalnum())
    if real < (tuning.TEXT_LAYER_MIN_CHARS if min_chars is None else min_chars):
        return False
    suspect = len(_SUSPECT_CHAR.findall("".join(chars)))
    if suspect > tuning.TEXT_LAYER_MAX_SUSPECT_SHARE * len(chars):
        return False
    page_area = abs(fitz_page.rect) or 1.0
    image_area = 0.0
    for info in fitz_page.get_image_info():
        image_area = max(image_area, abs(pymupdf.Rect(info["bbox"]) & fitz_page.rect))
    if image_area > tuning.SCAN_IMAGE_SHARE * page_area:
        text_area = sum(abs(pymupdf.Rect(b[:4])) for b in fitz_page.get_text("blocks") if b[6] == 0)
        if text_area < tuning.SCAN_MIN_TEXT_SHARE * page_area:
            return False  # a scan with a stamp or a few words of text on top
    return True


_RANGE_PART = re.compile(r"^\s*(\d*)\s*(-?)\s*(\d*)\s*$")


#: Digits a page number may have; a longer one is past the end of any document (and Python refuses
#: to convert numbers of thousands of digits at all).
_PAGE_DIGITS = 12


def _page_number(digits: str) -> int:
    return int(digits) if len(digits) <= _PAGE_DIGITS else 10 ** _PAGE_DIGITS


def _shown_range(spec: str) -> str:
    """``spec`` as a message quotes it: repr-escaped, and cut to a readable length."""
    return repr(spec) if len(spec) <= 40 else repr(spec[:40]) + f"... ({len(spec)} characters)"


def parse_page_range(spec: str | None, page_count: int) -> list[int]:
    """Turn "1-3,7", "5-", "-2", "all" or None (1-based) into sorted unique 0-based indices. An
    explicitly empty range ("") is an error: it selects nothing, and taking it for every page would
    start a run over the whole document that nobody asked for."""
    if spec is None or spec.strip().lower() == "all":
        return list(range(page_count))
    shown = _shown_range(spec)
    if not spec.strip():
        raise PageRangeError(f"empty page range {shown}: name pages such as 1-3,7, or leave the range out "
                             "for every page")
    spec = unicodedata.normalize("NFKC", spec).replace("\u2013", "-")
    indices: set[int] = set()
    for part in spec.split(","):
        match = _RANGE_PART.match(part)
        if not match or not part.strip() or (not match.group(1) and not match.group(3)):
            raise PageRangeError(f"bad page range {shown}: use forms like 1-3,7 or 5- or -2 or all")
        first, dash, last = match.groups()
        if not dash:
            start = stop = _page_number(first)
        else:
            start = _page_number(first) if first else 1
            stop = _page_number(last) if last else page_count
        if start < 1 or stop < 1:
            raise PageRangeError(f"bad page range {shown}: pages are numbered from 1")
        if start > stop:
            raise PageRangeError(f"bad page range {shown}: {start}-{stop} runs backwards")
        if stop > page_count:
            raise PageRangeError(
                f"page range {shown} goes past the end: the document has {page_count} page"
                f"{'s' if page_count != 1 else ''}"
            )
        indices.update(range(start - 1, stop))
    return sorted(indices)
