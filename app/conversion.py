"""The conversion controller: the window's queue of documents, converted one at a time in a
background worker, and what the run's events do to the documents' page records.

The controller owns the worker, its thread and the progress tracker. It reads only ``core.events``
objects (one handler per event type) and updates ``DocumentState`` / ``PageRecord``; the window
listens to its signals and redraws what changed. It never touches a widget.
"""

from __future__ import annotations

import time
from pathlib import Path

from PySide6.QtCore import QObject, QTimer, Signal

from app import page_story
from app.document_state import DocumentStatus, PagePhase
from app.model_check import app_message
from app.progress import ProgressTracker
from app.worker import (ConversionJob, ConversionWorker, EngineCache, RunStatus, document_cache_dir,
                        release_thread, start_worker)


_libc = None


def release_freed_memory() -> None:
    """Give back to the system what a finished run or a closed document freed: MuPDF's cache of
    rendered pictures emptied, Python's cycles collected, then glibc's heaps trimmed. A run
    allocates from its worker thread's heap (the model's passes, the rendered pages, the drafts);
    freed, that memory stays in the heap, so without a trim the process grows with each document
    converted."""
    import gc
    import sys

    global _libc
    from core.api import release_render_caches

    release_render_caches()
    gc.collect()
    if not sys.platform.startswith("linux"):
        return
    try:
        if _libc is None:
            import ctypes

            _libc = ctypes.CDLL("libc.so.6")
        _libc.malloc_trim(0)
    except (OSError, AttributeError):
        pass  # not glibc (musl, say): nothing to trim


