"""A model named by hub id, downloaded into the usual Hugging Face cache with a progress dialog.

``download_model`` is the one function that talks to the hub (through huggingface_hub's own API):
it lists the model's files with their sizes, then fetches each one that is not cached, reporting
bytes as they arrive. The hub's cache keeps what an interrupted download wrote, so downloading again
resumes. ``DownloadDialog`` runs it in a thread and shows the size, the speed and the time left,
with Cancel; without a connection it says in one sentence what to do.
"""

from __future__ import annotations

import html
import threading
import time
from enum import StrEnum
from pathlib import Path
from typing import Callable

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QDialog, QHBoxLayout, QLabel, QProgressBar, QPushButton, QVBoxLayout

from core.api import format_duration

#: What a model needs (weights from safetensors only, its configuration, tokenizer and processor
#: files, chat templates); other files of a repository (pictures, other weight formats) stay there.
MODEL_FILES = ["*.json", "*.safetensors", "*.model", "*.txt", "*.tiktoken", "*.jinja"]


class DownloadCancelled(Exception):
    """Raised from a progress report to stop the download (what arrived stays in the cache)."""


def download_model(hub_id: str, progress: Callable[[int, int], None]) -> Path:
    """Download ``hub_id``'s model files into the Hugging Face cache and return its snapshot folder.

    ``progress(done, total)`` (bytes) is called from this thread as bytes arrive, ``done`` counting
    what the cache already held; an exception it raises (``DownloadCancelled``) stops the download.
    Raises what huggingface_hub raises: ``RepositoryNotFoundError``, ``GatedRepoError``, and an
    ``OSError`` when the hub cannot be reached."""
    from huggingface_hub import hf_hub_download, snapshot_download

    files = snapshot_download(hub_id, allow_patterns=MODEL_FILES, dry_run=True)
    total = sum(f.file_size or 0 for f in files)
    done = sum(f.file_size or 0 for f in files if not f.will_download)
    progress(done, total)
    lock = threading.Lock()

    class Bytes:
        """The progress bar interface ``hf_hub_download`` drives, counting into ``done``."""

        def __init__(self, *args, initial: int = 0, total=None, **kwargs):
            self.n, self.total = 0, total
            self.update(initial or 0)

        def update(self, n=1) -> None:
            nonlocal done
            with lock:
                self.n += n or 0
                done += n or 0
            progress(done, total)

        def update_transfer(self, n=1) -> None:  # bytes on the wire (compressed): ``update`` counts the file
            pass

        def __enter__(self):
            return self

        def __exit__(self, *exc) -> None:
            pass

        def close(self, *args, **kwargs) -> None:
            pass

        refresh = set_postfix_str = set_transfer_postfix_str = set_description = set_description_str = close

    for info in files:
        if info.will_download:
            hf_hub_download(hub_id, info.filename, revision=info.commit_hash, tqdm_class=Bytes)
    return Path(snapshot_download(hub_id, allow_patterns=MODEL_FILES, local_files_only=True))


def offline_advice(hub_id: str) -> str:
    """One sentence for a computer that cannot reach the hub."""
    return (f"The Hugging Face hub cannot be reached from this computer: on one that is online run "
            f"`hf download {hub_id}` and copy its ~/.cache/huggingface/hub folder here, or choose the model's "
            f"folder (Settings > Model > Folder…).")


def download_error(hub_id: str, exc: BaseException) -> str:
    """What went wrong, in one sentence, with what to do."""
    try:
        from huggingface_hub.errors import GatedRepoError, RepositoryNotFoundError, RevisionNotFoundError
    except ImportError:
        return f"{hub_id} cannot be downloaded: huggingface_hub is not installed."
    if isinstance(exc, GatedRepoError):
        return (f"{hub_id} is gated: accept its licence on huggingface.co, log in here with `hf auth login`, "
                "then try again.")
    if isinstance(exc, (RepositoryNotFoundError, RevisionNotFoundError)):
        return f"There is no model {hub_id} on the Hugging Face hub (or it is private): check the hub id."
    if isinstance(exc, OSError) and getattr(exc, "errno", None) == 28:
        return f"The disk is full: {hub_id} needs more room in the Hugging Face cache."
    if isinstance(exc, (OSError, ConnectionError, TimeoutError)):
        return offline_advice(hub_id)
    return f"{hub_id} could not be downloaded: {type(exc).__name__}: {exc}"


def format_bytes(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if abs(n) < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} GB"


class DownloadState(StrEnum):
    """Where a model download stands: not started, running, or how it ended."""

    IDLE = "idle"
    DOWNLOADING = "downloading"
    DONE = "done"
    CANCELLED = "cancelled"
    FAILED = "failed"


