"""The next scan page prepared while this one's lines are read (``core.drafters.ocr_ahead``), as the
drafting process asks for it (``core.drafters.process._answer``): the same regions and early lines
as drafting page by page, text-layer pages untouched, the document on one thread at a time, and a
dropped look-ahead leaving nothing prepared and no thread behind."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import pymupdf
import pytest

from core.documents import Page, open_document
from core.drafters import get_drafter
from core.drafters import ocr_ahead, scan_layout
from core.drafters.process import _answer

SCANS = [
    ["Pages of a scanned report", "are read one after the other;", "the detector finds each line",
     "and the recogniser reads it."],
    ["While the workers read this page", "the next one is rendered", "and its lines are found."],
    ["A text layer page between scans", "is drafted from its own text."],
    ["The last scan of the document", "starts with its recognition", "when the one before prepared it."],
]
BORN_DIGITAL = 2  # the page kept as text


@pytest.fixture(scope="module")
def mixed_pdf(tmp_path_factory):
    """Four pages: scans (images of typeset lines, no text layer) and one born-digital page."""
    folder = tmp_path_factory.mktemp("ahead")
    out = pymupdf.open()
    for number, lines in enumerate(SCANS):
        source = pymupdf.open()
        page = source.new_page(width=360, height=220)
        for row, line in enumerate(lines):
            page.insert_text((30, 50 + 24 * row), line, fontsize=13, fontname="helv")
        if number == BORN_DIGITAL:
            out.insert_pdf(source)
            continue
        pixmap = page.get_pixmap(dpi=200)
        scan = out.new_page(width=360, height=220)
        scan.insert_image(scan.rect, stream=pixmap.tobytes("png"))
    out.save(folder / "mixed.pdf")
    return folder / "mixed.pdf"


class Connection:
    """The process's side of the pipe: the lines it sends, per page."""

    def __init__(self):
        self.lines = []

    def send(self, message):
        assert message[0] == "lines"
        self.lines.extend((line.text, line.bbox) for line in message[1])


def _serve(pdf, drafter, following, dropped=None, rotate="off", turns=None):
    """Each page's (regions, early lines) as the drafting process answers its requests, each
    request naming the page asked for next where ``following``; ``turns``: the run's turn of each
    page (default 0)."""
    opened, out = {}, []
    try:
        with open_document(pdf) as document:
            count = document.page_count
        for index in range(count):
            connection = Connection()
            then = index + 1 if following and index + 1 < count else None
            request = ("draft", str(pdf), None, index, True, rotate, (turns or {}).get(index, 0), then)
            out.append((_answer(request, drafter, opened, connection, dropped), connection.lines))
    finally:
        if opened:
            opened["document"].close()
    return out


@pytest.fixture
def prepared(monkeypatch):
    """The pages prepared ahead (their indices) and those taken from what was prepared."""
    made, taken = [], []
    real_take = ocr_ahead.PageAhead.take

    class Recorded(ocr_ahead.PreparedPage):
        def __init__(self, *args):
            super().__init__(*args)
            made.append(self.index)

    def take(self, page, dpi):
        got = real_take(self, page, dpi)
        if got is not None:
            taken.append(page.index)
        return got

    monkeypatch.setattr(ocr_ahead, "PreparedPage", Recorded)
    monkeypatch.setattr(ocr_ahead.PageAhead, "take", take)
    return made, taken


def _ahead_threads():
    return [t for t in threading.enumerate() if t.name == "hsd-ocr-ahead"]


def test_pages_prepared_ahead_draft_as_page_by_page_and_text_layer_pages_are_left_alone(mixed_pdf, prepared):
    made, taken = prepared
    want = _serve(mixed_pdf, get_drafter("auto"), following=False)
    assert made == [] and all(regions for regions, _ in want)
    got = _serve(mixed_pdf, get_drafter("auto"), following=True)
    assert got == want  # regions (texts, boxes, labels) and early lines, in the same order
    assert want[BORN_DIGITAL][0][0].source == "textlayer" and want[0][0][0].source == "rapidocr"
    # page 2 while page 1 was read; the text layer page was not rendered for OCR, nor was the scan
    # after it prepared (a text layer page's draft reads no lines to overlap with)
    assert made == taken == [1]
    assert not _ahead_threads()


