"""convert_with_resume: saved pages come back, the rest are converted once, and saved pages teach
the engine before the next page is converted."""

from __future__ import annotations

import pytest

from core.errors import CancelledError
from core.resume import convert_with_resume
from core.results import PageResult, PageStats


def _result(page: int, text: str) -> PageResult:
    return PageResult(page=page, width=100.0, height=100.0, markdown=text, regions=[], region_stats=[],
                      region_outputs=[], spans=[], stats=PageStats())


class _Output:
    def __init__(self, saved: dict[int, str]):
        self.saved = {p: _result(p, t) for p, t in saved.items()}

    def finished(self, page):
        return self.saved.get(page)

    def save_page(self, result, image):
        self.saved[result.page] = result


class _Engine:
    def __init__(self, log):
        self.log = log

    def remember_pages(self, document, results):
        self.log.append(("remember", [r.page for r in results]))

    def convert_document(self, document, indices, on_event=None, should_cancel=None):
        (i,) = indices
        self.log.append(("convert", i + 1))
        result = _result(i + 1, f"new {i + 1}")
        result.page_image = object()
        yield result


def test_saved_pages_come_back_and_teach_the_engine_before_the_next_new_page():
    log, asked = [], []
    output = _Output({1: "old 1", 2: "old 2", 4: "old 4"})

    def engine_for(position):
        asked.append(position)
        return _Engine(log)

    pages = list(convert_with_resume("doc", [0, 1, 2, 3, 4], output, engine_for,
                                     before_page=lambda n, i: log.append(("before", i + 1))))
    assert [(n, r.page, r.markdown, reused) for n, r, reused in pages] == [
        (0, 1, "old 1", True), (1, 2, "old 2", True), (2, 3, "new 3", False), (3, 4, "old 4", True),
        (4, 5, "new 5", False)]
    assert asked == [2]  # one engine, asked for at the first page to convert
    assert log == [("remember", [1, 2]), ("before", 3), ("convert", 3),
                   ("remember", [4]), ("before", 5), ("convert", 5)]
    assert output.saved[3].markdown == "new 3" and output.saved[5].markdown == "new 5"
    assert all(r.page_image is None for _, r, _ in pages)  # pages stream: no rendered page is held


def test_a_document_all_saved_loads_no_engine():
    output = _Output({1: "a", 2: "b"})
    pages = list(convert_with_resume("doc", [0, 1], output, lambda n: pytest.fail("engine asked for")))
    assert [r.markdown for _, r, _ in pages] == ["a", "b"]


def test_cancel_stops_between_pages():
    output = _Output({})
    calls = {"n": 0}

    def cancelled():
        calls["n"] += 1
        return calls["n"] > 1

    pages = convert_with_resume("doc", [0, 1, 2], output, lambda n: _Engine([]), should_cancel=cancelled)
    assert next(pages)[1].page == 1
    with pytest.raises(CancelledError):
        next(pages)
