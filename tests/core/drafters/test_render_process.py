"""The decode's pages rendered and turned in a process of their own beside a drafting process: the
same pixels and turns as rendering here, no OCR for a turn in the decode's process, errors and
warnings carried back, and a process that stops costs one warning, no page."""

from __future__ import annotations

import warnings

import numpy as np
import pymupdf
import pytest

from core import tuning
from core.documents import open_document
from core.drafters import get_drafter, orientation
from core.drafters.process import ProcessDrafter
from core.drafters.render_process import RenderProcess, attach, renderer_of
from core.errors import HSDWarning, PageRangeError
from core.page_pipeline import render
from tests.core.drafters.test_turned_pages import _scan

pytestmark = pytest.mark.drafting_process

TURNS = (0, 90, 180, 270)


@pytest.fixture(autouse=True)
def render_process_on(monkeypatch, no_shared_readers):
    monkeypatch.setattr(tuning, "RENDER_PROCESS", True)  # whatever the default (docs/tuning.md)


@pytest.fixture(scope="module")
def scans(tmp_path_factory) -> dict:
    """A slide scanned upright, sideways both ways and upside down: one page each, and all four in
    one document."""
    pytest.importorskip("rapidocr")
    folder = tmp_path_factory.mktemp("scans")
    paths = {turn: _scan(folder / f"scan{turn}.pdf", turn) for turn in TURNS}
    with pymupdf.open() as joined:
        for turn in TURNS:
            with pymupdf.open(paths[turn]) as one:
                joined.insert_pdf(one)
        joined.save(folder / "all.pdf")
    paths["all"] = folder / "all.pdf"
    return paths


@pytest.fixture(scope="module")
def renderer():
    process = RenderProcess()
    yield process
    process.close()


def _pixels(image) -> np.ndarray:
    return np.asarray(image)


@pytest.mark.parametrize("rotate", ["auto", "off"])
def test_the_rendering_process_gives_this_process_s_turns_and_pixels(scans, renderer, rotate):
    """Turned slides whose ink cannot tell their turn: OCR decides, there as here."""
    with open_document(scans["all"], rotate=rotate) as here, open_document(scans["all"], rotate=rotate) as there:
        attach(there, renderer)
        for index, drawn in enumerate(TURNS):
            page, elsewhere = here.page(index), there.page(index)
            assert page.turn == (drawn if rotate == "auto" else 0)
            assert renderer.turn(elsewhere) == page.turn and there.turns[index] == page.turn
            want = page.render(96)
            image, seconds = render(elsewhere, 96)  # the decode's render, through the renderer
            assert image.size == want.size and np.array_equal(_pixels(image), _pixels(want))
            assert elsewhere.turn == page.turn and (elsewhere.width, elsewhere.height) == (page.width, page.height)
            assert elsewhere.last_render_dpi == page.last_render_dpi and seconds["render"] >= 0
    # a page rendered before its turn was asked for is turned there too; a view keeps its own turn
    with open_document(scans["all"], rotate=rotate) as here, open_document(scans["all"], rotate=rotate) as there:
        attach(there, renderer)
        for index in range(len(TURNS)):
            page = here.page(index)
            assert np.array_equal(_pixels(render(there.page(index), 72)[0]), _pixels(page.render(72)))
            assert there.turns[index] == page.turn
            view = there.page(index).turned(90)
            assert np.array_equal(_pixels(renderer.render(view, 72)), _pixels(page.turned(90).render(72)))


def test_an_error_of_the_process_s_side_is_raised_here(scans, renderer):
    with open_document(scans[90], rotate="auto") as document:
        attach(document, renderer)
        page = document.page(0)
        page.index = 3  # a page the document does not have
        with pytest.raises(PageRangeError):
            renderer.render(page, 72)
        page.index = 0
        assert renderer.render(page, 72).size == (page.width, page.height)
    assert not renderer.broken