def test_a_look_ahead_dropped_while_it_renders_detects_nothing_and_leaves_no_thread(mixed_pdf, prepared, monkeypatch):
    """The run is cancelled while the helper renders the next page: its detector does not run,
    nothing is kept, and no thread is left once the page is answered."""
    from core.drafters.ocr_pipeline import OcrPipeline

    made, _ = prepared
    dropped, detected_on = threading.Event(), []
    real_render, real_detect = Page.render, OcrPipeline.detect

    def render(self, *args, **kwargs):
        if threading.current_thread().name == "hsd-ocr-ahead":
            dropped.set()
        return real_render(self, *args, **kwargs)

    def detect(self, pixels):
        detected_on.append(threading.current_thread().name)
        return real_detect(self, pixels)

    monkeypatch.setattr(Page, "render", render)
    monkeypatch.setattr(OcrPipeline, "detect", detect)
    got = _serve(mixed_pdf, get_drafter("auto"), following=True, dropped=dropped.is_set)
    assert dropped.is_set() and made == [] and "hsd-ocr-ahead" not in detected_on
    assert not _ahead_threads()
    assert got == _serve(mixed_pdf, get_drafter("auto"), following=False)


def test_the_document_is_touched_by_one_thread_at_a_time(mixed_pdf, prepared, monkeypatch):
    """The helper's render of the next page is slowed, and the page's own recognition is short:
    the layout of this page (PyMuPDF, on the drafting thread) still starts only after that render."""
    made, _ = prepared
    inside, overlaps = [], []
    lock = threading.Lock()

    def exclusive(function, slow=False):
        def run(*args, **kwargs):
            with lock:
                inside.append(threading.current_thread().name)
                if len(inside) > 1:
                    overlaps.append(list(inside))
            try:
                if slow and threading.current_thread().name == "hsd-ocr-ahead":
                    threading.Event().wait(1.0)  # widens the window a second thread could use
                return function(*args, **kwargs)
            finally:
                with lock:
                    inside.remove(threading.current_thread().name)
        return run

    monkeypatch.setattr(Page, "render", exclusive(Page.render, slow=True))
    monkeypatch.setattr(scan_layout, "text_page", exclusive(scan_layout.text_page))
    _serve(mixed_pdf, get_drafter("auto"), following=True)
    assert made == [1] and overlaps == []


@pytest.mark.drafting_process
def test_a_document_run_drafts_through_the_process_as_page_by_page(mixed_pdf):
    """Every page of a document run (``DraftAhead``, the shared drafting process, each page told
    the next) gets the regions and early lines that drafting page by page here gives."""
    from core.draft_ahead import DraftAhead
    from core.drafters import process
    from core.drafters.process import ProcessDrafter

    def record(lines):
        return [(line.text, line.bbox, line.readings) for line in lines]

    local = get_drafter("auto")
    want = []
    with open_document(mixed_pdf) as document:
        for index in range(document.page_count):
            lines = []
            want.append((local.draft(document.page(index), on_lines=lines.extend), record(lines)))
    drafter = get_drafter("auto")
    try:
        with open_document(mixed_pdf) as document:
            run = DraftAhead(document, list(range(document.page_count)), drafter, 72, ahead=1, beside=True,
                             emit=lambda event: None)
            try:
                got = []
                for _ in range(document.page_count):
                    page = run.next()
                    got.append((page.drafts.result(), record(page.drafts.early_lines())))
            finally:
                run.stop()
                run.join()
        assert isinstance(run.reader, ProcessDrafter) and not run.reader.broken
        assert got == want
        assert document not in run.reader._following  # the run's order is let go with the run
    finally:
        for reader in process._shared.values():
            reader.close()
        process._shared.clear()


