"""The drafting-pipeline benchmark's document: generated scans of several kinds, one a page."""

from __future__ import annotations

from core.documents import open_document
from tools.bench import draft_pipeline


def test_the_benchmark_document_is_scanned_pages_of_several_kinds(tmp_path):
    out = tmp_path / "scans.pdf"
    draft_pipeline.make(out, 3)
    with open_document(out) as document:
        assert document.page_count == 3
        assert not any(document.page(i).is_born_digital for i in range(3))  # images, no text layer


def test_p90_is_a_value_of_the_sample():
    assert draft_pipeline.p90([5.0, 1.0, 3.0, 2.0, 4.0]) == 5.0
    assert draft_pipeline.p90([2.0]) == 2.0
