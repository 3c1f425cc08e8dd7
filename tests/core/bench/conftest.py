"""A small synthetic corpus the benchmark code has never seen: generated PDFs with a .md beside each."""

from __future__ import annotations

import pytest

PAGES = {
    "alpha_report": [
        ["# Quarterly Report", "Revenue increased by twelve percent compared with the previous year, while "
         "operating costs remained stable and investment in research grew steadily.",
         "## Outlook", "The committee approved the budget for the next fiscal year on the fourteenth of March."],
        ["## Method", "In this paper we propose a method for parsing scanned documents into structured text. "
         "The results indicate that the model generalises well to unseen layouts and languages.",
         "All measurements were taken at room temperature and repeated three times."],
    ],
    "beta_note": [
        ["# Short Note", "Please refer to the appendix for the complete list of parameters.",
         "Section four describes the experimental setup and discusses the limitations."],
    ],
}


def _write_pdf(path, pages):
    import pymupdf

    doc = pymupdf.open()
    for blocks in pages:
        page = doc.new_page(width=420, height=595)
        y = 50
        for block in blocks:
            heading = block.startswith("#")
            text = block.lstrip("# ")
            size = 16 if heading else 10
            rect = pymupdf.Rect(40, y, 380, y + (30 if heading else 120))
            used = page.insert_textbox(rect, text, fontsize=size, fontname="helv")
            y = rect.y1 - max(0, used) + 14
    doc.save(str(path))
    doc.close()


@pytest.fixture(scope="session")
def synthetic_corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("corpus")
    (root / "pairs").mkdir()
    for name, pages in PAGES.items():
        _write_pdf(root / "pairs" / f"{name}.pdf", pages)
        md = "\n\n".join(block for blocks in pages for block in blocks)
        (root / "pairs" / f"{name}.md").write_text(md + "\n", encoding="utf-8")
    (root / "pairs" / "orphan.pdf").write_bytes((root / "pairs" / "beta_note.pdf").read_bytes())  # no .md
    return root
