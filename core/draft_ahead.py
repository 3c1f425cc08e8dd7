"""Pages rendered and drafted ahead of the decode, on one thread that owns the document.

A scan's drafter (OCR and layout) takes seconds a page; drafting page n+1 while page n decodes
hides that time, and the first page is drafted while the model loads. One thread, started with
the run, renders and drafts the pages to convert in order and hands them to the decode
(``next``). It is the only thread that touches the PDF from then on (PyMuPDF is not
thread-safe): the decode gets pixels and regions, never a page object.

How far ahead (the run's page decoder says: ``PageDecoder.pages_ahead``; the engine's from
``Engine.drafts_beside_decode``, ``--background-drafting``):

* beside (``on``; ``auto`` where the target is on a GPU, whose passes leave the CPU to the
  drafter): up to ``ahead`` pages wait beyond the one decoding, and a page goes to the decode as
  soon as it is rendered; its drafts join the decode when they arrive (the engine decodes without
  drafts until then, and ``PageStats.passes_before_drafts`` says for how many passes). The next
  pages are rendered while the drafter reads this one (once it has told its first lines): where the
  drafter is slower than the decode, it then starts each page the moment it ends the one before,
  not a render later. While a drafter reading in its process has not answered, the pages after
  it are rendered as permits free up (within ``tuning.DRAFTING_ANSWER_POLL_SECONDS``), lines or
  not: the decode never waits for a drafter's answer about an earlier page, and finds its next
  page rendered (a scan page's turn decided) instead of waiting for its render.
* drafter first (``off``; ``auto`` on a CPU, where drafter and decode would share the same cores):
  the first page is drafted while the model loads, every later one when the decode asks for it,
  and a page reaches the decode with its drafts done; nothing drafts while a page decodes.

The drafter reads the pages in a process of its own where it can (``core.drafters.process``):
the decode's thread then has the interpreter lock and a core whenever a pass ends. Beside it, the
pages this thread hands the decode are rendered, and scan pages' turns decided, in a rendering
process (``core.drafters.render_process``, ``tuning.RENDER_PROCESS``): PyMuPDF holds the lock
while it renders and a turn's ink profile or OCR holds it most of the time, so on this thread they
took it from the decode between passes and held this thread from the drafter's next request. The process is
sent a page before this thread renders it for the decode (``draft_page``'s ``meanwhile``), so its
first lines come a render sooner. It is told the order of the pages (``read_in_order``): while its
OCR reads one scan page's lines, it renders the next and runs its detector
(``core.drafters.ocr_ahead``), so each page after the first starts with its recognition. ``stop``
stops that look-ahead too.

Text is read only where a decode can still use it. Where the decode is faster than the drafter it
runs up to ``beyond_drafter`` pages ahead, and pages whose decode has ended wait for their regions
(the overlay, the figures; the document ends when the last page's are saved). A page whose decode
ended before the drafter came to it (``PendingDrafts.decode_ended``, told by ``core.run.PageSaver``)
is asked only for its layout (``core.drafters.process.LayoutOnly``: an OCR drafter's render,
detector and layout model, not its recogniser; regions with empty text and ``extra["unread"]``),
and the drafter catches up with the decode. A page whose decode ends while the drafter reads it
stops being read after the chunk of lines it reads (``stop_reading`` of a drafter reading in its
process, told the moment the decode ends on the thread that ends it, ``_Drafts``, not when this
thread next looks up; an OCR drafter reading on this thread is given the page's check itself,
``stop_when``: the lines read are kept, the rest of the page is layout only, a page with a figure
reads only the lines its figures need; ``core.drafters.rapidocr``): the pages after it get their
drafts sooner, and the document's end waits for no text its decode could not use.

Memory: at most ``ahead`` rendered pages wait, besides the one decoding (``tuning.DRAFT_AHEAD_PAGES``),
and the decode is handed no page more than ``beyond_drafter`` beyond the one the drafter reads
(``tuning.DECODE_AHEAD_OF_DRAFTER_PAGES``; its decoded pages wait for their regions with their
images: ``core.run.PageSaver``). That bound is for memory alone, and wide: where the drafter is
slower than the decode, waiting for it would only delay pages that decode without drafts either way,
since the drafter reads the pages in order.
Events (``PageDrafting``, ``RegionsDrafted``, ``Notice``) go out through ``emit`` from this thread;
a page's regions are announced before the decode can see them.
"""

from __future__ import annotations

import queue
import threading
from collections import deque
from typing import Callable

from core import tuning
from core.drafters.background import DraftJob
from core.drafters.ocr_ahead import stoppable_reader_of
from core.drafters.process import LayoutOnly, reader_for
from core.errors import CancelledError
from core.events import Notice, PageDrafting, RegionsDrafted
from core.notices import warnings_to
from core.page_pipeline import DraftedPage, PendingDrafts, drafter_name, page_error, render
from core.results import page_seconds


