"""The background conversion: a QObject worker that runs one document in a QThread and forwards the
run's typed events (``core.events``) as they are, on one signal.

The worker converts a document the way ``hsd convert`` does (the pages an earlier run finished under
the same input and settings are taken back from its work folder, the others converted and saved one
at a time, the Markdown written at the end), so the Markdown the app shows is the bytes the CLI
writes. Its ``event`` signal carries each event object, queued into the GUI thread; the window's
conversion controller reads them. ``pause()``, ``resume()`` and ``cancel()`` may be called from any
thread: the run polls them between forward passes, so a pause or a cancel takes effect within one
pass, and the worker says when it did (``paused``, ``resumed``, ``cancelled``). Errors never escape
``run``: they end it with ``finished(RunStatus.FAILED, message)``.
"""

from __future__ import annotations

import hashlib
import os
import threading
import traceback
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Callable

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

        key = (config.model, config.device, config.dtype, config.trust_remote_code, config.max_gpu_memory,
               config.mode, config.tau, config.drafter, config.dpi, config.max_new_tokens)
        if self._engine is None or key != self._key:
            target = None
            if self._engine is not None and self._key[:5] == key[:5]:
                target = self._engine.loaded_target  # same model: reuse the loaded weights
            self._engine = (self._factory or Engine)(config, target=target)
            self._key = key
        return self._engine


class RunStatus(StrEnum):
    """How a conversion ended (equal to its value: a document's status reads the same)."""

    DONE = "done"
    CANCELLED = "cancelled"
    FAILED = "failed"


class ConversionWorker(QObject):
    """Converts one ``ConversionJob``, once; move to a QThread and connect ``QThread.started`` to ``run``.

    The signals, emitted from the worker's thread: ``event`` each ``core.events`` object in the
    run's order; ``paused`` when a pause holds the run (every event before it emitted) and
    ``resumed`` when it goes on; ``cancelled`` when a cancel has stopped the run, right before
    ``finished`` (a ``RunStatus`` and a message for the user, "" if none), the last signal."""

    event = Signal(object)
    paused = Signal()
    resumed = Signal()
    cancelled = Signal()
    finished = Signal(object, str)

    def __init__(self, job: ConversionJob, engines: EngineCache):
        super().__init__()
        self.job = job
        self.engines = engines
        self._cancel = threading.Event()
        self._running = threading.Event()
        self._running.set()
        self.held = threading.Event()   # set while the run waits on a pause (every event before it sent)

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
        if not self._running.is_set():
            self.held.set()
            self.paused.emit()
            self._running.wait()
            self.held.clear()
            self.resumed.emit()
        return self._cancel.is_set()

    # -- worker thread ----------------------------------------------------------------------------

    @Slot()
    def run(self) -> None:
        from core.errors import CancelledError, HSDError

        status, message = RunStatus.FAILED, ""
        try:
            with self.engines.lock:
                convert_with_events(self.job, self.engines, self.event.emit, self.is_cancelled)
            status = RunStatus.DONE
        except CancelledError:
            status = RunStatus.CANCELLED
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
        if status is RunStatus.CANCELLED:
            self.cancelled.emit()
        self.finished.emit(status, message)


def load_engine(engine):
    """``engine`` with its drafter built, in the worker thread, so that a drafter missing from this
    install is one clear error instead of a failure on every page (the run loads the model itself,
    with ``ModelLoading`` / ``ModelLoaded`` events around it)."""
    try:
        engine.drafter
    except ImportError as exc:  # a drafter whose module or dependency is missing in this install
        from core.errors import DrafterUnavailableError

        raise DrafterUnavailableError(f"The {engine.config.drafter!r} drafter is not available here ({exc}). "
                                      "Choose another drafter in Settings.") from None
    return engine


def convert_with_events(job: ConversionJob, engines: EngineCache, emit: Callable[[object], None],
                        should_cancel: Callable[[], bool]) -> None:
    """Convert ``job`` through the document run of ``core.api.convert_document``, calling ``emit``
    with each of its ``core.events`` objects, in order and as they are."""
    from core.api import ConversionRequest, convert_document

    config = job.settings.engine_config()
    request = ConversionRequest(job.path, job.markdown_path, config, pages=job.settings.pages or None,
                                password=job.password, fresh=job.fresh)
    engine = load_engine(engines.get(config))
    with convert_document(request, engine=engine, should_cancel=should_cancel) as run:
        for event in run:
            emit(event)


class _Probe(QObject):
    ping = Signal()


def keep_bools_alive() -> bool:
    """Make ``True`` and ``False`` outlive any number of signal emits, where PySide6 needs it.

    PySide6 6.12.0's ``SignalInstance.emit`` returns ``True`` without a reference of its own: each
    emit from Python takes one of True's references away, and after as many emits as the process
    holds references to True (about 17,000 in the app) Python frees True and aborts ("Fatal Python
    error: bool_dealloc"), in the middle of a long conversion or a long run of tests. Where an emit
    is seen to do that, True and False get a count of references no run can use up (as Python 3.12
    and later give them by design). Returns whether it was needed."""
    import sys

    if sys.version_info >= (3, 12) or hasattr(sys, "gettotalrefcount"):
        return False  # immortal there (a lost reference changes nothing); a debug build's layout differs
    if sys.getrefcount(True) > 1 << 39:
        return True  # done already
    probe = _Probe()
    before = sys.getrefcount(True)
    for _ in range(64):
        probe.ping.emit()
    if before - sys.getrefcount(True) < 32:
        return False
    import ctypes

    for value in (True, False):
        ctypes.c_ssize_t.from_address(id(value)).value += 1 << 40  # ob_refcnt: the object's first field
    return True


class EmitGate:
    """Lets a Python thread emit the signals of a QObject that lives in the GUI thread, but never
    while or after Qt destroys that object.

    A signal emitted from another thread while the GUI thread deletes its sender (a window closed
    with its children) corrupts memory: the process dies later, somewhere else. ``emit`` runs under
    a lock, and the gate shuts under the same lock when the owner is destroyed (``destroyed`` is
    emitted in the deleting thread before the owner's signals go away) or when ``shut`` is called
    (the owner closing): an emit under way ends first, none starts after."""

    def __init__(self, owner: QObject):
        self._lock = threading.Lock()
        self.open = True
        owner.destroyed.connect(self.shut, Qt.ConnectionType.DirectConnection)

    def shut(self, *_destroyed) -> None:
        with self._lock:
            self.open = False

    def emit(self, signal, *args) -> bool:
        """``signal.emit(*args)`` if the gate is open; False (nothing emitted) once it is shut."""
        with self._lock:
            if not self.open:
                return False
            signal.emit(*args)
            return True


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


#: Worker threads let go of while still ending (``release_thread``), kept until they have ended.
_ending_threads: list = []


def release_thread(thread: QThread) -> None:
    """Let go of a worker's thread once its worker has finished. Its thread still has to return
    from the worker and stop; a QThread destroyed before that aborts the process, so one that has
    not ended within a moment (a busy machine) is kept here until it has."""
    thread.quit()
    if not thread.wait(1000):
        _ending_threads.append(thread)
    _ending_threads[:] = [t for t in _ending_threads if not t.isFinished()]
