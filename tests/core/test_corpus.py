"""Checks on the real corpus (skipped when ../shared/corpus or $HSD_CORPUS is absent)."""

from __future__ import annotations

import pytest

from core.documents import open_document
from core.drafters import get_drafter
from core.text_distance import text_edit_distance

pytestmark = pytest.mark.corpus


#: Documents of the corpus that are not born-digital throughout: the OmniDocBench pages are
#: image-only scans; one MinerU textbook is a scan too, and one Docling report mixes scanned pages in.
SCANNED = {"mineru_ordinary_textbook_1d9a8476_6820850d": {False}, "docling_redp5110_sampled": {False, True}}


def test_every_corpus_pdf_opens_and_is_classified(corpus):
    pdfs = sorted((corpus / "pairs").glob("*.pdf"))
    assert pdfs
    for pdf in pdfs:
        with open_document(pdf) as doc:
            kinds = {page.is_born_digital for page in doc.pages()}
        expected = {False} if pdf.name.startswith("odb_") else SCANNED.get(pdf.stem, {True})
        assert kinds == expected, pdf.name


@pytest.mark.parametrize("stem, limit", [
    ("docling_multi_page", 0.02),
    ("docling_right_to_left_01", 0.06),
    ("docling_table_mislabeled_as_picture", 0.05),
    ("mineru_academic_literature_f7904bc3_78854b10", 0.08),
])
def test_textlayer_drafts_stay_close_to_the_reference(corpus, stem, limit):
    drafter = get_drafter("textlayer")
    pdf = corpus / "pairs" / f"{stem}.pdf"
    with open_document(pdf) as doc:
        text = "\n\n".join(r.text for p in doc.pages() for r in drafter.draft(p)
                           if r.label not in ("header", "footer", "page_number", "figure"))
    assert text_edit_distance(text, pdf.with_suffix(".md").read_text()) <= limit
