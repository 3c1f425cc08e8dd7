"""Drafting a page on a worker thread while the target decodes it.

OCR takes seconds per scan on a CPU (RapidOCR: about 3 s on two cores), as long as a small model's
whole decode. Waiting for it before the first forward pass adds all of it to the page; running it
beside the decode adds only what the decode cannot use: the target prefills the page image and
decodes on its own (plain greedy steps) until the drafts arrive, then speculates with them. The
output is the same either way (drafts only change how many tokens each pass verifies). An OCR
drafter also tells the job its lines as it reads them (``early_lines``): the decode speculates from
those until the regions arrive.

The drafter thread is the only one touching the page's PDF while it runs (PyMuPDF is not
thread-safe): ``core.page_pipeline.render_and_draft`` renders the page image before it starts the job.
"""

from __future__ import annotations

import threading
import time
from typing import Callable

from core.drafters.base import Drafter, OcrLine, Region, draft_page

#: Drafters whose text is the document's own (a text layer), not a reading of its pixels: the
#: engine needs no crop to confirm what they say (``exact_text``).
EXACT_TEXT_DRAFTERS = frozenset({"textlayer"})


def exact_text(region: Region) -> bool:
    """Whether ``region``'s draft is the document's own text rather than a reading of pixels."""
    return region.source in EXACT_TEXT_DRAFTERS


class DraftJob:
    """One page's ``drafter.draft(page)``, running on its own thread from construction on.

    A drafter crash is recorded in ``error`` and yields no regions (speed is lost, never the page).
    ``seconds``: the drafter's own wall-clock, once done. ``lines``: where the lines the drafter has
    read so far are appended (``OcrLine``; ``early_lines``; default: a list of the job's own);
    ``on_lines``: told them instead, on the drafting thread (it appends them to ``lines`` itself).
    ``meanwhile``: work of the drafting thread done while the page is drafted (``draft_page``);
    ``waiting``: called now and then while a drafter reading elsewhere has not answered (``draft_page``).
    """

    def __init__(self, drafter: Drafter, page, background: bool = True, lines: list[OcrLine] | None = None,
                 on_lines: Callable[[list[OcrLine]], None] | None = None,
                 meanwhile: Callable[[], None] | None = None, waiting: Callable[[], None] | None = None):
        self._meanwhile, self._waiting = meanwhile, waiting
        self._regions: list[Region] = []
        self._lines = lines if lines is not None else []
        self._on_lines = on_lines if on_lines is not None else self._lines.extend
        self.error: str | None = None
        self.seconds = 0.0
        self._done = threading.Event()
        if background:
            self._thread = threading.Thread(target=self._run, args=(drafter, page), name="hsd-draft", daemon=True)
            self._thread.start()
        else:
            self._run(drafter, page)

    @classmethod
    def finished(cls, regions: list[Region], error: str | None = None, seconds: float = 0.0) -> "DraftJob":
        """A job whose regions are already known (drafted elsewhere, or given by the caller);
        ``error`` and ``seconds`` as that drafting left them."""
        job = cls.__new__(cls)
        job._regions, job.error, job.seconds = list(regions), error, seconds
        job._lines = []
        job._done = threading.Event()
        job._done.set()
        return job

    def _run(self, drafter: Drafter, page) -> None:
        meanwhile = self._meanwhile
        t0 = time.perf_counter()
        try:
            if meanwhile is not None and not drafter.drafts_elsewhere:
                meanwhile, run = None, meanwhile
                run()  # before the drafting here: not the drafter's time
                t0 = time.perf_counter()
            self._regions = list(draft_page(drafter, page, self._on_lines, meanwhile, self._waiting))
        except Exception as exc:  # reported with the page; the decode goes on undrafted
            self._regions, self.error = [], f"{type(exc).__name__}: {exc}"
        finally:
            self.seconds = time.perf_counter() - t0
            # the callbacks may hold the caller's page (its image): the job outlives the drafting
            self._on_lines = self._meanwhile = self._waiting = None
            self._done.set()

    def done(self) -> bool:
        return self._done.is_set()

    def early_lines(self) -> list[OcrLine]:
        """The lines the drafter has read so far, in the order it read them (an OCR
        drafter's recogniser: ``core.drafters.line_stream``); the list grows while it runs."""
        return self._lines

    def result(self) -> list[Region]:
        """The regions, waiting for the drafter if it is still running."""
        self._done.wait()
        return self._regions
