"""The batch export's question: which folder, which formats, which file names."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import (QCheckBox, QDialog, QDialogButtonBox, QFileDialog, QFormLayout, QHBoxLayout,
                               QLabel, QLineEdit, QPushButton, QVBoxLayout, QWidget)

from core.api import EXPORT_DESCRIPTIONS as DESCRIPTIONS, EXPORT_FORMATS as FORMATS


class BatchExportDialog(QDialog):
    """Folder, formats (remembered) and the name pattern (``{stem}``, ``{n}``, ``{parent}``, ``{ext}``)."""

    def __init__(self, parent, folder: str, app_settings):
        super().__init__(parent)
        self.setWindowTitle("Export all documents")
        self.app_settings = app_settings
        formats, pattern = app_settings.export_choice()
        self.folder = QLineEdit(folder)
        browse = QPushButton("Choose…")
        browse.clicked.connect(self._browse)
        row = QWidget()
        row_layout = QHBoxLayout(row)
        row_layout.setContentsMargins(0, 0, 0, 0)
        row_layout.addWidget(self.folder, 1)
        row_layout.addWidget(browse)
        self.boxes = {}
        box_row = QWidget()
        box_layout = QVBoxLayout(box_row)
        box_layout.setContentsMargins(0, 0, 0, 0)
        for fmt in FORMATS:
            box = QCheckBox(f"{fmt.upper()}: {DESCRIPTIONS[fmt]}")
            box.setChecked(fmt in formats)
            box.toggled.connect(self._check)
            self.boxes[fmt] = box
            box_layout.addWidget(box)
        self.pattern = QLineEdit(pattern)
        self.pattern.textChanged.connect(self._check)
        hint = QLabel("{stem}: the document's name · {n}: its number · {parent}: its folder · {ext}: the format")
        hint.setStyleSheet("color: palette(placeholder-text)")
        form = QFormLayout()
        form.addRow("Folder:", row)
        form.addRow("Formats:", box_row)
        form.addRow("File names:", self.pattern)
        form.addRow("", hint)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        self.buttons.accepted.connect(self._accept)
        self.buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.buttons)
        self._check()

    def _browse(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Export into", self.folder.text())
        if folder:
            self.folder.setText(folder)

    def _check(self) -> None:
        ok = any(b.isChecked() for b in self.boxes.values()) and bool(self.pattern.text().strip()) \
            and bool(self.folder.text().strip())
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setEnabled(ok)

    def choice(self) -> tuple[Path, list[str], str]:
        formats = [f for f, b in self.boxes.items() if b.isChecked()]
        return Path(self.folder.text().strip()), formats, self.pattern.text().strip()

    def _accept(self) -> None:
        _, formats, pattern = self.choice()
        self.app_settings.set_export_choice(formats, pattern)
        self.accept()
