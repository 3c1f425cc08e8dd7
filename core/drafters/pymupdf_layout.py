"""Draft born-digital pages with PyMuPDF's layout model (``pymupdf-layout`` + ``pymupdf4llm``).

An alternative to ``textlayer``'s own block, heading, list and table finder: PyMuPDF's bundled ONNX
layout model (a graph network over the page's text boxes, shipped inside the ``pymupdf-layout``
wheel; nothing is downloaded) classifies the boxes, and ``pymupdf4llm`` writes each as Markdown in
reading order. Each layout box becomes one region; its Markdown is the draft. Tables come as pipe
tables and are turned into HTML, the target's table markup. OCR is off: scans go to ``rapidocr``.

Measured against ``textlayer`` in docs/drafters.md (edit distance and time per page): it drafts
worse, so it is not a conversion drafter; ``python -m tools.bench.drafters --drafters pymupdf-layout``
runs it for the comparison.
"""

from __future__ import annotations

import re

from core.drafters.base import DrafterBase, Region
from core.errors import DrafterUnavailableError

#: pymupdf4llm box class -> our region label.
CLASS_LABELS = {
    "page-header": "header", "page-footer": "footer", "section-header": "title", "title": "title",
    "text": "text", "list-item": "list", "table": "table", "picture": "figure", "caption": "caption",
    "formula": "formula", "footnote": "footnote", "code": "code",
}
_PIPE_ROW = re.compile(r"^\s*\|.*\|\s*$")
_RULE_ROW = re.compile(r"^\s*\|(\s*:?-{2,}:?\s*\|)+\s*$")


def pipe_table_html(markdown: str) -> str:
    """A Markdown pipe table as an HTML table (other lines are kept as they are)."""
    rows = [ln for ln in markdown.splitlines() if _PIPE_ROW.match(ln) and not _RULE_ROW.match(ln)]
    if not rows:
        return markdown
    cells = [[c.strip().replace("<br>", " ") for c in r.strip().strip("|").split("|")] for r in rows]
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in cells)
    return f"<table>{body}</table>"


class PyMuPDFLayoutDrafter(DrafterBase):
    """Text-layer drafter whose blocks, headings, lists and tables come from PyMuPDF's layout model."""

    name = "pymupdf-layout"

    def __init__(self, **_options):
        self._api = None

    def prepare(self, page=None) -> None:
        self._load()

    def _load(self):
        if self._api is None:
            try:
                import pymupdf.layout  # noqa: F401  (activates the layout model inside PyMuPDF)
                import pymupdf4llm
            except ImportError as exc:
                raise DrafterUnavailableError(
                    f"the pymupdf-layout drafter needs 'pymupdf-layout' and 'pymupdf4llm' ({exc})") from None
            self._api = pymupdf4llm
        return self._api

    def draft(self, page) -> list[Region]:
        api = self._load()
        chunks = api.to_markdown(page.fitz_page.parent, pages=[page.index], page_chunks=True, use_ocr=False,
                                 show_progress=False)
        if not chunks:
            return []
        chunk = chunks[0]
        text = chunk.get("text", "")
        regions = []
        for box in chunk.get("page_boxes", []):
            label = CLASS_LABELS.get(str(box.get("class")), "text")
            start, end = box.get("pos", (0, 0))
            draft = text[start:end].strip()
            if label == "table":
                draft = pipe_table_html(draft)
            x0, y0, x1, y1 = (float(v) for v in box["bbox"])
            regions.append(Region(label, (x0, y0, x1, y1), draft, self.name))
        return regions
