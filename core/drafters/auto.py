"""The default drafter: the text layer where the page has a usable one, OCR otherwise (per page).

No page that has text or ink ends without drafts: where a step drafts nothing, the next one tries
(``FALLBACK_STEPS``: the text layer, OCR with its layout model, OCR lines alone with the detector
at twice its usual size); ``last_step`` says which step drafted the page, and where a fallback did,
each region's ``extra["drafted_by"]`` too (``extra["fallback_from"]``: the steps that drafted nothing). A scan whose lines OCR reads with little confidence is checked for a turn
(``orientation.scan_turn``) where the page was not turned already (``--rotate off``), and drafted
from its image turned upright, its boxes turned back.
"""

from __future__ import annotations

from core import tuning
from core.drafters.base import DrafterBase, OcrLine, Region, draft_page, prepare_drafter

#: The steps of ``AutoDrafter``, in the order they are tried.
FALLBACK_STEPS = ("textlayer", "ocr+layout", "ocr lines")


class AutoDrafter(DrafterBase):
    """``textlayer`` for born-digital pages (``Page.is_born_digital``), its drafts checked region
    by region and read by OCR where they fail (``textlayer_check.CheckedTextLayer``), ``rapidocr``
    for scans and images. Both sub-drafters are created on first need, so a born-digital PDF whose
    text layer passes its check never loads OCR."""

    name = "auto"
    streams_lines = True  # where the page's drafter does (OCR)

    def __init__(self, dpi: int | None = None, **ocr_options):
        self._ocr_options = dict(ocr_options, dpi=dpi)
        self._textlayer = None
        self._ocr_made = _BuiltOnUse(self._ocr_options)
        self._ocr_lines = None
        self.last_step: str | None = None  # the step that drafted the last page (``FALLBACK_STEPS``)

    def choose(self, page):
        """The drafter that will handle ``page``."""
        if page.is_born_digital:
            if self._textlayer is None:  # checked region by region, OCR where it fails
                from core.drafters.textlayer_check import CheckedTextLayer
                self._textlayer = CheckedTextLayer(ocr=self._ocr_made)
            return self._textlayer
        return self.choose_ocr()

    def prepare(self, page) -> None:
        """Load the models the drafter of ``page`` needs (see ``RapidOCRDrafter.prepare``)."""
        prepare_drafter(self.choose(page), page)

    def _lines_only(self):
        """OCR without a layout model, its detector at twice the usual size (small type on a big
        page that the first detection missed), on the models and workers of the OCR step before
        it (``OcrPipeline.with_det_side``): no second copy of the models is loaded."""
        if self._ocr_lines is None:
            from core.drafters.rapidocr import RapidOCRDrafter
            det_side = 2 * (self._ocr_options.get("det_side") or tuning.DET_MAX_SIDE)
            drafter = RapidOCRDrafter(**dict(self._ocr_options, layout=False, tables=False, det_side=det_side))
            drafter._ocr = self.choose_ocr()._ocr_engine().with_det_side(det_side)
            self._ocr_lines = drafter
        return self._ocr_lines

    def draft(self, page, on_lines=None) -> list[Region]:
        first = self.choose(page)
        steps = [("textlayer", first)] if page.is_born_digital else []
        steps += [("ocr+layout", None), ("ocr lines", None)]
        regions: list[Region] = []
        tried = []
        for step, drafter in steps:
            if step != "textlayer" and tried and not has_ink(page):
                break  # a blank page: nothing for OCR to find
            if drafter is None:
                drafter = self._lines_only() if step == "ocr lines" else self.choose_ocr()
                regions = self._draft_ocr(drafter, page, on_lines)
            else:
                regions = draft_page(drafter, page, on_lines)
            tried.append(step)
            if regions:
                break
        self.last_step = tried[-1] if regions else None
        if len(tried) > 1:  # a fallback drafted the page: its regions say which step, after which
            for region in regions:
                region.extra = {**region.extra, "drafted_by": self.last_step, "fallback_from": tried[:-1]}
        return regions

    def choose_ocr(self):
        return self._ocr_made()

    @property
    def _ocr(self):
        """The OCR drafter where it was made, else None."""
        return self._ocr_made.drafter

    def _draft_ocr(self, drafter, page, on_lines) -> list[Region]:
        """OCR's regions of ``page``; where OCR reads them with little confidence and the page was
        not turned already, those of the page turned upright (``orientation.scan_turn``)."""
        regions = draft_page(drafter, page, on_lines)
        if getattr(page.document, "rotate", "off") == "auto" or not _doubtful(regions):
            return regions
        from core.drafters.orientation import scan_turn

        extra = scan_turn(page)
        if not extra:
            return regions
        view = page.turned(extra)
        back = ~view.turn_matrix * page.turn_matrix
        import pymupdf

        def box(b):
            return tuple(pymupdf.Rect(b) * back) if b is not None else None

        told = (lambda lines: on_lines([OcrLine(ln.text, box(ln.bbox), ln.readings) for ln in lines])) \
            if on_lines is not None else None
        turned = draft_page(drafter, view, told)
        for region in turned:
            region.bbox = box(region.bbox)
            region.extra = {**region.extra, "turn": extra}
        return turned or regions


def _doubtful(regions: list[Region]) -> bool:
    """Whether OCR's regions read like a page it saw turned: none, or a mean confidence (by
    characters) under ``tuning.ORIENTATION_DOUBT_SCORE``."""
    chars = sum(len(r.text) for r in regions)
    if not chars:
        return True
    return sum(r.confidence * len(r.text) for r in regions) / chars < tuning.ORIENTATION_DOUBT_SCORE


def has_ink(page) -> bool:
    """Whether ``page`` shows anything: some pixels of a coarse grey render are dark."""
    import numpy as np

    image = page.render(dpi=tuning.INK_CHECK_DPI).convert("L")
    return bool((np.asarray(image) < 160).mean() >= tuning.INK_MIN_SHARE)


class _BuiltOnUse:
    """The OCR drafter of ``AutoDrafter``, made on the first call, shared with its checked text
    layer. Handed the ``AutoDrafter``'s own method instead, the text layer made a reference cycle
    that held the OCR models (hundreds of MB) until Python's rare full collection."""

    def __init__(self, options: dict):
        self.options = options
        self.drafter = None

    def __call__(self):
        if self.drafter is None:
            from core.drafters.rapidocr import RapidOCRDrafter
            self.drafter = RapidOCRDrafter(**self.options)
        return self.drafter
