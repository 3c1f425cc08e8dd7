"""``auto`` picks a drafter per page; the registry builds drafters by name."""

from __future__ import annotations

import pytest

from core.documents import open_document
from core.drafters import DEFAULT_DRAFTER, DRAFTER_NAMES, Drafter, get_drafter
from core.drafters.base import DrafterBase, Region
from core.errors import DrafterUnavailableError
from tests.core import pdf_factory


class FakeOCR(DrafterBase):
    name = "rapidocr"

    def __init__(self, **options):
        self.options = options

    def draft(self, page):
        return [Region("text", (0, 0, 1, 1), "ocr text", self.name)]


def test_names_and_default():
    assert set(DRAFTER_NAMES) == {"auto", "textlayer", "rapidocr", "paddle"}
    assert DEFAULT_DRAFTER == "auto"
    assert isinstance(get_drafter("textlayer"), Drafter)


def test_unknown_drafter():
    with pytest.raises(DrafterUnavailableError, match="choose one of"):
        get_drafter("tesseract")


def test_auto_uses_text_layer_or_ocr_per_page(tmp_path, report_pdf, monkeypatch):
    import core.drafters.rapidocr as rapidocr_module
    monkeypatch.setattr(rapidocr_module, "RapidOCRDrafter", FakeOCR)
    image = pdf_factory.page_image(tmp_path / "scan.png", report_pdf, dpi=40)
    scan = pdf_factory.image_only_pdf(tmp_path / "scan.pdf", image)
    auto = get_drafter("auto", dpi=150)
    with open_document(report_pdf) as doc:
        page = doc.page(0)
        assert auto.choose(page).name == "textlayer"
        assert auto.draft(page)[0].source == "textlayer"
    with open_document(scan) as doc:
        page = doc.page(0)
        assert auto.choose(page).name == "rapidocr"
        assert auto.draft(page)[0].text == "ocr text"
        assert auto.choose(page).options["dpi"] == 150
