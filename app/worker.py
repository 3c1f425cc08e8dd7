"""The background conversion: a QObject worker that runs the engine in a QThread.

The worker converts one document the way ``hsd convert`` does: both iterate the run of
``core.api.convert_document``, which takes the pages already finished under the same input and
settings from its work folder and converts the others, saving each at once; at the end it writes
the document. So the Markdown the app shows is the bytes the CLI writes.

The run's events arrive in the worker thread and leave as Qt signals (queued into the GUI thread).
``cancel()`` may be called from any thread: it sets a flag that the engine polls between forward
passes (``should_cancel``), so a cancel takes effect within one pass. Errors never escape ``run``:
they become the ``error`` signal and ``finished("failed")``.
"""

from __future__ import annotations

import hashlib
import os
import threading
import traceback
from dataclasses import dataclass, field
from pathlib import Path

from PySide6.QtCore import QObject, Qt, QThread, Signal, Slot

from app.settings import ConversionSettings


@dataclass
class ConversionJob:
    path: Path
    settings: ConversionSettings
    work_dir: Path                 # cache folder holding this document's output and resume files
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


@dataclass
class JobResult:
    status: str                        # "done", "cancelled" or "failed"
    results: list = field(default_factory=list)
    markdown_path: Path | None = None


class ConversionWorker(QObject):
    """Converts one ``ConversionJob``; move to a QThread and connect ``QThread.started`` to ``run``."""

    started = Signal(int)                      # pages in this job
    progress = Signal(int, int, str)           # pages done, pages total, message
    page_started = Signal(int, int, int)       # page (1-based), index in job, total
    regions_drafted = Signal(int, object)      # page, list[Region]
    region_verified = Signal(int, int, object, str)  # page, region index, RegionStats, text
    text_appended = Signal(int, str)           # page, Markdown delta
    page_done = Signal(object)                 # PageResult (markdown links set as the export writes them)
    error = Signal(str)                        # a message for the user
    warning = Signal(str)                      # core degraded something (HSDWarning), the job goes on
    finished = Signal(str)                     # "done", "cancelled" or "failed"

    def __init__(self, job: ConversionJob, engines: EngineCache):
        super().__init__()
        self.job = job
        self.engines = engines
        self._cancel = threading.Event()
        self.outcome = JobResult("failed")
        self._total = 0

    # -- called from any thread -------------------------------------------------------------------

    def cancel(self) -> None:
        self._cancel.set()

    def is_cancelled(self) -> bool:
        return self._cancel.is_set()

    # -- worker thread ----------------------------------------------------------------------------

    @Slot()
    def run(self) -> None:
        from core.errors import CancelledError, HSDError

        status = "failed"
        _running.worker = self
        try:
            with self.engines.lock:
                self._convert()
            status = "done"
        except CancelledError:
            status = "cancelled"
        except HSDError as exc:
            self.error.emit(str(exc))
        except MemoryError:
            self.error.emit("Out of memory. Try a lower DPI, fewer pages or the CPU device.")
        except OSError as exc:
            where = f": {exc.filename}" if exc.filename else ""
            self.error.emit(f"{exc.strerror or exc}{where}")
        except Exception as exc:  # a bug must not take the app down: report it
            traceback.print_exc()
            self.error.emit(f"Unexpected error: {type(exc).__name__}: {exc}")
        finally:
            _running.worker = None
        self.outcome.status = status
        self.finished.emit(status)

    def _convert(self) -> None:
        from core.api import ConversionRequest, convert_document

        job = self.job
        config = job.settings.engine_config()
        request = ConversionRequest(job.path, job.markdown_path, config, pages=job.settings.pages or None,
                                    password=job.password, fresh=job.fresh)
        engine = self.engines.get(config)
        try:
            engine.drafter  # built here, in the worker thread: one clear error instead of one per page
        except ImportError as exc:  # a drafter whose module or dependency is missing in this install
            from core.errors import DrafterUnavailableError

            raise DrafterUnavailableError(f"The {config.drafter!r} drafter is not available here ({exc}). "
                                          "Choose another drafter in Settings.") from None
        with convert_document(request, engine=engine, should_cancel=self.is_cancelled) as run:
            for event in run:
                self._forward(event)
        self.outcome.markdown_path = job.markdown_path

    def _forward(self, event) -> None:
        """The run's events as this worker's signals."""
        from core.events import (DocumentPlanned, ModelLoading, Notice, PageDone, PageKept, PageStarted,
                                 RegionsDrafted, RegionVerified, TextAppended)

        results = self.outcome.results
        if isinstance(event, TextAppended):
            self.text_appended.emit(event.page, event.text)
        elif isinstance(event, RegionVerified):
            self.region_verified.emit(event.page, event.region, event.stats, event.text)
        elif isinstance(event, RegionsDrafted):
            self.regions_drafted.emit(event.page, list(event.regions))
        elif isinstance(event, DocumentPlanned):
            self._total = len(event.pages)
            self.started.emit(self._total)
        elif isinstance(event, ModelLoading):
            self.progress.emit(len(results), self._total, f"Loading model {event.model}…")
        elif isinstance(event, PageStarted):
            n = len(results)
            self.page_started.emit(event.page, n, self._total)
            self.progress.emit(n, self._total, f"Converting page {event.page} ({n + 1} of {self._total})")
        elif isinstance(event, (PageKept, PageDone)):
            n = len(results)
            if isinstance(event, PageKept):
                self.page_started.emit(event.page, n, self._total)
            results.append(event.result)
            self.page_done.emit(event.result)
            self.progress.emit(n + 1, self._total, f"Page {event.page} done ({n + 1} of {self._total})")
        elif isinstance(event, Notice):
            self.warning.emit(event.message)


class _Running:
    """The worker whose job is running, if any. Jobs run one at a time, and a warning may come from
    a thread of the job's own (background drafting), so this is one slot, not per thread."""

    worker: "ConversionWorker | None" = None


_running = _Running()


def relay_warnings() -> None:
    """Send core's ``HSDWarning``s (a drafter step turned off, say) to the running job's worker, as
    its ``warning`` signal; other warnings, and any outside a job, keep Python's handling.
    Installed once per process, by the first worker; idempotent."""
    import warnings

    from core.errors import HSDWarning

    if getattr(warnings.showwarning, "_hsd_relay", False):
        return
    # Python shows a warning once per code location; a new engine (other settings) warns anew.
    warnings.filterwarnings("always", category=HSDWarning)
    default = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None):
        worker = _running.worker
        if issubclass(category, HSDWarning) and worker is not None:
            worker.warning.emit(str(message))
        else:
            default(message, category, filename, lineno, file, line)

    show._hsd_relay = True
    warnings.showwarning = show


def start_worker(worker: ConversionWorker) -> QThread:
    """Run ``worker`` in a new QThread; the thread quits when the worker finishes.

    The caller keeps references to both until ``QThread.finished``."""
    relay_warnings()
    thread = QThread()
    thread.setObjectName(f"convert-{worker.job.path.name}")
    worker.moveToThread(thread)
    thread.started.connect(worker.run)
    worker.finished.connect(thread.quit, Qt.ConnectionType.DirectConnection)  # quit is thread-safe
    thread.start()
    return thread
