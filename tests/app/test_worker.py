"""The conversion worker says what happened to its run: held by a pause and going on again, stopped
by a cancel, and how it ended (``RunStatus``), the last thing it says."""

from __future__ import annotations

import threading

from app import worker as worker_module
from app.settings import ConversionSettings
from app.worker import ConversionJob, ConversionWorker, EngineCache, RunStatus
from core import tuning
from core.errors import CancelledError, HSDError

from .conftest import PATIENCE_MS


def _worker(tmp_path) -> ConversionWorker:
    return ConversionWorker(ConversionJob(tmp_path / "a.pdf", ConversionSettings(), tmp_path), EngineCache())


def test_a_paused_run_says_it_is_held_and_that_it_goes_on_when_resumed(qtbot, tmp_path):
    worker = _worker(tmp_path)
    worker.pause()
    answers = []
    check = threading.Thread(target=lambda: answers.append(worker.is_cancelled()))  # the run's check between passes
    with qtbot.waitSignal(worker.paused, timeout=PATIENCE_MS):
        check.start()
    assert worker.held.is_set() and not answers
    with qtbot.waitSignal(worker.resumed, timeout=PATIENCE_MS):
        worker.resume()
    check.join(tuning.PATIENCE_SECONDS)
    assert answers == [False] and not worker.held.is_set()


def test_a_cancelled_run_says_so_then_ends_cancelled(qtbot, tmp_path, monkeypatch):
    def convert(job, engines, emit, should_cancel):
        emit("a page")
        if should_cancel():
            raise CancelledError("cancelled")

    monkeypatch.setattr(worker_module, "convert_with_events", convert)
    worker = _worker(tmp_path)
    said = []
    for name in ("event", "paused", "resumed", "cancelled"):
        getattr(worker, name).connect(lambda *args, name=name: said.append(name))
    worker.finished.connect(lambda status, message: said.append((status, message)))
    worker.cancel()
    worker.run()
    assert said == ["event", "cancelled", (RunStatus.CANCELLED, "")]
    assert said[-1][0] == "cancelled"  # a document's status reads the same


def test_a_run_ends_done_or_failed_with_the_message_for_the_user(qtbot, tmp_path, monkeypatch):
    worker = _worker(tmp_path)
    ended = []
    worker.finished.connect(lambda status, message: ended.append((status, message)))
    monkeypatch.setattr(worker_module, "convert_with_events", lambda *args: None)
    worker.run()

    def refuse(*args):
        raise HSDError("a.pdf: not a PDF")

    monkeypatch.setattr(worker_module, "convert_with_events", refuse)
    worker.run()
    assert ended == [(RunStatus.DONE, ""), (RunStatus.FAILED, "a.pdf: not a PDF")]