def test_a_rendering_process_that_stops_costs_one_warning_and_no_page(scans):
    renderer = RenderProcess()
    try:
        with open_document(scans[180], rotate="auto") as document, \
                open_document(scans[180], rotate="auto") as here:
            attach(document, renderer)
            want = here.page(0).render(72)
            renderer.render(document.page(0), 72)
            renderer._process.kill()
            renderer._process.join(tuning.PATIENCE_SECONDS)
            with pytest.warns(HSDWarning, match="rendering process stopped"):
                image, _ = render(document.page(0), 72)
            assert np.array_equal(_pixels(image), _pixels(want))
            assert renderer.broken and renderer_of(document) is None
            with warnings.catch_warnings():
                warnings.simplefilter("error", HSDWarning)  # one warning, not one a page
                assert np.array_equal(_pixels(render(document.page(0), 72)[0]), _pixels(want))
    finally:
        renderer.close()


def test_a_document_of_one_page_never_starts_the_rendering_process(scans):
    """Its one page is needed before the first pass: rendered here, with no process to start."""
    reader = ProcessDrafter("rapidocr:layout=false")
    try:
        with open_document(scans[0], rotate="auto") as document:
            reader.read_in_order(document, [0])
            assert renderer_of(document, 0) is None and reader._renderer is None
    finally:
        reader.close()


def test_a_document_s_first_page_renders_here_and_the_rest_there(scans):
    reader = ProcessDrafter("rapidocr:layout=false")
    try:
        with open_document(scans["all"], rotate="auto") as document:
            reader.read_in_order(document, [2, 0, 1])
            assert renderer_of(document, 2) is None
            assert renderer_of(document, 0) is reader._renderer is renderer_of(document, 1) is not None
    finally:
        reader.close()


def test_without_the_switch_the_decode_s_pages_render_here(scans, monkeypatch):
    monkeypatch.setattr(tuning, "RENDER_PROCESS", False)
    reader = ProcessDrafter("rapidocr:layout=false")
    try:
        with open_document(scans[0], rotate="auto") as document:
            reader.read_in_order(document, [0])
            assert renderer_of(document) is None and reader._renderer is None
    finally:
        reader.close()


def test_a_document_run_beside_a_drafting_process_decides_no_later_turn_in_the_decode_s_process(scans, monkeypatch):
    """Turned scans (whose ink cannot tell their turn: OCR decides) reach the decode with the
    pixels, turns and drafts of converting them here; the decode's process runs no OCR for them
    but the first page's (needed before the first pass, the rendering process not yet up)."""
    from core.draft_ahead import DraftAhead

    drafter = get_drafter("rapidocr:layout=false")
    with open_document(scans["all"], rotate="auto") as document:
        want_turns = [document.page(i).turn for i in range(len(TURNS))]
        want_images = [document.page(i).render(72) for i in range(len(TURNS))]
        want_drafts = [drafter.draft(document.page(i)) for i in range(len(TURNS))]
    assert want_turns == list(TURNS)
    read_here = []
    real_reading = orientation.scan_reading
    monkeypatch.setattr(orientation, "scan_reading", lambda page: read_here.append(page.number) or real_reading(page))
    with open_document(scans["all"], rotate="auto") as document:
        ahead = DraftAhead(document, list(range(len(TURNS))), drafter, 72, ahead=1, beside=True, emit=lambda e: None)
        try:
            pages = [ahead.next() for _ in TURNS]
            drafts = [page.drafts.result() for page in pages]
        finally:
            ahead.stop()
            ahead.join()
        turns = [document.turns[i] for i in range(len(TURNS))]
    assert isinstance(ahead.reader, ProcessDrafter) and ahead.reader._renderer is not None
    assert read_here == [1]  # on the decode's side: no later page's turn read from the ink or by OCR
    assert turns == want_turns
    assert [p.image.size for p in pages] == [w.size for w in want_images]
    assert all(np.array_equal(_pixels(p.image), _pixels(w)) for p, w in zip(pages, want_images))
    assert drafts == want_drafts