class DownloadDialog(QDialog):
    """Downloads a hub id with ``download`` (``download_model``'s signature) in a thread, showing its
    size, speed and time left; Cancel stops it (what arrived stays in the cache: downloading again
    resumes). ``downloaded`` carries the model's folder; ``failed`` one sentence."""

    downloaded = Signal(str)
    failed = Signal(str)
    _progress = Signal(int, int)
    _ended = Signal(str, str)       # folder, error ("" each when not)

    def __init__(self, hub_id: str, download=download_model, parent=None, clock=time.monotonic):
        super().__init__(parent)
        self.hub_id = hub_id
        self._download = download
        self._clock = clock
        self._cancel = threading.Event()
        self._first: tuple[float, int] | None = None  # (time, bytes) of the first report: speed is this run's
        self.done_bytes = self.total_bytes = 0
        self.setWindowTitle(f"Downloading {hub_id}")
        self.setMinimumWidth(460)
        self.title = QLabel(f"<b>{html.escape(hub_id)}</b> is downloading into the Hugging Face cache.")
        self.title.setWordWrap(True)
        self.bar = QProgressBar()
        self.bar.setRange(0, 0)
        self.numbers = QLabel("Looking up its files on the hub…")
        self.numbers.setTextFormat(Qt.TextFormat.PlainText)  # errors quote the hub's words
        self.numbers.setWordWrap(True)
        self.numbers.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.button = QPushButton("Cancel")
        self.button.clicked.connect(self.cancel)
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        buttons.addWidget(self.button)
        layout = QVBoxLayout(self)
        layout.addWidget(self.title)
        layout.addWidget(self.bar)
        layout.addWidget(self.numbers)
        layout.addLayout(buttons)
        self._progress.connect(self._show_progress)
        self._ended.connect(self._end)
        self.thread: threading.Thread | None = None
        self.state = DownloadState.IDLE

    def start(self) -> None:
        from app.worker import EmitGate

        self.state = DownloadState.DOWNLOADING
        # The download's thread reaches this dialog only through the gate: a dialog destroyed while
        # downloading (its window closed) shuts it, and the download stops at its next report.
        gate = EmitGate(self)
        self.thread = threading.Thread(target=_download_in_thread, name="model-download", daemon=True,
                                       args=(self.hub_id, self._download, self._cancel, gate, self._progress,
                                             self._ended))
        self.thread.start()
        self.open()

    def reject(self) -> None:  # Escape or the window's close button: stop the download first
        if self.state == DownloadState.DOWNLOADING:
            self.cancel()
        else:
            super().reject()

    def cancel(self) -> None:
        if self.state == DownloadState.DOWNLOADING:
            self._cancel.set()
            self.numbers.setText("Stopping…")
        else:
            self.reject()

    def _show_progress(self, done: int, total: int) -> None:
        now = self._clock()
        if self._first is None:
            self._first = (now, done)
        self.done_bytes, self.total_bytes = done, total
        if total:
            self.bar.setRange(0, 1000)
            self.bar.setValue(int(1000 * done / total))
        self.numbers.setText(self.progress_text(now))

    def progress_text(self, now: float) -> str:
        done, total = format_bytes(self.done_bytes), format_bytes(self.total_bytes)
        parts = [f"{done} of {total}" if self.total_bytes else done]
        t0, d0 = self._first or (now, self.done_bytes)
        speed = (self.done_bytes - d0) / (now - t0) if now > t0 else 0.0
        if speed > 0:
            parts.append(f"{format_bytes(speed)}/s")
            if self.total_bytes:
                parts.append(f"about {format_duration((self.total_bytes - self.done_bytes) / speed)} left")
        return " · ".join(parts)

    def _end(self, folder: str, error: str) -> None:
        self.button.setText("Close")
        if folder:
            self.state = DownloadState.DONE
            self.accept()
            self.downloaded.emit(folder)
        elif error:
            self.state = DownloadState.FAILED
            self.title.setText(f"<b>{html.escape(self.hub_id)}</b> could not be downloaded.")
            self.bar.hide()
            self.numbers.setText(error)
            self.failed.emit(error)
        else:
            self.state = DownloadState.CANCELLED
            kept = f"{format_bytes(self.done_bytes)} are kept in the cache; " if self.done_bytes else ""
            self.numbers.setText(f"Download stopped: {kept}downloading again resumes.")
            self.failed.emit(f"The download of {self.hub_id} was stopped; downloading again resumes.")


def _download_in_thread(hub_id: str, download, cancel: threading.Event, gate, progress, ended) -> None:
    """The download's thread: ``download(hub_id, report)``, its reports and its end sent through
    ``gate`` (never to a destroyed dialog); a cancel or a shut gate stops it at the next report."""

    def report(done: int, total: int) -> None:
        if cancel.is_set() or not gate.emit(progress, done, total):
            raise DownloadCancelled()

    try:
        folder = download(hub_id, report)
    except DownloadCancelled:
        gate.emit(ended, "", "")
    except Exception as exc:  # any failure is a sentence in the dialog, never a traceback
        gate.emit(ended, "", download_error(hub_id, exc))
    else:
        gate.emit(ended, str(folder), "")
