"""Choosing a model: the first-run panel and the dialog Convert leads to without a usable model.

``ModelChooser`` offers three ways: a model folder (checked on the spot), a hub id (used at once if
the Hugging Face cache holds it, else downloaded with a progress dialog: ``download_requested``), or
the tiny demo model built locally in one click (random weights: it shows how the app works, its text
is gibberish). ``WelcomePanel`` shows it where the page goes while no document is open and no model
is usable; ``ChooseModelDialog`` shows it when Convert needs a model. Opening a PDF needs no model:
its regions and drafts show at once.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (QDialog, QDialogButtonBox, QFileDialog, QHBoxLayout, QLabel, QLineEdit,
                               QPushButton, QVBoxLayout, QWidget)

from app.model_check import check_model, check_model_folder, model_name

DEMO_ARCH = "hunyuan_vl"


def build_demo_model(folder: Path) -> Path:
    """A tiny random model of a supported family in ``folder`` (no download; seconds on a CPU)."""
    from core.api import build_tiny_model

    if check_model_folder(folder).ok:
        return folder
    return Path(build_tiny_model(folder, DEMO_ARCH, seed=0))


class ModelChooser(QWidget):
    model_chosen = Signal(str)         # a model that passed the checks
    download_requested = Signal(str)   # a hub id not in the cache yet
    demo_failed = Signal(str)
    _demo_built = Signal(str, str)     # folder, error (from the building thread)

    def __init__(self, demo_folder: Path, parent=None):
        super().__init__(parent)
        self.demo_folder = Path(demo_folder)
        self._building = False
        self._demo_built.connect(self._demo_done)
        self.folder_button = QPushButton("Choose model folder…")
        self.folder_button.clicked.connect(self._choose_folder)
        self.hub = QLineEdit()
        self.hub.setPlaceholderText(f"hub id, e.g. {model_name('')}")
        self.hub.returnPressed.connect(self._use_hub)
        self.hub_button = QPushButton("Use hub id")
        self.hub_button.setToolTip("Downloaded into the Hugging Face cache if it is not there yet (with progress)")
        self.hub_button.clicked.connect(self._use_hub)
        self.demo_button = QPushButton("Build the tiny demo model")
        self.demo_button.clicked.connect(self.build_demo)
        self.result = QLabel()
        self.result.setTextFormat(Qt.TextFormat.PlainText)  # folder names and config fields as written
        self.result.setWordWrap(True)
        self.result.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        hub_row = QHBoxLayout()
        hub_row.addWidget(self.hub, 1)
        hub_row.addWidget(self.hub_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.folder_button)
        layout.addLayout(hub_row)
        layout.addWidget(self.demo_button)
        layout.addWidget(self.result)

    def _choose_folder(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Model folder", str(Path.home()))
        if folder:
            self.try_model(folder)

    def _use_hub(self) -> None:
        if self.hub.text().strip():
            self.try_model(self.hub.text().strip())

    def try_model(self, model: str) -> bool:
        """Check ``model``; on success say so and emit ``model_chosen``; a hub id not downloaded yet
        asks for its download; else show what is missing."""
        check = check_model(model)
        if check.ok:
            self.result.setText(f"✓ {model}: {check.text()}. Ready to convert.")
            self.model_chosen.emit(model)
        elif check.downloadable:
            self.result.setText(f"{model} is not on this computer yet: downloading it (see its window)…")
            self.download_requested.emit(model)
        else:
            self.result.setText(f"✗ {model} cannot be used: {check.text()}.")
        return check.ok

    def build_demo(self) -> None:
        """Build the demo model in a background thread (it takes a few seconds); the panel stays live
        and ``model_chosen`` follows when it is ready."""
        import threading

        if self._building:
            return
        self._building = True
        self.demo_button.setEnabled(False)
        self.result.setText("Building the tiny demo model (a few seconds)…")

        from app.worker import EmitGate

        gate, built, folder = EmitGate(self), self._demo_built, self.demo_folder  # a closed window is never told

        def work():
            try:
                gate.emit(built, str(build_demo_model(folder)), "")
            except Exception as exc:  # disk full, no write access: said in the panel
                gate.emit(built, "", f"{type(exc).__name__}: {exc}")

        threading.Thread(target=work, name="demo-model", daemon=True).start()

    @property
    def building(self) -> bool:
        return self._building

    def _demo_done(self, folder: str, error: str) -> None:
        self._building = False
        self.demo_button.setEnabled(True)
        if error:
            self.result.setText(f"✗ The demo model could not be built: {error}")
            self.demo_failed.emit(error)
        else:
            self.try_model(folder)


class WelcomePanel(QWidget):
    open_requested = Signal()

    def __init__(self, demo_folder: Path, parent=None):
        super().__init__(parent)
        title = QLabel("<h2>Welcome to HSD Studio</h2>")
        intro = QLabel(
            "HSD Studio turns PDFs and page images into Markdown with a document model that runs on this "
            "computer. A fast drafter proposes each region's text and the model verifies it.<br><br>"
            "<b>To convert, the app needs a model.</b> Choose a model folder, enter a hub id (downloaded into "
            "the Hugging Face cache with its progress shown, if it is not there yet), or build the tiny demo "
            "model to try the app (its text is random). You can open a PDF now: its regions and drafts show "
            "without a model.")
        intro.setWordWrap(True)
        intro.setTextFormat(Qt.TextFormat.RichText)
        self.chooser = ModelChooser(demo_folder)
        self.open_button = QPushButton("Open a PDF…")
        self.open_button.clicked.connect(self.open_requested)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(40, 30, 40, 30)
        layout.addWidget(title)
        layout.addWidget(intro)
        layout.addSpacing(10)
        layout.addWidget(self.chooser)
        layout.addSpacing(10)
        layout.addWidget(self.open_button)
        layout.addStretch(1)
        self.setMaximumWidth(720)


class ChooseModelDialog(QDialog):
    """Where Convert leads without a usable model: why, and the chooser."""

    def __init__(self, demo_folder: Path, reason: str, parent=None):
        super().__init__(parent)
        self.setWindowTitle("Choose a model to convert")
        self.reason = QLabel(reason)
        self.reason.setTextFormat(Qt.TextFormat.PlainText)
        self.reason.setWordWrap(True)
        self.chooser = ModelChooser(demo_folder)
        self.chooser.model_chosen.connect(lambda _m: self.accept())
        self.chooser.download_requested.connect(lambda _m: self.accept())
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Cancel)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.reason)
        layout.addWidget(self.chooser)
        layout.addWidget(buttons)
        self.setMinimumWidth(520)