_PRIORITY_SCRIPT = """
import os
from core.drafters.ocr_ahead import PageAhead
from core.drafters.process import lower_priority

class Page:
    document, index, turn, width, height, last_render_scale = None, 1, 0, 100.0, 100.0, 1.0
    def render(self, dpi):
        import numpy
        return numpy.zeros((4, 4, 3), dtype="uint8")

class Drafter:
    def ocr_dpi(self, page):
        return 72.0

class Pipeline:
    seen = []
    def detect(self, pixels):
        self.seen.append(os.getpriority(os.PRIO_PROCESS, 0))  # this thread's (Linux: nice is per thread)
        return "lines"

lower_priority(7, False)
ahead, pipeline = PageAhead(), Pipeline()
ahead.expect(Page())
with ahead.beside(Drafter(), pipeline):
    pass
ahead.finish()
print(os.getpriority(os.PRIO_PROCESS, 0), pipeline.seen)
"""


@pytest.mark.skipif(not hasattr(os, "getpriority"), reason="POSIX priorities")
def test_the_look_ahead_runs_at_the_drafting_processs_lower_priority():
    """The helper thread starts from the niced drafting thread and keeps its priority: it yields
    to the decode as the rest of the process does (``tuning.DRAFTING_PROCESS_NICE``)."""
    out = subprocess.run([sys.executable, "-c", _PRIORITY_SCRIPT], capture_output=True, text=True, timeout=120,
                         check=True).stdout.split(None, 1)
    base = os.getpriority(os.PRIO_PROCESS, 0)
    niced = min(19, base + 7)
    assert out[0] == str(niced) and out[1].strip() == f"[{niced}]"


def test_the_cdla_layout_model_runs_ahead_with_the_same_drafts(mixed_pdf, monkeypatch):
    """With the layout model that reads only the pixels, the next page's layout is prepared too,
    and the drafts are those of drafting page by page."""
    layouts = []
    real = ocr_ahead.PreparedPage

    class Recorded(real):
        def __init__(self, *args):
            super().__init__(*args)
            layouts.append(self.layout)

    monkeypatch.setattr(ocr_ahead, "PreparedPage", Recorded)
    spec = "auto:layout=cdla"
    want = _serve(mixed_pdf, get_drafter(spec), following=False)
    assert _serve(mixed_pdf, get_drafter(spec), following=True) == want
    assert len(layouts) == 1 and layouts[0] is not None


def test_runs_taking_turns_do_not_prepare_pages_for_each_other(mixed_pdf, prepared, tmp_path):
    """Two documents' requests in turn (Ray's runs at once): a page prepared for one would be let go
    at the other's next request, so after the first such turn nothing is prepared; the drafts are
    those of drafting page by page."""
    import shutil

    made, taken = prepared
    other = shutil.copy(mixed_pdf, tmp_path / "other.pdf")
    drafter, opened, got = get_drafter("auto"), {}, []
    try:
        for index in (0, 1):
            for pdf in (mixed_pdf, other):
                request = ("draft", str(pdf), None, index, False, "off", 0, index + 1)
                got.append(_answer(request, drafter, opened, Connection()))
    finally:
        opened["document"].close()
    assert made == [1] and taken == []
    want = _serve(mixed_pdf, get_drafter("auto"), following=False)
    assert got == [want[0][0], want[0][0], want[1][0], want[1][0]]


def test_the_next_pages_turn_is_left_to_the_run(mixed_pdf, prepared, monkeypatch):
    """Under ``--rotate auto`` the process does not decide the next page's turn a second time: it
    prepares the page upright, and where the run turns it the prepared page is let go."""
    from core.drafters import orientation

    made, taken = prepared
    decided = []
    real = orientation.page_turn
    monkeypatch.setattr(orientation, "page_turn", lambda page: decided.append(page.index) or real(page))
    turns = {1: 90}
    want = _serve(mixed_pdf, get_drafter("auto"), following=False, rotate="auto", turns=turns)
    got = _serve(mixed_pdf, get_drafter("auto"), following=True, rotate="auto", turns=turns)
    assert got == want and made == [1] and taken == [] and decided == []
