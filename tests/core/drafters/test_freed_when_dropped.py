"""A drafter that drafted pages, once dropped, is freed with its OCR models at once: reference
counting frees it, not Python's cycle collection, whose full runs are rare in a process that holds
a model (a long-lived app or test process kept one copy of the models per drafter made, hundreds
of MB each)."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

from core.documents import open_document
from core.drafters import get_drafter
from core.drafters.ocr_pipeline import OcrPipeline
from tests.core import pdf_factory

pytest.importorskip("rapidocr")


@pytest.fixture(scope="module")
def scan_pdf(tmp_path_factory, report_pdf):
    folder = tmp_path_factory.mktemp("freed")
    return pdf_factory.image_only_pdf(folder / "scan.pdf", pdf_factory.page_image(folder / "scan.png", report_pdf))


def pipelines_made_by(use) -> list[weakref.ref]:
    """Weak references to the OCR pipelines that ``use()`` made (no cycle collection runs meanwhile)."""
    before = {id(o) for o in gc.get_objects() if type(o) is OcrPipeline}
    use()
    return [weakref.ref(o) for o in gc.get_objects() if type(o) is OcrPipeline and id(o) not in before]


def test_a_pipeline_that_read_a_page_is_freed_when_dropped(no_cycle_collection, scan_pdf):
    with open_document(scan_pdf) as document:
        pixels = document.page(0).render(dpi=100)
    pipeline = OcrPipeline(workers=2)
    told = []
    assert pipeline.read(np.asarray(pixels), told.extend).texts
    assert told and pipeline.words is not None
    gone = weakref.ref(pipeline)
    del pipeline
    assert gone() is None


@pytest.mark.parametrize("spec", ["rapidocr", "auto"])
def test_a_drafter_that_drafted_a_scan_and_a_text_page_frees_its_models_when_dropped(
        no_cycle_collection, scan_pdf, report_pdf, spec):
    made = {}

    def use():
        drafter = made["drafter"] = get_drafter(spec)
        with open_document(scan_pdf) as scan, open_document(report_pdf) as text:
            assert drafter.draft(scan.page(0))
            assert drafter.draft(text.page(0))

    pipelines = pipelines_made_by(use)
    assert pipelines, "the scan was read by a pipeline"
    gone = weakref.ref(made.pop("drafter"))
    assert gone() is None
    assert all(pipeline() is None for pipeline in pipelines)
