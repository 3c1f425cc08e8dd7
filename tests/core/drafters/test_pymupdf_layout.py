"""The PyMuPDF layout-model drafter (``pymupdf-layout`` + ``pymupdf4llm``; skipped where missing)."""

import pytest

from core.drafters.pymupdf_layout import pipe_table_html


def test_pipe_tables_become_html():
    md = "|a|b|\n|---|---|\n|1|2|"
    assert pipe_table_html(md) == "<table><tr><td>a</td><td>b</td></tr><tr><td>1</td><td>2</td></tr></table>"
    assert pipe_table_html("no table") == "no table"


def test_drafts_a_born_digital_page(tmp_path):
    pytest.importorskip("pymupdf4llm")
    pytest.importorskip("pymupdf.layout")
    import pymupdf

    from core.documents import open_document
    from tools.bench.drafters import _drafter

    path = tmp_path / "p.pdf"
    doc = pymupdf.open()
    page = doc.new_page(width=420, height=595)
    page.insert_text((40, 60), "Quarterly Report", fontsize=20)
    page.insert_textbox(pymupdf.Rect(40, 90, 380, 200), "Revenue increased by twelve percent compared with "
                        "the previous year, while operating costs remained stable.", fontsize=10)
    doc.save(str(path))
    with open_document(path) as d:
        regions = _drafter("pymupdf-layout").draft(d.page(0))
    text = " ".join(r.text for r in regions)
    assert "Quarterly Report" in text and "twelve percent" in text
    assert all(r.source == "pymupdf-layout" for r in regions)
