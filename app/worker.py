"""The background conversion: a QObject worker that runs one document in a QThread and forwards the
run's typed events (``core.events``) as they are, on one signal.

The worker converts a document the way ``hsd convert`` does (the pages an earlier run finished under
the same input and settings are taken back from its work folder, the others converted and saved one
at a time, the Markdown written at the end), so the Markdown the app shows is the bytes the CLI
writes. Its ``event`` signal carries each event object, queued into the GUI thread; the window's
conversion controller reads them. ``pause()``, ``resume()`` and ``cancel()`` may be called from any
thread: the run polls them between forward passes, so a pause or a cancel takes effect within one
pass. Errors never escape ``run``: they end it with ``finished("failed", message)``.
"""

from __future__ import annotations

import hashlib
import os
import threading
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from PySide6.QtCore import QObject, Qt, QThread, Signal, Slot

from app.settings import ConversionSettings


@dataclass
class ConversionJob:
    path: Path
    settings: ConversionSettings
    work_dir: Path                 # cache folder holding this document's output and resume files
    page_count: int = 0
    password: str | None = None
    fresh: bool = False               # ignore pages finished by an earlier run

    @property
    def markdown_path(self) -> Path:
        """The work folder's Markdown file, named like the CLI's default output (``NAME.md``)."""
        return self.work_dir / f"{self.path.stem or 'document'}.md"


def document_cache_dir(cache_dir: Path, path: Path) -> Path:
    """One cache folder per input file (by absolute path); DocumentOutput checks content and settings."""
    key = hashlib.sha1(os.fsencode(Path(path).resolve())).hexdigest()[:16]  # bytes: names need not be UTF-8
    return Path(cache_dir) / key


class EngineCache:
    """Keeps the last engine so the model loads once for many documents with the same settings.

    Used only from the worker thread of the running job (jobs run one at a time)."""

    def __init__(self, factory=None):
        self._factory = factory
        self._key = None
        self._engine = None
        self.lock = threading.Lock()

    def get(self, config):
        from core.api import Engine

        key = (config.model, config.device, config.dtype, config.trust_remote_code, config.mode,
               config.tau, config.drafter, config.dpi, config.max_new_tokens)
        if self._engine is None or key != self._key:
            target = None
            if self._engine is not None and self._key[:4] == key[:4]:
                target = self._engine.loaded_target  # same model: reuse the loaded weights
            self._engine = (self._factory or Engine)(config, target=target)
            self._key = key
        return self._engine


class ConversionWorker(QObject):
    """Converts one ``ConversionJob``; move to a QThread and connect ``QThread.started`` to ``run``."""

    event = Signal(object)          # a core.events object, in the run's order
    finished = Signal(str, str)     # "done", "cancelled" or "failed"; a message for the user ("" if none)

    def __init__(self, job: ConversionJob, engines: EngineCache):
        super().__init__()
        self.job = job
        self.engines = engines
        self._cancel = threading.Event()
        self._running = threading.Event()
        self._running.set()

    # -- called from any thread -------------------------------------------------------------------

    def cancel(self) -> None:
        self._cancel.set()
        self._running.set()

    def pause(self) -> None:
        """Hold the run at its next check (between forward passes) until ``resume`` or ``cancel``."""
        self._running.clear()

    def resume(self) -> None:
        self._running.set()

    def is_cancelled(self) -> bool:
        """The run's check between passes: waits here while paused."""
        self._running.wait()
        return self._cancel.is_set()

    # -- worker thread ----------------------------------------------------------------------------

    @Slot()
    def run(self) -> None:
        from core.errors import CancelledError, HSDError

        status, message = "failed", ""
        try:
            with self.engines.lock:
                convert_with_events(self.job, self.engines, load_engine, self.event.emit, self.is_cancelled)
            status = "done"
        except CancelledError:
            status = "cancelled"
        except HSDError as exc:
            message = str(exc)
        except MemoryError:
            message = "Out of memory. Try a lower DPI, fewer pages or the CPU device."
        except OSError as exc:
            where = f": {exc.filename}" if exc.filename else ""
            message = f"{exc.strerror or exc}{where}"
        except Exception as exc:  # a bug must not take the app down: report it
            traceback.print_exc()
            message = f"Unexpected error: {type(exc).__name__}: {exc}"
        self.finished.emit(status, message)


