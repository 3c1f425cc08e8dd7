"""A document's last page has its layout made beside its reading (``rapidocr._Beside``) only where
an earlier page of the same document showed its drafter behind the decode (stopped, or asked for
its layout only): a one-page document, or one whose earlier pages were read whole, never pays that
layout run. A stopped page without a figure runs PyMuPDF's layout model once, not again after its
stop. Requests go through the drafting process's answer (``core.drafters.process._answer``) with
real RapidOCR and layout model; the stops are the test's, after the first lines, never timed."""

from __future__ import annotations

import multiprocessing

import pymupdf
import pytest

from core import tuning
from core.drafters import get_drafter, rapidocr, scan_layout
from core.drafters.process import DRAFTING_PROCESS_NAME, _answer
from tests.core.drafters.test_stop_figures import _typeset


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tmp_path_factory.mktemp("behind")


def _document(folder, pages: int):
    path = folder / f"plain_{pages}.pdf"
    if not path.exists():
        png = _typeset("plain")
        out = pymupdf.open()
        for _ in range(pages):
            scan = out.new_page(width=500, height=700)
            scan.insert_image(scan.rect, stream=png)
        out.save(path)
    return path


class Connection:
    """Records the early lines sent; ``stops``: the decode ends once the first are sent."""

    def __init__(self, stops: bool):
        self.stops, self.ended = stops, False

    def send(self, message):
        assert message[0] == "lines"
        self.ended = self.stops


@pytest.fixture
def counts(monkeypatch):
    """In the drafting process, the last-page layout on: ``beside`` the pages (0-based) whose
    layout was made beside their reading, ``model`` the layout model's runs per page."""
    monkeypatch.setattr(multiprocessing.current_process(), "name", DRAFTING_PROCESS_NAME)
    monkeypatch.setattr(tuning, "STOP_LAYOUT_BESIDE", True)
    seen = {"beside": [], "model": {}, "page": None}

    class Beside(rapidocr._Beside):
        def __init__(self, *args):
            seen["beside"].append(seen["page"])
            super().__init__(*args)

    groups = scan_layout.layout_groups

    def counted(*args):
        seen["model"][seen["page"]] = seen["model"].get(seen["page"], 0) + 1
        return groups(*args)

    monkeypatch.setattr(rapidocr, "_Beside", Beside)
    monkeypatch.setattr(scan_layout, "layout_groups", counted)
    return seen


def _draft_document(path, stopped: set[int], pages: int, seen: dict, layout_only=()) -> list:
    """Each page drafted in order as the drafting process is asked, told the page after it; the
    pages in ``stopped`` have their decode end after their first lines."""
    drafter, opened, out = get_drafter("rapidocr"), {}, []
    try:
        for index in range(pages):
            seen["page"] = index
            connection = Connection(index in stopped)
            following = index + 1 if index + 1 < pages else None
            what = "layout" if index in layout_only else "draft"
            request = (what, str(path), None, index, True, "off", 0, following)
            out.append(_answer(request, drafter, opened, connection, None, lambda c=connection: c.ended))
    finally:
        if opened:
            opened["document"].close()
    return out


def test_a_one_page_document_never_makes_its_layout_beside_its_reading(folder, counts):
    path = _document(folder, 1)
    _draft_document(path, set(), 1, counts)  # read to its end
    regions = _draft_document(path, {0}, 1, counts)  # stopped: its first page, nothing shown before it
    assert any(r.extra.get("unread") for r in regions[0]), "the page was read whole"
    assert counts["beside"] == []


def test_the_last_page_makes_its_layout_beside_only_after_an_earlier_page_was_stopped(folder, counts):
    path = _document(folder, 3)
    _draft_document(path, set(), 3, counts)  # every page read whole: the drafter kept up
    assert counts["beside"] == []
    _draft_document(path, {0}, 3, counts)  # its first page stopped: the drafter is behind
    assert counts["beside"] == [2]
    counts["beside"].clear()
    _draft_document(path, set(), 3, counts, layout_only={0})  # its first page asked for its layout only
    assert counts["beside"] == [2]


@pytest.mark.parametrize("beside", [False, True])
def test_a_stopped_page_without_a_figure_runs_the_layout_model_once(folder, counts, monkeypatch, beside):
    monkeypatch.setattr(tuning, "STOP_LAYOUT_BESIDE", beside)
    path = _document(folder, 3)
    drafts = _draft_document(path, {0, 1, 2}, 3, counts)
    assert all(any(r.extra.get("unread") for r in regions) for regions in drafts), "a page was read whole"
    assert not any(r.label == "figure" for regions in drafts for r in regions)
    assert counts["beside"] == ([2] if beside else [])
    assert counts["model"] == {0: 1, 1: 1, 2: 1}