class _Drafts(PendingDrafts):
    """A page's ``PendingDrafts`` that tells the drafter reading it elsewhere to stop
    (``stop_reading``, set with ``stop_with`` while its request is out) the moment its decode ends,
    on the thread that ends it. The drafting thread looks up only between the drafter's answers and
    its own renders ahead: on two busy cores its stop came 0.3-1.1 s late on 5 of 16 stopped pages
    of the generated scan documents, and for as long the drafter read lines no decode could use
    while every page after it, the document's end included, waited."""

    def __init__(self):
        super().__init__()
        self._stop_lock = threading.Lock()
        self._stop: Callable[[], None] | None = None

    def stop_with(self, stop: Callable[[], None] | None) -> None:
        """``stop()`` is what ending the decode tells from now on (None: nothing); once this
        returns, a stop told before it has returned too (a stop is for this page's request alone)."""
        with self._stop_lock:
            self._stop = stop

    def end_decode(self) -> None:
        super().end_decode()
        with self._stop_lock:
            if self._stop is not None:
                self._stop()


class DraftAhead:
    """Renders and drafts pages ``indices`` (0-based, in order) of ``document`` with ``drafter`` at
    ``dpi`` on a thread of its own (module docstring). ``next()`` gives them in order."""

    def __init__(self, document, indices: list[int], drafter, dpi: int, *, ahead: int, beside: bool,
                 emit: Callable[[object], None], beyond_drafter: int | None = None):
        self.document, self.indices, self.drafter, self.dpi = document, list(indices), drafter, dpi
        self.beside, self.emit = beside, emit
        self.ahead = max(0, ahead)
        if beyond_drafter is None:
            beyond_drafter = tuning.DECODE_AHEAD_OF_DRAFTER_PAGES
        self.beyond_drafter = max(self.ahead, beyond_drafter)
        self.reader = reader_for(drafter)  # the drafter, or its drafting process (core.drafters.process)
        self._in_order = callable(getattr(self.reader, "read_in_order", None))
        if self._in_order:  # the process prepares each page while it reads the one before
            self.reader.read_in_order(document, self.indices)
        # A permit per page that may be prepared: the first page and ``ahead`` more at once; one
        # more each time the decode asks for its next page.
        self._permits = threading.Semaphore(1 + max(0, ahead))
        self._ready: queue.Queue = queue.Queue()
        self._stopped = threading.Event()
        self._decode_waits = threading.Event()  # the decode asks for its next page and has none
        self._asked = 0
        # the drafting thread's: pages rendered ahead of their drafting, in order, each with its
        # permit: (page, or None where it failed; its DraftedPage, or None where it failed first)
        self._ahead: deque = deque()
        self._rendered_to = 0  # the pages at positions below this are rendered (or failed)
        self._drafting_at = 0  # the position of the page the drafter reads
        self._thread = threading.Thread(target=self._run, name="hsd-draft-ahead", daemon=True)
        self._thread.start()

    # -- the decode's side ------------------------------------------------------------------------

    def next(self) -> DraftedPage:
        """The next page, waiting until it is rendered (beside) or drafted (drafter first).
        Raises ``CancelledError`` once ``stop`` was called."""
        if self._asked:
            self._permits.release()  # the decode is free: one more page may be prepared
        self._asked += 1
        self._decode_waits.set()
        try:
            while True:
                try:
                    item = self._ready.get(timeout=tuning.DRAFT_AHEAD_WAKE_SECONDS)
                except queue.Empty:
                    if self._stopped.is_set():
                        raise CancelledError("cancelled") from None
                    continue
                if isinstance(item, BaseException):
                    raise item
                return item
        finally:
            self._decode_waits.clear()

    def stop(self) -> None:
        """Prepare no further page (the one being drafted is finished first: see ``join``; the
        next page is no longer prepared beside it)."""
        self._stopped.set()
        self._permits.release()
        self._stop_ahead()

    def _stop_ahead(self) -> None:
        if self._in_order:
            self.reader.stop_ahead(self.document)

    def join(self) -> None:
        """Wait until the thread has let go of the document."""
        self._thread.join()

    # -- the drafting thread ----------------------------------------------------------------------

    def _run(self) -> None:
        try:
            for position, index in enumerate(self.indices):
                if position >= self._rendered_to:
                    self._permits.acquire()
                if self._stopped.is_set():
                    return
                with warnings_to(lambda message, page=index + 1: self.emit(Notice(message, page=page))):
                    self._drafting_at = position
                    if position < self._rendered_to:
                        page, drafted = self._ahead.popleft()
                    else:
                        self._rendered_to = position + 1
                        page, drafted = self._page(index), None
                    if page is not None:
                        self._draft(page, drafted)
        except BaseException as exc:  # a bug here must not leave the decode waiting for ever
            self._ready.put(exc)
        finally:
            self._stop_ahead()
            for page, drafted in self._ahead:  # rendered, then the run stopped
                if page is not None:
                    drafted.drafts.deliver(DraftJob.finished([], error="drafting did not run"))

    def _render_ahead(self) -> None:
        """Beside the decode, render the next page not rendered yet where a permit is free and it
        is at most ``beyond_drafter`` pages beyond the one the drafter reads: the decode takes it at
        once, and the drafter finds it rendered. (A decoded page waits for its regions with its
        image, for its figures: the bound keeps those pages a known few however slow the drafter.)"""
        position = self._rendered_to
        if (not self.beside or position >= len(self.indices)
                or position > self._drafting_at + self.beyond_drafter
                or self._stopped.is_set() or not self._permits.acquire(blocking=False)):
            return
        self._rendered_to = position + 1
        index = self.indices[position]
        with warnings_to(lambda message: self.emit(Notice(message, page=index + 1))):
            page = self._page(index)
            drafted = self._render(page, _Drafts()) if page is not None else None
        self._ahead.append((page if drafted is not None and drafted.error is None else None, drafted))

    def _failed(self, number: int, exc: Exception) -> DraftedPage:
        """Page ``number`` could not be loaded or rendered: handed on as failed (the others go on)."""
        failed = DraftedPage(number, 0.0, 0.0, None, DraftJob.finished([]), page_seconds(), error=page_error(exc))
        self._ready.put(failed)
        return failed

    def _page(self, index: int):
        try:
            return self.document.page(index)
        except Exception as exc:
            self._failed(index + 1, exc)
            return None

    def _render(self, page, pending: PendingDrafts) -> DraftedPage:
        """``page`` rendered for the decode, its drafts to come in ``pending``; handed to the decode
        at once where it decodes beside the drafter."""
        number = page.index + 1
        try:
            image, seconds = render(page, self.dpi)
        except Exception as exc:
            return self._failed(number, exc)
        drafted = DraftedPage(number, page.width, page.height, image, pending, seconds)
        if self.beside:
            self._ready.put(drafted)  # the decode may start; the drafts join it when they arrive
        return drafted

    def _draft(self, page, drafted: DraftedPage | None) -> None:
        """Draft ``page`` and hand it to the decode, rendering it (where ``drafted`` is None) while
        the drafter already reads it in its process (``draft_page``'s ``meanwhile``): the first
        lines come a render sooner. Beside the decode, the pages after it are rendered while the
        drafter reads it, where permits are free: one each time the drafter tells lines (this
        thread would only wait for the drafter; the decode, waiting for this page's regions, then
        finds the next page rendered, and the drafter starts it at once), and, while a drafter
        reading elsewhere has not answered, at each look-up (``waiting``), lines or not: the decode
        finds its next pages rendered when it asks, instead of waiting for a render (and for a
        scan page's turn, which takes OCR where the ink cannot tell: 0.6-1.6 s on two cores), and
        never waits for a drafter's answer about an earlier page."""
        pending = drafted.drafts if drafted is not None else _Drafts()
        number = page.index + 1

        def render_for_decode():
            nonlocal drafted
            if drafted is None:
                drafted = self._render(page, pending)

        stop_reading = getattr(self.reader, "stop_reading", None)
        stop_told = False

        def stop_if_decoded():
            nonlocal stop_told
            if not stop_told and stop_reading is not None and pending.decode_ended():
                stop_told = True
                stop_reading()  # its text could save no pass: the drafter goes on to the next page

        def told(lines):
            pending.lines.extend(lines)  # first: the decode may speculate from them during the render
            stop_if_decoded()  # before a render ahead, which takes a while
            self._render_ahead()

        def waiting():
            stop_if_decoded()
            self._render_ahead()

        job = DraftJob.finished([], error="drafting did not run")
        reading_here = None  # an OCR drafter reading on this thread, given the stop check itself
        stop_at_end = None  # the page's drafts, while its decode's end stops its reading elsewhere
        try:
            self.emit(PageDrafting(page=number, drafter=drafter_name(self.drafter, page)))
            # its decode has ended (``PendingDrafts.end_decode``): its text could save no pass
            reader = LayoutOnly(self.reader) if pending.decode_ended() else self.reader
            if stop_reading is not None and reader is self.reader and isinstance(pending, _Drafts):
                stop_at_end = pending  # the decode's end stops the reading at once (``_Drafts``);
                pending.stop_with(stop_reading)  # the look-ups below tell it where that came too soon
            if stop_reading is None and reader is self.reader:
                reading_here = stoppable_reader_of(self.reader, page)
                if reading_here is not None:
                    reading_here.stop_when(pending.decode_ended)
            # a crash is recorded, not raised; the lines it reads reach the decode as it reads them
            job = DraftJob(reader, page, background=False, lines=pending.lines, on_lines=told,
                           meanwhile=render_for_decode, waiting=waiting)
            render_for_decode()  # where the drafter failed before it ran ``meanwhile``
            if drafted.error is None:
                drafted.seconds["draft"] = job.seconds
                self.emit(RegionsDrafted(page=number, regions=job.result(), seconds=job.seconds))
        finally:
            if stop_at_end is not None:
                stop_at_end.stop_with(None)  # before the next page's request: a stop is this page's
            if reading_here is not None:
                reading_here.stop_when(None)
            render_for_decode()
            pending.deliver(job)  # never leave the decode waiting for drafts
        if not self.beside and drafted.error is None:
            self._ready.put(drafted)

