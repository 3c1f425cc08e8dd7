"""Early OCR lines (``core.drafters.line_stream``): a scripted recogniser checks the order, the
chunks and what is read; a real OCR run checks that telling the lines changes no region."""

from __future__ import annotations

import pytest

from core import tuning
from core.documents import open_document
from core.drafters.line_stream import PageReads, chunks, clipped_quad, page_quads
from core.drafters.rapidocr import RapidOCRDrafter
from core.drafters.squeeze import SqueezePolicy
from tests.core.drafters.test_squeeze import ScriptedRecognizer, page
from tests.core.pdf_factory import text_pdf


def latin_page(count: int):
    return page(range(1, count + 1), latin=set(range(1, count + 1)))


def read_all(crops, inner, boxes=None, tell=None) -> PageReads:
    reads = PageReads(crops, inner, boxes, tell)
    reads.read(list(range(len(crops))), 1.0)
    return reads


def test_without_a_listener_the_lines_are_read_in_one_call():
    crops, texts = latin_page(10)
    inner = ScriptedRecognizer(texts)
    out = read_all(crops, inner)
    assert out.texts == [texts[t] for t in range(1, 11)] and len(inner.calls) == 1


def test_a_listener_is_told_the_lines_in_the_detectors_order_chunk_by_chunk(monkeypatch):
    monkeypatch.setattr(tuning, "EARLY_LINES_CHUNK", 4)
    crops, texts = latin_page(10)
    inner, told = ScriptedRecognizer(texts), []
    out = read_all(crops, inner, tell=told.append)
    # each line with its place in the detector's list (its box: ``quad``); two lines first
    assert told == [[(t - 1, texts[t]) for t in range(1, 3)], [(t - 1, texts[t]) for t in range(3, 7)],
                    [(t - 1, texts[t]) for t in range(7, 11)]]
    assert out.texts == [texts[t] for t in range(1, 11)]  # every crop read once, in its place
    # one call, the lines in the order the chunks are told: no wait at a chunk's end
    assert [[tag for tag, _ in call] for call in inner.calls] == [[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]]
    assert len(out.words) == len(out.scores) == 10


def test_a_chunk_is_told_before_the_lines_after_it_are_read(monkeypatch):
    """A reader that yields each line as it is read (the pipeline's workers): a chunk is told as
    soon as its last line comes, while the next chunk's lines are still unread."""
    monkeypatch.setattr(tuning, "EARLY_LINES_CHUNK", 4)
    crops, texts = latin_page(10)
    inner, read, events = ScriptedRecognizer(texts), [], []

    def one_by_one(batch):
        for crop in batch:
            line = inner([crop])[0]
            read.append(line.text)
            events.append(("read", len(read)))
            yield line

    out = read_all(crops, one_by_one, tell=lambda lines: events.append(("told", len(lines))))
    assert [e for e in events if e[0] == "told"] == [("told", 2), ("told", 4), ("told", 4)]
    assert events.index(("told", 2)) == events.index(("read", 2)) + 1  # told before line 3 is read
    assert out.texts == [texts[t] for t in range(1, 11)]


def test_a_two_column_page_is_read_down_its_first_column_before_the_second(monkeypatch):
    """The detector lists a two-column page's lines row by row across both columns; the lines are
    read in reading order, so the decode (which writes the first column first) gets the lines it
    needs next. What is returned stays in the detector's order."""
    import numpy as np

    monkeypatch.setattr(tuning, "EARLY_LINES_CHUNK", 4)
    crops, texts = latin_page(8)
    told = []
    # detector order: left 0, right 0, left 1, right 1, ... (lines 20 px high, columns 40 px apart)
    quads = np.array([[[x, y], [x + 200, y], [x + 200, y + 20], [x, y + 20]]
                      for y in (0, 30, 60, 90) for x in (0, 240)], dtype=float)
    out = read_all(crops, ScriptedRecognizer(texts), quads, told.extend)
    assert [index for index, _ in told] == [0, 2, 4, 6, 1, 3, 5, 7]
    assert out.texts == [texts[t] for t in range(1, 9)]


def test_quads_are_taken_back_through_the_detectors_resizing_and_padding():
    import numpy as np

    boxes = np.array([[[10, 40], [110, 40], [110, 60], [10, 60]]], dtype=np.float32)
    record = {"preprocess": {"ratio_h": 2.0, "ratio_w": 2.0}, "padding_1": {"top": 30, "left": 0}}
    quads = page_quads(boxes, record)
    assert quads[0].tolist() == [[20, 20], [220, 20], [220, 60], [20, 60]]
    assert clipped_quad(quads, 0, 50, 200)[:, 0].max() == 200 and clipped_quad(quads, 0, 50, 200)[:, 1].max() == 50
    assert clipped_quad(quads, 1, 50, 200) is None and clipped_quad(None, 0, 50, 200) is None


