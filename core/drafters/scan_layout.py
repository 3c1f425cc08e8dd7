"""PyMuPDF's layout model on scans: boxes, classes and reading order from the OCR lines.

PyMuPDF's layout model (the ONNX graph network inside the ``pymupdf-layout`` wheel; nothing is
downloaded) classifies and groups the text lines of a PDF page and sorts the groups into reading
order. A scan has no text lines, so the OCR lines are written as invisible text at their boxes into
a one-page PDF over the page image (the model also reads image features from a 72 dpi render), and
the model runs on that page. This is the route PyMuPDF documents for image pages (OCR, insert the
text, then ``predict``), with our OCR lines instead of its own OCR call.

Each layout group becomes one or more regions: its lines go through the same paragraph grouping and
labelling as the text layer (``core.drafters.regions``), then the model's class decides the label
where it knows better (headings, page headers and footers, captions, list items, formulas, text in
pictures). Tables are the OCR drafter's business (rapid-table), given the model's table boxes.
A page whose text is not read (its decode ended first) gets the groups of its detected lines
(``unread_groups``).

The model is two networks: an image network over the page's 72 dpi render (about two thirds of a
run's CPU) and a graph network over the text boxes, their text and the image network's features
pooled at each box. The render shows the page image only (the OCR text is invisible), so a second
run on the same image with other lines (a stopped page with a figure: once on its detected lines,
once on the lines read) takes the image network's output of the first through the model's own
cache (``_ImageNetworkReuse``): the same output as running it again, without its CPU.
"""

from __future__ import annotations

import hashlib
import io
import threading
import weakref

from core import tuning
from core.documents import capped_scale
from core.drafters.base import Region
from core.drafters.layout import BULLET_RE, TextLine, median_line_size, reading_order, smallest_holder
from core.drafters.layout_check import LayoutReport, sideways_steps, slot, text_in_figure
from core.drafters.pymupdf_layout import CLASS_LABELS
from core.drafters.regions import _PAGE_NUMBER, lines_to_regions
from core.errors import DrafterUnavailableError

_LOCK = threading.Lock()  # the model keeps process-global state (pymupdf4llm serialises it too)
#: PyMuPDF's activated layout model (``load_model``), run here directly so that its image network's
#: output can be reused (``_ImageNetworkReuse``); None where PyMuPDF keeps it out of reach (the
#: layout then runs through ``Page.get_layout``, whole each time)
_MODEL = None
_FONT = None
_FONT_LOCK = threading.Lock()
#: The OCR font's glyph widths for every code of the Basic Multilingual Plane, measured once.
_GLYPH_WIDTHS: list | None = None
#: The OCR font's advance of each character met so far, at size 1 (``text_length``).
_ADVANCES: dict[str, float] = {}


def load_model():
    """Load PyMuPDF's bundled layout model; ``DrafterUnavailableError`` where it is not installed."""
    global _FONT, _MODEL
    try:
        import pymupdf
        import pymupdf.layout  # noqa: F401  (installs the model as pymupdf's layout function)
    except ImportError as exc:
        raise DrafterUnavailableError(f"the PyMuPDF layout step needs the 'pymupdf-layout' package ({exc})") from None
    if _FONT is None:
        _MODEL = _activated_model(pymupdf)
        _FONT = pymupdf.Font("cjk")  # Droid Sans Fallback: Latin and CJK glyphs for every OCR line
    return pymupdf


def _activated_model(pymupdf):
    """The model ``pymupdf.layout`` activated: ``Page.get_layout`` calls its ``predict`` through the
    function it installed, which holds it (``pymupdf.layout.activate``). A model of our own would
    be the same model at another 60 MB. None where it is not found so."""
    import inspect

    try:
        model = inspect.getclosurevars(pymupdf._get_layout).nonlocals.get("MODEL")
    except (AttributeError, TypeError):
        return None
    return model if callable(getattr(model, "predict", None)) else None


def text_length(text: str, size: float) -> float:
    """``Font.text_length`` of the OCR font, from each character's advance measured once for the
    process (PyMuPDF looks every character up in the font again on each call: 0.02 s of a scan
    page's CPU, 0.0005 s measured once); summed in the same order, so the same number."""
    advances = _ADVANCES
    missing = "".join(dict.fromkeys(ch for ch in text if ch not in advances))
    if missing:
        advances.update(zip(missing, _FONT.char_lengths(missing, fontsize=1)))
    length = 0
    for ch in text:
        length += advances[ch]
    return length * size


