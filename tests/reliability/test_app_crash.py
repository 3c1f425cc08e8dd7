"""The app must survive a click on the page followed by a page change.

Clicking the page outside a region and then pressing PgDown / PgUp or clicking another thumbnail
once killed the process (a segfault in QtWidgets while the page view cleared its scene). A crash
cannot fail a test from inside the process it kills, so the scenario runs as a pytest-qt test in a
child pytest, and the test here fails on the child's exit status.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from core.drafters.base import DrafterBase

pytest.importorskip("PySide6")
pytest.importorskip("pytestqt")

CHILD = "HSD_APP_CRASH_CHILD"
ROOT = Path(__file__).resolve().parents[2]


def test_click_on_the_page_then_change_page_does_not_crash(tmp_path):
    env = dict(os.environ, **{CHILD: "1", "QT_QPA_PLATFORM": "offscreen", "PYTHONFAULTHANDLER": "1"})
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    child = subprocess.run(
        [sys.executable, "-m", "pytest", "-x", "-o", "addopts=", "-q", "-p", "no:cacheprovider", "--basetemp", str(tmp_path / "t"),
         f"{Path(__file__).resolve()}::test_click_then_page_keys_and_thumbnail_in_process"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    output = child.stdout + child.stderr
    assert child.returncode == 0, f"the app died or failed (exit {child.returncode}):\n{output[-4000:]}"
    assert "1 passed" in output, output[-4000:]


@pytest.mark.skipif(not os.environ.get(CHILD), reason="runs in a child process (a crash would kill pytest)")
def test_click_then_page_keys_and_thumbnail_in_process(qtbot, tmp_path):
    from PySide6.QtCore import QPoint, QSettings, Qt
    from PySide6.QtTest import QTest

    from app.main_window import MainWindow
    from app.settings import AppSettings
    from tests.app.conftest import make_pdf

    settings = AppSettings(QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat))
    settings.set_cache_dir(tmp_path / "cache")
    window = MainWindow(settings)
    qtbot.addWidget(window)
    window.resize(1200, 760)
    window.show()
    qtbot.waitExposed(window)
    window.add_files([make_pdf(tmp_path / "three.pdf", pages=3)], convert=False)
    assert window.current_page == 1
    view = window.page_view
    page_rect = view.mapFromScene(view.page_item.sceneBoundingRect()).boundingRect()
    # the page's bottom margin: on the page, outside every region the drafter finds
    outside = QPoint(page_rect.center().x(), page_rect.bottom() - 8)
    assert not any(r.sceneBoundingRect().contains(view.mapToScene(outside)) for r in view.region_items)

    def click_page():
        QTest.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=outside)
        qtbot.wait(20)

    click_page()
    QTest.keyClick(window, Qt.Key.Key_PageDown)
    qtbot.waitUntil(lambda: window.current_page == 2)
    click_page()
    QTest.keyClick(window, Qt.Key.Key_PageUp)
    qtbot.waitUntil(lambda: window.current_page == 1)
    click_page()
    thumb = window.thumbs.visualItemRect(window.thumbs.item(2)).center()
    QTest.mouseClick(window.thumbs.viewport(), Qt.MouseButton.LeftButton, pos=thumb)
    qtbot.waitUntil(lambda: window.current_page == 3)
    click_page()
    window.step_page(-1)
    assert window.current_page == 2 and window.page_view.page_item is not None


@pytest.mark.parametrize("end", ["closed", "deleted"])
def test_a_window_that_ends_while_a_preview_drafts_gets_nothing_from_the_preview_thread(qtbot, tmp_path, monkeypatch,
                                                                                         end):
    """The preview drafter's thread outlived its window and emitted into it once Qt had deleted it
    (a use after free: a segfault later, anywhere). Closed or deleted mid-draft, the window hears
    nothing from it again and the thread ends."""
    import threading

    from PySide6.QtCore import QEvent, QSettings
    from PySide6.QtWidgets import QApplication

    import core.api
    from app.main_window import MainWindow
    from app.settings import AppSettings
    from core import tuning
    from tests.app.conftest import make_pdf

    drafting, release = threading.Event(), threading.Event()

    class HeldDrafter(DrafterBase):  # drafts a page only once the test has ended the window
        def draft(self, page):
            drafting.set()
            release.wait(tuning.PATIENCE_SECONDS)
            return []

    monkeypatch.setattr(core.api, "get_drafter", lambda name: HeldDrafter())
    raised = []
    monkeypatch.setattr(threading, "excepthook", lambda args: raised.append(args.exc_value))
    settings = AppSettings(QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat))
    settings.set_cache_dir(tmp_path / "cache")
    window = MainWindow(settings)
    window.show()
    heard = []
    window.previewer.drafted.connect(lambda *args: heard.append(args))
    window.add_files([make_pdf(tmp_path / "one.pdf")], convert=False)
    assert drafting.wait(tuning.PATIENCE_SECONDS), "the preview never started"
    thread = window.previewer._thread
    window.close()
    if end == "deleted":
        window.deleteLater()
        QApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
    release.set()
    thread.join(tuning.PATIENCE_SECONDS)
    qtbot.wait(50)  # a queued emit would be delivered here
    assert not thread.is_alive() and not raised and not heard


def test_a_download_dialog_deleted_mid_download_stops_the_download_and_hears_nothing(qtbot, monkeypatch):
    """The download's thread reported into its dialog after the dialog was deleted (its window
    closed): now the download stops at its next report, and nothing reaches the deleted dialog."""
    import threading

    from PySide6.QtCore import QEvent
    from PySide6.QtWidgets import QApplication

    from app.model_download import DownloadDialog
    from core import tuning

    reporting, reports_after = threading.Event(), []
    deleted = threading.Event()

    def endless_download(hub_id, progress):
        while True:
            progress(1, 10)
            reporting.set()
            if deleted.is_set():
                reports_after.append(1)
            threading.Event().wait(0.01)

    raised = []
    monkeypatch.setattr(threading, "excepthook", lambda args: raised.append(args.exc_value))
    dialog = DownloadDialog("org/model", endless_download)
    dialog.start()
    assert reporting.wait(tuning.PATIENCE_SECONDS)
    thread = dialog.thread
    dialog.deleteLater()
    QApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
    deleted.set()
    thread.join(tuning.PATIENCE_SECONDS)
    assert not thread.is_alive() and not raised and len(reports_after) <= 1


def test_a_hundred_thousand_signals_emitted_from_python_do_not_abort_the_app():
    """Each emit from Python took one of True's references away in PySide6 6.12.0: after about as
    many emits as the app holds references to True (17,000), Python freed True and aborted. A long
    conversion emits that many; the app's process lives through five times as many."""
    code = """
from PySide6.QtCore import QObject, Signal

import app  # noqa: F401 (the app's start)


class Source(QObject):
    event = Signal(object)


source = Source()
source.event.connect(lambda event: None)
for n in range(100_000):
    source.event.emit(n)
print("alive")
"""
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", PYTHONFAULTHANDLER="1")
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    from core import tuning

    child = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                           timeout=tuning.PATIENCE_SECONDS)
    assert child.returncode == 0 and child.stdout.strip() == "alive", (child.returncode, child.stderr[-3000:])


def test_a_worker_thread_let_go_of_before_it_has_ended_is_kept_until_it_has(qtbot):
    """The window let go of a finished worker's QThread after waiting 5 s for it to end; on a busy
    machine it could still be running, and a QThread destroyed while running aborts the process."""
    import threading

    from PySide6.QtCore import QThread

    from app import worker
    from core import tuning

    release = threading.Event()

    class Ending(QThread):  # a thread that has not ended yet when it is let go of
        def run(self):
            release.wait(tuning.PATIENCE_SECONDS)

    thread = Ending()
    thread.start()
    worker.release_thread(thread)
    assert thread in worker._ending_threads
    del thread  # nothing of the caller's holds it any more
    release.set()
    assert worker._ending_threads[-1].wait(int(tuning.PATIENCE_SECONDS * 1000))
    done = Ending()
    done.start()
    worker.release_thread(done)
    assert not worker._ending_threads  # ended ones are let go of
