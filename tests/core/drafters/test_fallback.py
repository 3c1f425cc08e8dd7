"""``auto`` never leaves a page with text or ink without drafts: the text layer, then OCR with its
layout model, then OCR lines alone; ``hsd draft`` and the regions say which step drafted the page."""

from __future__ import annotations

import json

import pymupdf
import pytest

from core.cli import main
from core.documents import open_document
from core.drafters import get_drafter
from core.drafters.auto import has_ink
from core.drafters.rapidocr import RapidOCRDrafter
from core.drafters.textlayer import TextLayerDrafter

pytest.importorskip("rapidocr")

TEXT = "Drafts come from the text layer first and from the page image where it fails"


@pytest.fixture
def page_pdf(tmp_path):
    doc = pymupdf.open()
    page = doc.new_page(width=420, height=300)
    page.insert_text((30, 60), TEXT[:40], fontsize=14)
    page.insert_text((30, 90), TEXT[40:], fontsize=14)
    doc.save(tmp_path / "page.pdf")
    return tmp_path / "page.pdf"


def _draft_json(pdf, capsys) -> dict:
    assert main(["draft", str(pdf), "--json", "-"]) == 0
    return json.loads(capsys.readouterr().out)["pages"][0]


def test_a_sound_text_layer_drafts_the_page(page_pdf, capsys):
    record = _draft_json(page_pdf, capsys)
    assert record["step"] == "textlayer" and record["regions"]
    assert all("drafted_by" not in r for r in record["regions"])


def test_a_text_layer_that_drafts_nothing_falls_back_to_ocr(page_pdf, capsys, monkeypatch):
    monkeypatch.setattr(TextLayerDrafter, "draft", lambda self, page: [])
    record = _draft_json(page_pdf, capsys)
    assert record["step"] == "ocr+layout"
    assert "text layer" in " ".join(r["text"] for r in record["regions"])
    assert all(r["drafted_by"] == "ocr+layout" and r["source"] == "rapidocr" for r in record["regions"])


def test_ocr_lines_alone_where_the_layout_step_drafts_nothing(page_pdf, capsys, monkeypatch):
    monkeypatch.setattr(TextLayerDrafter, "draft", lambda self, page: [])
    real = RapidOCRDrafter.draft
    monkeypatch.setattr(RapidOCRDrafter, "draft",
                        lambda self, page, on_lines=None: [] if self.layout else real(self, page, on_lines))
    record = _draft_json(page_pdf, capsys)
    assert record["step"] == "ocr lines" and "text layer" in " ".join(r["text"] for r in record["regions"])
    with open_document(page_pdf) as doc:
        regions = get_drafter("auto").draft(doc.page(0))
    assert regions and all(r.extra["fallback_from"] == ["textlayer", "ocr+layout"] for r in regions)


def test_a_blank_page_is_not_read_again(tmp_path, capsys, monkeypatch):
    """No ink: OCR found nothing and no further step is tried (each would cost a full OCR)."""
    doc = pymupdf.open()
    doc.new_page(width=420, height=300)
    doc.save(tmp_path / "blank.pdf")
    calls = []
    real = RapidOCRDrafter.draft
    monkeypatch.setattr(RapidOCRDrafter, "draft",
                        lambda self, page, on_lines=None: calls.append(self.layout) or real(self, page, on_lines))
    record = _draft_json(tmp_path / "blank.pdf", capsys)
    assert record["regions"] == [] and "step" not in record
    assert len(calls) == 1
    with open_document(tmp_path / "blank.pdf") as opened:
        assert not has_ink(opened.page(0))
