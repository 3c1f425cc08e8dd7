"""Fixtures of the app tests: one tiny model and one engine cache per session, generated PDFs,
isolated QSettings, and a main window set up like a first start."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

ARCH = "hunyuan_vl"
MAX_NEW = 24
DPI = 72


def _patience_ms() -> int:
    from core import tuning

    return int(tuning.PATIENCE_SECONDS * 1000)


#: How long a test waits for real work (a conversion, a thread, a download) to reach the state it
#: checks: generous, so that a busy machine only makes the test slower, never failing.
PATIENCE_MS = _patience_ms()


def make_pdf(path, pages: int = 1):
    """A born-digital PDF with a title and two paragraphs per page (the textlayer drafter's input)."""
    import pymupdf

    doc = pymupdf.open()
    for n in range(pages):
        page = doc.new_page(width=360, height=460)
        page.insert_text((36, 56), f"Results of page {n + 1}", fontsize=18)
        for i in range(3):
            page.insert_text((36, 100 + 16 * i), f"Line {i}: speculative decoding verifies drafts.", fontsize=10)
        page.insert_text((36, 200), "A second paragraph closes the page.", fontsize=10)
    doc.save(str(path))
    doc.close()
    return path


@pytest.fixture(scope="session")
def tiny_model(tiny_target_dir):
    return str(tiny_target_dir(ARCH))


@pytest.fixture(scope="session")
def engines():
    from app.worker import EngineCache

    return EngineCache()


@pytest.fixture
def sample_pdf(tmp_path):
    return make_pdf(tmp_path / "sample.pdf")


@pytest.fixture
def app_settings(tmp_path, tiny_model):
    from PySide6.QtCore import QSettings

    from app.settings import AppSettings, ConversionSettings

    settings = AppSettings(QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat))
    settings.set_conversion(ConversionSettings(model=tiny_model, device="cpu", drafter="textlayer", mode="hsd",
                                               tau=1.0, dpi=DPI, pages="", max_new_tokens=MAX_NEW))
    settings.set_cache_dir(tmp_path / "cache")
    return settings


@pytest.fixture
def blank_settings(tmp_path, monkeypatch):
    """Settings of a first start: no model configured, and the default model not on this computer."""
    from PySide6.QtCore import QSettings

    from app import model_check
    from app.settings import AppSettings

    monkeypatch.setattr(model_check, "cached_hub_folder", lambda hub_id: None)
    settings = AppSettings(QSettings(str(tmp_path / "first.ini"), QSettings.Format.IniFormat))
    settings.set_cache_dir(tmp_path / "cache")
    return settings


def open_window(qtbot, settings, engines=None):
    """A shown main window on ``settings``, closed with the test."""
    from app.main_window import MainWindow

    win = MainWindow(settings, engines=engines)
    qtbot.addWidget(win)
    win.show()
    return win


@pytest.fixture
def window(qtbot, app_settings, engines):
    from app.main_window import MainWindow

    win = MainWindow(app_settings, engines=engines)
    win.confirm_quit = lambda: True  # a modal question would wait forever offscreen
    qtbot.addWidget(win)
    win.resize(1200, 760)
    win.show()
    yield win
    if win.conversion.worker is not None:
        win.conversion.cancel()
        qtbot.waitUntil(lambda: win.conversion.worker is None, timeout=PATIENCE_MS)


def streaming(window) -> bool:
    """The running document has streamed Markdown for some page."""
    doc = window.conversion.running
    return doc is not None and any(r.text for r in doc.pages.values())


def drop_files(widget, paths):
    """Drop local files on ``widget`` as a file manager would."""
    from PySide6.QtCore import QMimeData, QPointF, Qt, QUrl
    from PySide6.QtGui import QDragEnterEvent, QDropEvent
    from PySide6.QtWidgets import QApplication

    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(p)) for p in paths])
    pos = widget.rect().center()
    enter = QDragEnterEvent(QPointF(pos), Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton,
                            Qt.KeyboardModifier.NoModifier)
    QApplication.sendEvent(widget, enter)
    assert enter.isAccepted(), "the window refused the drag"
    drop = QDropEvent(QPointF(pos), Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton,
                      Qt.KeyboardModifier.NoModifier)
    QApplication.sendEvent(widget, drop)
