"""Moving around: go to page, fit width, the zoom shown in per cent, Help > Keyboard shortcuts and
About (versions, model, licence)."""

from __future__ import annotations

import html
import platform

from PySide6.QtWidgets import QDialog, QDialogButtonBox, QInputDialog, QLabel, QVBoxLayout, QWidget

LICENCE = "AGPL-3.0-or-later"


def zoom_percent(view) -> int:
    """The page's zoom as people read it: 100 % is the printed size on this screen."""
    actual = view.logicalDpiX() / 72.0 if view.logicalDpiX() else 96 / 72.0
    return round(view.zoom / actual * 100)


def ask_page(parent: QWidget, current: int, count: int) -> int | None:
    page, ok = QInputDialog.getInt(parent, "Go to page", f"Page (1–{count}):", current, 1, count)
    return page if ok else None


def shortcut_rows(actions) -> list[tuple[str, str]]:
    rows = []
    for action in actions:
        keys = ", ".join(s.toString() for s in action.shortcuts() if not s.isEmpty())
        if keys:
            rows.append((action.text().replace("&", "").rstrip("…"), keys))
    return rows


def shortcuts_html(actions) -> str:
    rows = "".join(f"<tr><td>{html.escape(name)}</td><td>&nbsp;&nbsp;<b>{html.escape(keys)}</b></td></tr>"
                   for name, keys in shortcut_rows(actions))
    extra = ("<tr><td>Zoom with the wheel</td><td>&nbsp;&nbsp;<b>Ctrl + wheel</b></td></tr>"
             "<tr><td>Inspect a region</td><td>&nbsp;&nbsp;<b>click it on the page</b></td></tr>"
             "<tr><td>Bring a region's Markdown into view</td><td>&nbsp;&nbsp;<b>scroll the page</b></td></tr>"
             "<tr><td>Show the region of the Markdown in view</td><td>&nbsp;&nbsp;<b>scroll the Markdown</b></td></tr>")
    return f"<table>{rows}{extra}</table>"


def versions() -> dict[str, str]:
    import PySide6
    from PySide6.QtCore import qVersion

    found = {"HSD Studio": _version("hsd-studio"), "Python": platform.python_version(),
             "Qt": qVersion(), "PySide6": PySide6.__version__}
    for name in ("torch", "transformers", "pymupdf"):
        found[name] = _version(name)
    return found


def _version(package: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(package)
    except PackageNotFoundError:
        return "not installed"


def about_html(model: str) -> str:
    rows = "".join(f"<tr><td>{html.escape(k)}</td><td>&nbsp;&nbsp;{html.escape(v)}</td></tr>"
                   for k, v in versions().items())
    return (f"<h3>HSD Studio</h3><p>PDFs and page images to Markdown with a local document model, sped up by "
            f"hierarchical speculative decoding: a drafter proposes each region's text and the model verifies "
            f"it, so the output is the model's own.</p><p><b>Model:</b> {html.escape(model or 'default model')}"
            f"</p><table>{rows}</table><p><b>Licence:</b> {LICENCE}</p>")


def info_dialog(parent: QWidget, title: str, body: str) -> QDialog:
    """A non-blocking dialog with rich text and a Close button."""
    dialog = QDialog(parent)
    dialog.setWindowTitle(title)
    label = QLabel(body)
    label.setWordWrap(True)
    label.setMinimumWidth(380)
    buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
    buttons.rejected.connect(dialog.close)
    layout = QVBoxLayout(dialog)
    layout.addWidget(label)
    layout.addWidget(buttons)
    dialog.label = label
    dialog.open()
    return dialog
