"""The default drafter: the text layer where the page has a usable one, OCR otherwise (per page)."""

from __future__ import annotations

from core.drafters.base import Region, draft_page, prepare_drafter


class AutoDrafter:
    """``textlayer`` for born-digital pages (``Page.is_born_digital``), ``rapidocr`` for scans and
    images. Both sub-drafters are created on first need, so a born-digital PDF never loads OCR."""

    name = "auto"
    streams_lines = True  # where the page's drafter does (OCR)

    def __init__(self, dpi: int | None = None, **ocr_options):
        self._ocr_options = dict(ocr_options, dpi=dpi)
        self._textlayer = None
        self._ocr = None

    def choose(self, page):
        """The drafter that will handle ``page``."""
        if page.is_born_digital:
            if self._textlayer is None:
                from core.drafters.textlayer import TextLayerDrafter
                self._textlayer = TextLayerDrafter()
            return self._textlayer
        if self._ocr is None:
            from core.drafters.rapidocr import RapidOCRDrafter
            self._ocr = RapidOCRDrafter(**self._ocr_options)
        return self._ocr

    def prepare(self, page) -> None:
        """Load the models the drafter of ``page`` needs (see ``RapidOCRDrafter.prepare``)."""
        prepare_drafter(self.choose(page), page)

    def draft(self, page, on_lines=None) -> list[Region]:
        return draft_page(self.choose(page), page, on_lines)