def text_page(width: float, height: float, image, lines: list[TextLine]):
    """A one-page PDF (``width`` x ``height`` points) showing ``image`` (PIL) with each OCR line
    written invisibly over its box, stretched to the box's width."""
    pymupdf = load_model()
    doc = pymupdf.open()
    page = doc.new_page(width=width, height=height)
    picture = _picture(width, height, image)
    if picture is not None:
        page.insert_image(page.rect, stream=picture)
    _reuse_glyph_widths(doc, page.insert_font(fontname="ocr", fontbuffer=_FONT.buffer))
    # One shape for all the lines, written to the page once: a page's ``insert_text`` per line
    # re-reads the whole content stream each time (quadratic in the lines).
    shape = page.new_shape()
    for line in lines:
        rect = pymupdf.Rect(line.bbox)
        size = rect.height
        if size <= 0 or not line.text.strip():
            continue
        length = text_length(line.text, size)
        stretch = pymupdf.Matrix(rect.width / length, 1) if length > 0 else pymupdf.Matrix(1, 1)
        shape.insert_text(rect.bl + (0, -0.2 * size), line.text, fontsize=size, fontname="ocr",
                          morph=(rect.bl, stretch), render_mode=3)
    shape.commit()
    return doc


#: ``(weak reference to the image, width, height, scale, JPEG)`` of the last page image written
#: under OCR text
_LAST_PICTURE: tuple | None = None


def _picture(width: float, height: float, image) -> bytes | None:
    """``image`` (PIL) as ``text_page`` writes it under the text: ``tuning.LAYOUT_IMAGE_SCALE`` pixels a
    point, JPEG. The last one is kept: a page whose layout is made twice (its detected lines, then
    the lines read) writes the same image twice, and the same bytes key the image network's reuse."""
    global _LAST_PICTURE
    if image is None:
        return None
    scale = capped_scale(width, height, tuning.LAYOUT_IMAGE_SCALE)  # 829 megapixels for a poster page
    last = _LAST_PICTURE
    if last is not None and last[0]() is image and last[1:4] == (width, height, scale):
        return last[4]
    small = image.convert("RGB").resize((max(1, round(width * scale)), max(1, round(height * scale))))
    buf = io.BytesIO()
    small.save(buf, "JPEG", quality=80)
    # a weak reference: the page's render is not kept past its page, and a new image never
    # passes for a dead one
    _LAST_PICTURE = (weakref.ref(image), width, height, scale, buf.getvalue())
    return _LAST_PICTURE[4]


def _reuse_glyph_widths(doc, xref: int) -> None:
    """Give ``doc``'s copy of the OCR font the glyph widths measured once for the process.

    PyMuPDF measures a font's glyph widths per document, again each time a text needs codes beyond
    those measured: a page of CJK lines measured the CJK font's tens of thousands of glyphs several
    times, half of the layout step's time (0.3 s of a page's 0.6 s). The widths are the font's own,
    so the text written is the same. Where PyMuPDF keeps its table otherwise, it measures as before."""
    global _GLYPH_WIDTHS
    import pymupdf

    check = getattr(pymupdf, "CheckFontInfo", None)
    info = check(doc, xref) if check is not None else None
    if not info or not isinstance(info[1], dict) or "glyphs" not in info[1]:
        return
    with _FONT_LOCK:
        if _GLYPH_WIDTHS is None:
            _GLYPH_WIDTHS = doc.get_char_widths(xref, 0x10000)
            return  # measured into this document's table already
    info[1]["glyphs"] = _GLYPH_WIDTHS


def layout_groups(width: float, height: float, image, lines: list[TextLine]) -> list[tuple[str, tuple]]:
    """``[(pymupdf class, bbox in points)]`` in the model's reading order for a page of OCR lines."""
    if not lines:
        return []
    doc = text_page(width, height, image, lines)
    picture = _picture(width, height, image)  # what the model's render shows: the image alone
    key = (float(width), float(height), None if picture is None else hashlib.blake2b(picture, digest_size=16).digest())
    try:
        with _LOCK:
            groups = _IMAGE_NETWORK.predict(_MODEL, doc[0], key) or []
    finally:
        doc.close()
    return [(str(g.get("class_name", "text")), tuple(float(v) for v in g["group_bbox"][:4])) for g in groups]


