"""The generated turned pages (``tools.bench.turned_set``): each page four ways with one reference,
and the turned text-layer page drafts as its upright twin does once turned back."""

from __future__ import annotations

import pymupdf

from tools.bench import turned_set
from core.documents import open_document
from core.drafters import get_drafter


def test_a_turned_page_drafts_as_its_upright_twin(tmp_path):
    names = turned_set.make_turned_set(tmp_path, pages=2)
    assert names == ["slide90_000", "page90_001"]
    for name in names:
        references = {(tmp_path / half / "pairs" / f"{name}.md").read_text("utf-8") for half in turned_set.HALVES}
        assert len(references) == 1
        born = tmp_path / "born" / "pairs" / f"{name}.pdf"
        turned = tmp_path / "turned" / "pairs" / f"{name}.pdf"
        with pymupdf.open(born) as a, pymupdf.open(turned) as b:
            assert (a[0].rect.width, a[0].rect.height) == (b[0].rect.height, b[0].rect.width)
        drafts = []
        for pdf in (born, turned):
            with open_document(pdf, rotate="auto") as doc:
                page = doc.page(0)
                drafts.append([(r.label, r.text) for r in get_drafter("textlayer").draft(page)])
        assert drafts[0] == drafts[1] and drafts[0]
        with open_document(tmp_path / "turnedscan" / "pairs" / f"{name}.pdf") as doc:
            assert not doc.page(0).is_born_digital