def load_engine(engine):
    """``engine`` with its model and drafter loaded, in the worker thread, so that a missing model or
    drafter is one clear error instead of a failure on every page."""
    engine.target
    try:
        engine.drafter
    except ImportError as exc:  # a drafter whose module or dependency is missing in this install
        from core.errors import DrafterUnavailableError

        raise DrafterUnavailableError(f"The {engine.config.drafter!r} drafter is not available here ({exc}). "
                                      "Choose another drafter in Settings.") from None
    return engine


# -- adapter: the page-callback API of ``core.api.convert_document`` as a stream of events ----------
#
# Everything above and the rest of the app read ``core.events`` only. Until the façade yields a
# document run's events itself, this one function makes them from ``convert_document``'s
# callbacks; when it does, it is replaced by iterating that call.


def convert_with_events(job: ConversionJob, engines: EngineCache, load: Callable, emit: Callable[[object], None],
                        should_cancel: Callable[[], bool]) -> None:
    """Convert ``job``, calling ``emit`` with each ``core.events`` object in the run's order.
    ``load(engine)`` loads an engine's model and drafter (at the first page to convert)."""
    import time
    import warnings

    from core.api import convert_document
    from core.errors import HSDWarning
    from core.events import (DocumentDone, DocumentPlanned, ModelLoaded, ModelLoading, Notice, PageDone,
                             PageDrafting, PageKept, PageStarted)

    config = job.settings.engine_config()
    model = config.model or "default model"
    plan: list[DocumentPlanned] = []
    started: list[int] = []

    def on_start(output, indices) -> None:
        pages = tuple(i + 1 for i in indices)
        kept = tuple(p for p in pages if output.finished(p) is not None)
        plan.append(DocumentPlanned(path=str(job.path), output=str(job.markdown_path), page_count=job.page_count,
                                    pages=pages, kept=kept))
        emit(plan[0])

    def engine_for(_position):
        engine = engines.get(config)
        if engine.loaded_target is not None:
            return load(engine)
        emit(ModelLoading(model))
        t0 = time.monotonic()
        load(engine)
        emit(ModelLoaded(model, time.monotonic() - t0))
        return engine

    def page_started(event) -> None:  # the engine is given one page at a time: number it in the run
        started.append(event.page)
        emit(PageDrafting(page=event.page, drafter=config.drafter))  # its render and draft come first
        emit(PageStarted(page=event.page, index=len(started) - 1, total=len(plan[0].to_convert)))

    # the engine's events pass as they are, but for these two (PageDone follows once the page is saved)
    rewrite = {PageStarted: page_started, PageDone: lambda event: None}

    def on_event(event) -> None:
        rewrite.get(type(event), emit)(event)

    def on_page(result, reused: bool) -> None:
        emit(PageKept(result.page, result) if reused else PageDone(result.page, result))

    with warnings.catch_warnings():  # restores Python's handling when the run ends
        default = warnings.showwarning

        def show(message, category, filename, lineno, file=None, line=None):
            if issubclass(category, HSDWarning):  # jobs run one at a time: a drafter thread's come here too
                emit(Notice(str(message)))
            else:
                default(message, category, filename, lineno, file, line)

        warnings.simplefilter("always", HSDWarning)
        warnings.showwarning = show
        stats = convert_document(config, job.path, job.markdown_path, engine=engine_for,
                                 pages=job.settings.pages or None, password=job.password, fresh=job.fresh,
                                 on_event=on_event, should_cancel=should_cancel, on_start=on_start, on_page=on_page)
    emit(DocumentDone(str(job.markdown_path), stats))


def start_worker(worker: ConversionWorker) -> QThread:
    """Run ``worker`` in a new QThread; the thread quits when the worker finishes.

    The caller keeps references to both until ``QThread.finished``."""
    thread = QThread()
    thread.setObjectName(f"convert-{worker.job.path.name}")
    worker.moveToThread(thread)
    thread.started.connect(worker.run)
    worker.finished.connect(thread.quit, Qt.ConnectionType.DirectConnection)  # quit is thread-safe
    thread.start()
    return thread
