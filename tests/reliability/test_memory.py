"""Pages stream: ``hsd convert`` never holds two rendered pages at once (the 500-page peak-RSS
numbers come from ``python -m tools.bench.memory``; see docs/reliability.md)."""

from __future__ import annotations

import weakref


def test_convert_holds_one_rendered_page_at_a_time(tmp_path, cli, model_dir, monkeypatch):
    """Runs the memory benchmark on a few pages (through the CLI's own code path; ``cli`` shares the
    loaded model) and checks, at every render, that no earlier page's image is still alive."""
    from tools.bench import memory
    from core.documents import Page

    images: list[weakref.ref] = []
    overlaps = []
    original = Page.render

    def render(self, dpi=144):
        overlaps.append(sum(ref() is not None for ref in images))
        image = original(self, dpi)
        images.append(weakref.ref(image))
        return image

    monkeypatch.setattr(Page, "render", render)
    result = memory.run(pages=5, model=model_dir, mode="ar", dpi=72, max_new_tokens=2, work=tmp_path)
    assert len(images) == 5 and overlaps == [0, 0, 0, 0, 0], overlaps
    assert [c["page"] for c in result["checkpoints"]] == [1, 5]
    assert result["peak_mb"] > 0 and "pages done" in memory.report(result)


def test_draft_holds_no_page_once_it_is_drafted(tmp_path, cli, monkeypatch):
    """``hsd draft`` of a long document keeps each page (ours and PyMuPDF's) only while it drafts
    it: at every page it loads, at most the one before is still alive (it is being replaced), so
    its memory does not grow with the page count (a 5,000-page PDF: about 170 MB, the same as one
    page; docs/reliability.md)."""
    import gc

    from core.documents import Document
    from tests.reliability import hostile as h

    pages: list[weakref.ref] = []
    alive = []
    original = Document.page

    def page(self, index):
        gc.collect()
        alive.append(sum(ref() is not None for ref in pages))
        loaded = original(self, index)
        pages.extend((weakref.ref(loaded), weakref.ref(loaded.fitz_page)))
        return loaded

    monkeypatch.setattr(Document, "page", page)
    pdf = h.many_pages_pdf(tmp_path / "long.pdf", pages=40)
    for extra in ([], ["--json", str(tmp_path / "d.json")]):
        pages.clear()
        alive.clear()
        rc, _, err = cli("draft", pdf, "--drafter", "textlayer", *extra)
        assert rc == 0, err
        assert len(alive) == 40 and max(alive) <= 2, alive[:20]