def test_chunks_start_small_and_double_up_to_the_chunk(monkeypatch):
    monkeypatch.setattr(tuning, "EARLY_LINES_FIRST", 2)
    monkeypatch.setattr(tuning, "EARLY_LINES_CHUNK", 8)
    assert chunks(20) == [[0, 1], [2, 3, 4, 5], list(range(6, 14)), list(range(14, 20))]
    assert chunks(1) == [[0]] and chunks(0) == []
    monkeypatch.setattr(tuning, "EARLY_LINES_FIRST", 16)  # never above the chunk
    assert chunks(10) == [list(range(8)), [8, 9]]


def test_a_listener_that_fails_is_dropped_and_the_page_still_read(monkeypatch):
    monkeypatch.setattr(tuning, "EARLY_LINES_CHUNK", 3)
    crops, texts = latin_page(7)
    calls = []

    def broken(lines):
        calls.append(lines)
        raise BrokenPipeError("the reader went away")

    out = read_all(crops, ScriptedRecognizer(texts), tell=broken)
    assert out.texts == [texts[t] for t in range(1, 8)]
    assert len(calls) == 1 and out.tell is None


def test_squeezing_a_cjk_page_still_tells_its_lines():
    crops, texts = page(range(1, 13))
    told = []
    reads = PageReads(crops, ScriptedRecognizer(texts), tell=told.extend)
    SqueezePolicy().read_page(reads)
    assert reads.texts == [texts[t] for t in range(1, 13)]
    # the sample, then the rest squeezed: each line still told with its place in the detector's list
    assert sorted(told) == [(t - 1, texts[t]) for t in range(1, 13)]
    assert told[0][0] != 0  # the sample came first


@pytest.fixture(scope="module")
def lines_pdf(tmp_path_factory):
    folder = tmp_path_factory.mktemp("lines")
    lines = [f"Line {i} of a page whose text the decode reads early." for i in range(12)]
    return text_pdf(folder / "page.pdf", lines, size=11, width=420, height=420), lines


@pytest.mark.parametrize("layout", [False, "pymupdf"])
def test_rapidocr_tells_the_lines_it_reads_and_drafts_the_same_regions(lines_pdf, monkeypatch, layout):
    monkeypatch.setattr(tuning, "EARLY_LINES_CHUNK", 5)
    monkeypatch.setattr(tuning, "EARLY_LINES_STACK", 1)  # each line told alone
    pdf, lines = lines_pdf
    drafter = RapidOCRDrafter(layout=layout, dpi=150)
    with open_document(pdf) as document:
        want = drafter.draft(document.page(0))
        told: list[list] = []
        got = drafter.draft(document.page(0), on_lines=told.append)
        final, _ = drafter.ocr_lines(*_pixels(drafter, document.page(0)))
    assert [r.to_dict() for r in got] == [r.to_dict() for r in want]
    assert len(told) >= 2 and all(0 < len(chunk) <= 5 for chunk in told)
    read = [line for chunk in told for line in chunk]
    assert read[0].text.startswith("Line 0") and read[-1].text.startswith("Line 11")
    # each line told with the box the finished OCR gives it (points of the page)
    boxes = {line.text: line.bbox for line in final}
    assert len(read) == len(boxes) == 12
    for line in read:
        assert line.bbox == pytest.approx(boxes[line.text], abs=0.01)
        assert 0 <= line.bbox[0] < line.bbox[2] <= 420 and 0 <= line.bbox[1] < line.bbox[3] <= 420


def test_rapidocr_tells_a_paragraphs_lines_in_stacks_of_three(lines_pdf, monkeypatch):
    monkeypatch.setattr(tuning, "EARLY_LINES_CHUNK", 5)
    pdf, lines = lines_pdf
    drafter = RapidOCRDrafter(layout=False, dpi=150)
    with open_document(pdf) as document:
        told: list[list] = []
        drafter.draft(document.page(0), on_lines=told.append)
        final, _ = drafter.ocr_lines(*_pixels(drafter, document.page(0)))
    final = sorted(final, key=lambda line: line.bbox[1])  # the page's one paragraph, top to bottom
    covered = []
    for record in (record for chunk in told for record in chunk):
        # each record: one to three lines that follow each other on the page, joined, their boxes' union
        first = next(k for k, line in enumerate(final) if (record.text + " ").startswith(line.text + " "))
        size = next(n for n in (1, 2, 3) if " ".join(line.text for line in final[first:first + n]) == record.text)
        stack = final[first:first + size]
        union = (min(line.bbox[0] for line in stack), min(line.bbox[1] for line in stack),
                 max(line.bbox[2] for line in stack), max(line.bbox[3] for line in stack))
        assert record.bbox == pytest.approx(union, abs=0.01)
        covered += range(first, first + size)
    assert sorted(covered) == list(range(12))  # every line told once
    assert len(told) >= 2 and sum(len(chunk) for chunk in told) < 12  # some were told together


def _pixels(drafter, page):
    import numpy as np

    image = page.render(dpi=drafter.ocr_dpi(page))
    return np.asarray(image), page.last_render_scale
