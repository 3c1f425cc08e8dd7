"""The window's size and layout: a first size that fits the screen it opens on, and the geometry,
splitter positions and last folder remembered between runs (in the app's QSettings)."""

from __future__ import annotations

from PySide6.QtCore import QByteArray, QSize

PREFERRED = QSize(1400, 860)
MARGIN = 0.92  # leave room for the desktop's panels


def first_size(available: QSize) -> QSize:
    """The preferred size, shrunk to fit ``available`` (the screen's usable area, in logical pixels,
    so a 2560x1600 screen at scale 2 counts as 1280x800)."""
    width = min(PREFERRED.width(), int(available.width() * MARGIN))
    height = min(PREFERRED.height(), int(available.height() * MARGIN))
    return QSize(max(640, width), max(480, height))


def fit_to_screen(window) -> None:
    screen = window.screen()
    if screen is not None:
        window.resize(first_size(screen.availableGeometry().size()))
    else:
        window.resize(PREFERRED)


def save_layout(window, q) -> None:
    q.setValue("window/geometry", window.saveGeometry())
    q.setValue("window/state", window.saveState())
    for name, splitter in window.splitters().items():
        q.setValue(f"window/splitter-{name}", splitter.saveState())
    q.sync()


def restore_layout(window, q) -> bool:
    """Restore what ``save_layout`` kept; False (nothing changed) on a first run."""
    geometry = q.value("window/geometry")
    if not isinstance(geometry, QByteArray) or geometry.isEmpty():
        return False
    window.restoreGeometry(geometry)
    state = q.value("window/state")
    if isinstance(state, QByteArray):
        window.restoreState(state)
    for name, splitter in window.splitters().items():
        value = q.value(f"window/splitter-{name}")
        if isinstance(value, QByteArray):
            splitter.restoreState(value)
    return True


def last_folder(q) -> str:
    return str(q.value("last_folder", "") or "")


def set_last_folder(q, folder: str) -> None:
    q.setValue("last_folder", str(folder))
    q.sync()