class ConversionController(QObject):
    page_changed = Signal(object, int)      # document, page: the page's record changed
    text_appended = Signal(object, int)     # document, page: its streamed Markdown grew
    page_started = Signal(object, int)      # document, page: its decode started (the window may follow)
    document_changed = Signal(object)       # document: its state or plan changed
    progress_changed = Signal()             # the tracker's numbers changed (or a second passed)
    message = Signal(str)                   # a status line
    failed = Signal(str, str)               # title, message: a conversion could not run or failed
    running_changed = Signal()              # a job started or ended
    document_finished = Signal(str)         # how a job ended (a ``RunStatus``'s value)

    def __init__(self, documents: list, app_settings, engines: EngineCache | None = None, parent=None):
        super().__init__(parent)
        from core.events import (DocumentDone, DocumentPlanned, ModelLoaded, ModelLoading, Notice, PageDone,
                                 PageDrafting, PageKept, PageSaved, PageStarted, RegionsDrafted, RegionVerified,
                                 TextAppended)

        self.documents = documents
        self.app_settings = app_settings
        self.engines = engines or EngineCache()
        self.running = None
        self.worker: ConversionWorker | None = None
        self.thread = None
        self.queue_paused = False
        self.tracker = ProgressTracker()
        self._progress_line = False
        self._handlers = {
            DocumentPlanned: self._planned, PageKept: self._kept, ModelLoading: self._model_loading,
            ModelLoaded: self._model_loaded, PageDrafting: self._drafting, RegionsDrafted: self._drafted,
            PageStarted: self._started, RegionVerified: self._verified, TextAppended: self._text,
            PageDone: self._done, PageSaved: self._saved, Notice: self._notice, DocumentDone: self._written,
        }
        self._clock = QTimer(self)
        self._clock.setInterval(1000)
        self._clock.timeout.connect(self._tick)

    @property
    def busy(self) -> bool:
        return self.worker is not None

    # -- the queue ------------------------------------------------------------------------------

    def queue(self, doc, fresh: bool = False) -> None:
        if doc is self.running:
            return
        doc.status = DocumentStatus.QUEUED
        doc.fresh = fresh
        self.document_changed.emit(doc)
        self.queue_paused = False
        self.start_next()

    def start_next(self) -> None:
        if self.worker is not None or self.queue_paused:
            return
        doc = next((d for d in self.documents if d.status == DocumentStatus.QUEUED), None)
        if doc is None:
            self.running_changed.emit()
            return
        from dataclasses import replace

        from app.settings import range_for_document
        from core.api import parse_page_range

        settings = self.app_settings.conversion()
        pages, range_note = range_for_document(settings.pages, doc.page_count, doc.name)
        settings = replace(settings, pages=pages)
        try:
            settings.engine_config()
            in_range = [i + 1 for i in parse_page_range(settings.pages or None, doc.page_count)]
        except Exception as exc:  # HSDError, or EngineConfig's ValueError
            doc.status, doc.error = DocumentStatus.FAILED, app_message(str(exc))
            self.document_changed.emit(doc)
            self.failed.emit(f"Cannot convert {doc.name}", doc.error)
            self.document_finished.emit(RunStatus.FAILED)
            self.start_next()
            return
        job = ConversionJob(path=doc.path, settings=settings, password=doc.password,
                            fresh=doc.fresh, work_dir=document_cache_dir(self.app_settings.cache_dir(), doc.path))
        doc.begin_run(in_range if len(in_range) != doc.page_count else None)
        doc.status, doc.settings, doc.fresh = DocumentStatus.CONVERTING, settings, False
        if range_note:
            doc.notices.append(range_note)
        self.running = doc
        self.tracker.start(settings.max_new_tokens)
        worker = ConversionWorker(job, self.engines)
        worker.event.connect(self._event)
        worker.finished.connect(self._finished)
        self.worker = worker
        self.thread = start_worker(worker)
        self._clock.start()
        self.document_changed.emit(doc)
        self.running_changed.emit()
        self.progress_changed.emit()
        if range_note:
            self._say(f"{doc.name}: {range_note}")
        else:
            self._say(f"Starting {doc.name}…", progress=True)

    def cancel(self) -> None:
        if self.worker is not None:
            self.worker.cancel()
            self.queue_paused = True
            self._say("Cancelling…")

    def pause(self) -> None:
        """Hold the running conversion at its next pass (while the user is asked something)."""
        if self.worker is not None:
            self.worker.pause()

    def resume(self) -> None:
        if self.worker is not None:
            self.worker.resume()

    def stop(self, wait_ms: int) -> bool:
        """Cancel and wait up to ``wait_ms`` for the worker to stop; True if it has. Finished pages
        are saved as they finish, so whatever happens after, they are kept."""
        if self.worker is None:
            return True
        self.queue_paused = True
        self.worker.cancel()
        return self.thread is None or self.thread.wait(wait_ms)

    def _say(self, text: str, progress: bool = False) -> None:
        """A status line. ``progress``: it only says where the run is, so a later step of the run
        may replace it (a warning or a page cut at the token limit stays until the next page)."""
        self._progress_line = progress
        self.message.emit(text)

    # -- the run's events -------------------------------------------------------------------------

    def _event(self, event) -> None:
        if self.running is not None:
            self._handlers[type(event)](self.running, event)

    def _planned(self, doc, plan) -> None:
        doc.in_range = plan.pages if len(plan.pages) != doc.page_count else None
        doc.damaged = plan.damaged
        self.tracker.planned(plan.pages, plan.kept)
        self.document_changed.emit(doc)
        self.progress_changed.emit()
        if plan.damaged:
            self._say(f"{doc.name}: {plan.damaged}")

    def _kept(self, doc, event) -> None:
        doc.pages[event.page].finished(event.result, kept=True)
        self.page_changed.emit(doc, event.page)

    def _model_loading(self, doc, event) -> None:
        self.tracker.model_loading()
        self.progress_changed.emit()
        self._say(f"{doc.name}: loading model {event.model}…")

    def _model_loaded(self, doc, event) -> None:
        self.tracker.model_loaded()
        self.progress_changed.emit()
        compiled = f", of which {event.compile_seconds:.1f} s compiling its passes" if event.compile_seconds else ""
        self._say(f"{doc.name}: model loaded in {event.seconds:.1f} s{compiled}", progress=True)

    def _drafting(self, doc, event) -> None:
        """A page's drafter started: the page decoding now, or one ahead of it (while the model
        loads or a page decodes). Only when the run waits on it does the status line name it."""
        doc.pages[event.page].drafting(event.drafter, time.monotonic())
        self.tracker.work()
        self.page_changed.emit(doc, event.page)
        self.progress_changed.emit()
        waits = self.tracker.page is None and page_story.waiting_on(doc).startswith(f"page {event.page}:")
        if self._progress_line and waits and not self.tracker.loading:
            words = page_story.drafting_words(doc.pages[event.page])
            self._say(f"{doc.name}: {words.replace('drafting', f'drafting page {event.page}', 1)}…", progress=True)

    def _drafted(self, doc, event) -> None:
        doc.pages[event.page].drafted(event.regions, event.seconds)
        self.page_changed.emit(doc, event.page)
        self.progress_changed.emit()

    def _started(self, doc, event) -> None:
        for number, record in doc.pages.items():
            # a page still decoding when a later one starts has ended its decode: it waits for its
            # drafter's regions to be saved (the run decodes on meanwhile)
            if number < event.page and record.decoding and record.result is None:
                record.decoded = True
                self.page_changed.emit(doc, number)
        doc.pages[event.page].started()
        self.tracker.page_started(event.page)
        self.page_changed.emit(doc, event.page)
        self.page_started.emit(doc, event.page)
        self.progress_changed.emit()
        self._say(f"{doc.name}: converting page {event.page} ({event.index + 1} of {event.total})", progress=True)

    def _verified(self, doc, event) -> None:
        record = doc.pages[event.page]
        if record.region_stats is not None and 0 <= event.region < len(record.region_stats):
            record.region_stats[event.region] = event.stats
            self.page_changed.emit(doc, event.page)

    def _text(self, doc, event) -> None:
        doc.pages[event.page].text += event.text
        self.tracker.text_appended(event.text)
        self.text_appended.emit(doc, event.page)
        self.progress_changed.emit()

    def _done(self, doc, event) -> None:
        result = event.result
        doc.pages[event.page].finished(result)
        self.tracker.page_done(result)
        self.page_changed.emit(doc, event.page)
        self.progress_changed.emit()
        if result.error:
            self._say(f"{doc.name}: page {result.page} failed: {result.error}")
        elif result.draft_failure:
            self._say(f"{doc.name}: page {result.page}: the drafter failed ({result.draft_failure}); "
                              "decoded without drafts (same text, slower)")
        elif page_story.cut_at_limit(result):
            self._say(f"{doc.name}: page {result.page} was cut at the token limit "
                              "(raise Max tokens per page in Settings)")

    def _saved(self, doc, event) -> None:
        """A page done before its drafter had read it is saved with its regions: its record takes
        the result with them (the overlay already has them, from ``RegionsDrafted``)."""
        record, result = doc.pages[event.page], event.result
        record.result, record.regions, record.region_stats = result, result.regions, result.region_stats
        self.page_changed.emit(doc, event.page)

    def _notice(self, doc, event) -> None:
        """Core degraded something and went on (a drafter step whose package is missing, say): said
        now, and again when the document is done."""
        if event.message not in doc.notices:
            doc.notices.append(event.message)
        where = f"page {event.page}: " if event.page else ""
        self._say(f"{doc.name}: warning: {where}{event.message}")

    def _written(self, doc, event) -> None:
        doc.markdown_path = Path(event.markdown_path)

    def _tick(self) -> None:
        """Once a second: the elapsed and drafting times move on."""
        self.progress_changed.emit()
        doc = self.running
        if doc is not None:
            for number, record in doc.pages.items():
                if record.phase == PagePhase.DRAFTING:
                    self.page_changed.emit(doc, number)

    # -- the end of a run ---------------------------------------------------------------------------

    def _finished(self, status: RunStatus, message: str) -> None:
        doc, thread = self.running, self.thread
        self.running = self.worker = self.thread = None
        self._clock.stop()
        if thread is not None:
            release_thread(thread)
        if doc is not None:
            doc.status = DocumentStatus(status)
            if message:
                doc.error = app_message(message)
            for record in doc.pages.values():
                record.interrupted()
            restored = status == RunStatus.FAILED and doc.restore_previous()
            doc.previous = None
            if doc.results and not restored:
                doc.finished_status = doc.status
            self.document_changed.emit(doc)
            if message:
                self.failed.emit(f"Converting {doc.name} failed", doc.error)
            if restored:
                self._say(f"{doc.name}: converting again failed; the previous result is kept "
                                  f"({page_story.plural(len(doc.results), 'page')}, still exportable)")
            else:
                self._say(page_story.finished_line(doc, doc.status))
        self.running_changed.emit()
        self.document_finished.emit(status)
        release_freed_memory()
        self.start_next()
