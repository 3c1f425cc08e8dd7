"""The first-run panel: what the app needs, and three ways to get a model.

Shown where the page goes while no document is open and the configured model cannot be loaded.
Choosing a folder or typing a hub id is checked at once (``app.model_check``); the tiny demo
model is built locally in one click (random weights: it shows how the app works, its text is
gibberish). Opening a PDF needs no model: its regions and drafts show at once.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (QApplication, QFileDialog, QHBoxLayout, QLabel, QLineEdit, QPushButton,
                               QVBoxLayout, QWidget)

from app.model_check import check_model, check_model_folder

DEMO_ARCH = "hunyuan_vl"


def build_demo_model(folder: Path) -> Path:
    """A tiny random model of a supported family in ``folder`` (no download; seconds on a CPU)."""
    from core.api import build_tiny_model

    if check_model_folder(folder).ok:
        return folder
    return Path(build_tiny_model(folder, DEMO_ARCH, seed=0))


class WelcomePanel(QWidget):
    model_chosen = Signal(str)     # a model that passed the checks
    open_requested = Signal()

    def __init__(self, demo_folder: Path, parent=None):
        super().__init__(parent)
        self.demo_folder = Path(demo_folder)
        title = QLabel("<h2>Welcome to HSD Studio</h2>")
        intro = QLabel(
            "HSD Studio turns PDFs and page images into Markdown with a document model that runs on this "
            "computer. A fast drafter proposes each region's text and the model verifies it.<br><br>"
            "<b>To convert, the app needs a model.</b> Nothing is downloaded for you: choose a model folder, "
            "enter a hub id you downloaded before, or build the tiny demo model to try the app (its text is "
            "random). You can open a PDF now: its regions and drafts show without a model.")
        intro.setWordWrap(True)
        intro.setTextFormat(Qt.TextFormat.RichText)
        self.folder_button = QPushButton("Choose model folder…")
        self.folder_button.clicked.connect(self._choose_folder)
        self.hub = QLineEdit()
        self.hub.setPlaceholderText("hub id, e.g. tencent/HunyuanOCR")
        self.hub.returnPressed.connect(self._use_hub)
        self.hub_button = QPushButton("Use hub id")
        self.hub_button.clicked.connect(self._use_hub)
        self.demo_button = QPushButton("Build the tiny demo model")
        self.demo_button.clicked.connect(self.build_demo)
        self.open_button = QPushButton("Open a PDF…")
        self.open_button.clicked.connect(self.open_requested)
        self.result = QLabel()
        self.result.setWordWrap(True)
        self.result.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        hub_row = QHBoxLayout()
        hub_row.addWidget(self.hub, 1)
        hub_row.addWidget(self.hub_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(40, 30, 40, 30)
        layout.addWidget(title)
        layout.addWidget(intro)
        layout.addSpacing(10)
        layout.addWidget(self.folder_button)
        layout.addLayout(hub_row)
        layout.addWidget(self.demo_button)
        layout.addWidget(self.result)
        layout.addSpacing(10)
        layout.addWidget(self.open_button)
        layout.addStretch(1)
        self.setMaximumWidth(720)

    def _choose_folder(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Model folder", str(Path.home()))
        if folder:
            self.try_model(folder)

    def _use_hub(self) -> None:
        if self.hub.text().strip():
            self.try_model(self.hub.text().strip())

    def try_model(self, model: str) -> bool:
        """Check ``model``; on success say so and emit ``model_chosen``, else show what is missing."""
        check = check_model(model)
        if check.ok:
            self.result.setText(f"✓ {model}: {check.text()}. Ready to convert.")
            self.model_chosen.emit(model)
        else:
            self.result.setText(f"✗ {model} cannot be used: {check.text()}.")
        return check.ok

    def build_demo(self) -> Path | None:
        self.result.setText("Building the tiny demo model…")
        QApplication.setOverrideCursor(Qt.CursorShape.WaitCursor)
        QApplication.processEvents()
        try:
            folder = build_demo_model(self.demo_folder)
        except Exception as exc:
            self.result.setText(f"✗ The demo model could not be built: {exc}")
            return None
        finally:
            QApplication.restoreOverrideCursor()
        return folder if self.try_model(str(folder)) else None