class _ImageNetworkReuse:
    """Runs the layout model on a page, its image network's output of the last run taken again
    where the model's render is the same picture (``key``: the page's size and image bytes; the OCR
    text on it is invisible) and nothing ran the image network since (its output still the one
    kept). The model's own cache (``mark_cached``: "reused once", made for its image-page check)
    skips the network; its features, picture detections and everything after are computed from
    that output as from a new run's, so the groups are the same. A model without that cache runs
    whole each time."""

    def __init__(self):
        self.key = None
        self.features = None  # the image network's output of the run ``key`` names
        self.runs = self.reused = 0

    def predict(self, model, page, key) -> list:
        if model is None:
            page.get_layout(return_raw=True)
            return page.layout_information
        extractor = getattr(getattr(model, "_model", None), "feature_extractor", None)
        if not all(hasattr(extractor, name) for name in ("mark_cached", "consume_cache", "get_feature_map")):
            extractor = None
        self.runs += 1
        if (extractor is not None and key == self.key and self.features is not None
                and extractor.get_feature_map() is self.features):
            extractor.mark_cached()
            self.reused += 1
        self.key = self.features = None
        try:
            groups = model.predict(page, return_raw=True)
        finally:
            if extractor is not None:
                extractor.consume_cache()  # a run that failed before the image network leaves no reuse behind
        if extractor is not None:
            self.key, self.features = key, extractor.get_feature_map()
        return groups


_IMAGE_NETWORK = _ImageNetworkReuse()


def unread_groups(width: float, height: float, image, lines: list[TextLine]) -> list[tuple[str, tuple]]:
    """``layout_groups`` of a page whose lines were detected but not read: each line written as a
    run of placeholder letters about as many as its box holds (the model sees where text stands
    and how large, not what it says). The groups are close to those of the read lines, not the
    same: they serve the overlay and the figures of a page whose decode needs no text."""
    return layout_groups(width, height, image, placeholder_lines(lines))


def placeholder_lines(lines: list[TextLine]) -> list[TextLine]:
    """``lines`` not read, each written as a run of placeholder letters about as many as its box
    holds (``unread_groups``; a page read in part gives the model its read lines beside these)."""
    return [TextLine(line.bbox, "x" * max(1, round((line.bbox[2] - line.bbox[0]) / max(0.5 * line.height, 1e-6))),
                     line.height, False, line.source_index)
            for line in lines if line.height > 0]


def assign_lines(lines: list[TextLine], groups: list[tuple[str, tuple]]) -> tuple[list[list[TextLine]], list[TextLine]]:
    """Each line goes to the smallest group box holding its centre; returns the lines per group and
    the lines no box holds."""
    members: list[list[TextLine]] = [[] for _ in groups]
    loose = []
    boxes = [box for _, box in groups]
    for line in lines:
        best = smallest_holder(line.bbox, boxes, slack=1.0)
        (loose if best is None else members[best]).append(line)
    return members, loose


def group_regions(cls: str, lines: list[TextLine], page_width: float, page_height: float, body_size: float,
                  source: str, report: LayoutReport | None = None, barriers=()) -> list[Region]:
    """The regions of one layout group: its lines as paragraphs, labelled by the model's class."""
    regions = lines_to_regions(lines, [], page_width, page_height, source=source,
                               size_tolerance=tuning.OCR_SIZE_TOLERANCE, barriers=barriers)
    label = CLASS_LABELS.get(cls, "text")
    for region in regions:
        if region.label in ("code", "table"):
            continue
        plain = region.text.lstrip("#").strip() if region.label == "title" else region.text
        if label in ("header", "footer"):
            region.label = "page_number" if _PAGE_NUMBER.match(plain) else label
            region.text, region.extra = plain, {}
        elif label == "title" and len(plain) <= tuning.LAYOUT_TITLE_MAX_CHARS and sum(c.isalpha() for c in plain) >= 2:
            size = max(ln.size for ln in lines)
            level = 1 if cls == "title" or size >= tuning.H1_SIZE * body_size else 2
            region.label, region.text, region.extra = "title", "#" * level + " " + plain, {"level": level}
        elif label == "list" and region.label == "text":
            region.label, region.text = "list", BULLET_RE.sub("- ", region.text, count=1)
        elif label == "figure" and region.label in ("text", "title") and len(plain) < tuning.FIGURE_TEXT_CHARS:
            if text_in_figure(region, lines, body_size):  # a title or a sentence: text, whatever the box
                if report is not None:
                    report.figure_text += 1
                continue
            region.label, region.text, region.extra = "figure", plain, {"role": "text_in_figure"}
        elif label in ("caption", "formula", "footnote") and region.label in ("text", "title"):
            region.label, region.text, region.extra = label, plain, {}
    return regions


def page_regions(groups: list[tuple[str, tuple]], lines: list[TextLine], tables: list[tuple[tuple, str]],
                 page_width: float, page_height: float, source: str, order: str = "model",
                 report: LayoutReport | None = None, barriers: list[tuple[float, float]] = ()) -> list[Region]:
    """Regions in the model's reading order: one group at a time, ``tables`` (``(bbox, html)``, their
    lines already taken out) at their group's place; lines outside every box are drafted as the
    text layer would and slotted in before the first region below them in their column.
    ``order="xycut"``: the regions are then re-sorted by our XY-cut (``xycut_order``)."""
    body_size = median_line_size(lines)
    members, loose = assign_lines(lines, groups)
    table_at = {}
    for box, html in tables:
        table_at.setdefault(_nearest_group(box, groups), []).append((box, html))
    regions: list[Region] = []
    for i, ((cls, _), group_lines) in enumerate(zip(groups, members)):
        placed = table_at.pop(i, [])
        if placed:  # lines of the table's box above its table (a caption the box took in) come first
            top = min(box[1] for box, _ in placed)
            above = [ln for ln in group_lines if (ln.bbox[1] + ln.bbox[3]) / 2 < top]
            if above:
                regions += group_regions(cls, above, page_width, page_height, body_size, source, report, barriers)
                group_lines = [ln for ln in group_lines if ln not in above]
        for box, html in placed:
            regions.append(Region("table", box, html, source))
        if group_lines:
            regions += group_regions(cls, group_lines, page_width, page_height, body_size, source, report, barriers)
    for items in table_at.values():  # no groups at all
        regions += [Region("table", box, html, source) for box, html in items]
    if loose:
        for region in lines_to_regions(loose, [], page_width, page_height, source=source,
                                       size_tolerance=tuning.OCR_SIZE_TOLERANCE, barriers=barriers):
            regions.insert(slot(region.bbox, regions), region)
    if order == "xycut":
        return xycut_order(regions, body_size, page_height)
    return checked_order(regions, body_size, page_height, report)


def checked_order(regions: list[Region], body_size: float, page_height: float,
                  report: LayoutReport | None = None) -> list[Region]:
    """The model's order, unless it reads across columns (``layout_check.sideways_steps``: it
    steps sideways between paragraphs ``tuning.INTERLEAVED_STEPS`` times or more, XY-cut's order of
    the same regions at most half as often); then XY-cut's."""
    steps = sideways_steps(regions, body_size)
    if steps < tuning.INTERLEAVED_STEPS:
        return regions
    xycut = xycut_order(regions, body_size, page_height)
    if 2 * sideways_steps(xycut, body_size) > steps:
        return regions
    if report is not None:
        report.interleaved_order += steps
    return xycut


def xycut_order(regions: list[Region], body_size: float, page_height: float) -> list[Region]:
    """Page headers (and page numbers in the upper half) first, footers last, the body in XY-cut
    reading order (``core.drafters.layout.reading_order``, as the text layer orders paragraphs)."""
    body = [r for r in regions if r.label not in ("header", "footer", "page_number")]
    tops = [r for r in regions if r.label == "header" or (r.label == "page_number" and r.bbox[1] < page_height / 2)]
    bottoms = [r for r in regions if r.label in ("footer", "page_number") and r not in tops]
    ordered = reading_order([r.bbox for r in body], min_column_gap=max(2.0, 0.3 * body_size),
                            line_height=1.2 * body_size)
    return tops + [body[i] for i in ordered] + bottoms


def _nearest_group(box, groups) -> int | None:
    """Index of the group that overlaps ``box`` most (a table's own group), None if there are none."""
    best, best_area = None, -1.0
    for i, (_, g) in enumerate(groups):
        area = max(0.0, min(box[2], g[2]) - max(box[0], g[0])) * max(0.0, min(box[3], g[3]) - max(box[1], g[1]))
        if area > best_area:
            best, best_area = i, area
    return best
