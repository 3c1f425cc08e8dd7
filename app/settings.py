"""Conversion settings kept with QSettings, the settings dialog, and recent files.

``ConversionSettings`` is a plain value (model, device, drafter, mode, tau, DPI, page range, token
budget) that turns into a ``core.engine.EngineConfig``; ``AppSettings`` stores it, the recent-file
list and the cache folder in a ``QSettings`` (tests pass their own ini file).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from PySide6.QtCore import QSettings, QStandardPaths
from PySide6.QtWidgets import (QComboBox, QDialog, QDialogButtonBox, QDoubleSpinBox, QFileDialog,
                               QFormLayout, QHBoxLayout, QLabel, QLineEdit, QPushButton, QSpinBox,
                               QVBoxLayout, QWidget)

DEVICES = ("auto", "cpu", "cuda", "mps")
MAX_RECENT = 10
_PAGE_PART = re.compile(r"^\s*(\d*)\s*(-?)\s*(\d*)\s*$")


@dataclass
class ConversionSettings:
    model: str = ""              # hub id or local folder; "" = the engine's default model
    device: str = "auto"
    drafter: str = "auto"
    mode: str = "hsd"
    tau: float = 1.0
    dpi: int = 144
    pages: str = ""              # page range such as "1-3,7"; "" = all pages
    max_new_tokens: int = 4096   # per page

    def engine_config(self):
        """The engine configuration these settings describe (validated by ``EngineConfig``)."""
        from core.api import EngineConfig

        return EngineConfig(model=self.model.strip() or None, mode=self.mode, tau=float(self.tau),
                            drafter=self.drafter, dpi=int(self.dpi),
                            device=None if self.device in ("", "auto") else self.device,
                            max_new_tokens=int(self.max_new_tokens))

    def output_settings(self) -> dict:
        """What ``hsd convert`` records as the settings of its output (decides resume and JSON)."""
        from core.api import settings_of

        return settings_of(self.engine_config(), None)

    def summary(self) -> str:
        model = Path(self.model).name if self.model else "default model"
        return f"{model} · {self.mode} · tau {self.tau:g} · {self.drafter} · {self.dpi} dpi"


def page_spec_ok(spec: str) -> bool:
    """Syntax check of a page range (the page count is checked when a document is opened)."""
    if spec.strip().lower() in ("", "all"):
        return True
    for part in spec.replace("\u2013", "-").split(","):
        m = _PAGE_PART.match(part)
        if not m or not (m.group(1) or m.group(3)) or (not m.group(2) and (not m.group(1) or m.group(3))):
            return False
    return True


class AppSettings:
    """The app's persistent state in one ``QSettings``."""

    def __init__(self, qsettings: QSettings | None = None):
        self.q = qsettings if qsettings is not None else QSettings("HSD Studio", "hsd-studio")

    def conversion(self) -> ConversionSettings:
        default = ConversionSettings()
        values = {}
        for f in fields(ConversionSettings):
            kind = type(getattr(default, f.name))
            raw = self.q.value(f"conversion/{f.name}", getattr(default, f.name))
            try:
                values[f.name] = kind(raw) if raw is not None else getattr(default, f.name)
            except (TypeError, ValueError):
                values[f.name] = getattr(default, f.name)
        return ConversionSettings(**values)

    def set_conversion(self, settings: ConversionSettings) -> None:
        for key, value in asdict(settings).items():
            self.q.setValue(f"conversion/{key}", value)
        self.q.sync()

    def recent_files(self) -> list[str]:
        value = self.q.value("recent_files", [])
        if isinstance(value, str):
            value = [value] if value else []
        return [str(v) for v in value or []]

    def add_recent(self, path: str) -> None:
        path = str(Path(path).resolve())
        files = [p for p in self.recent_files() if p != path]
        self.q.setValue("recent_files", [path] + files[: MAX_RECENT - 1])
        self.q.sync()

    def clear_recent(self) -> None:
        self.q.setValue("recent_files", [])
        self.q.sync()

    def cache_dir(self) -> Path:
        """Where conversions keep finished pages (so converting again resumes, like ``hsd convert``)."""
        value = self.q.value("cache_dir", "")
        if value:
            return Path(str(value))
        base = QStandardPaths.writableLocation(QStandardPaths.StandardLocation.CacheLocation)
        return Path(base or Path.home() / ".cache" / "hsd-studio") / "sessions"

    def set_cache_dir(self, path: str | Path) -> None:
        self.q.setValue("cache_dir", str(path))
        self.q.sync()


class SettingsDialog(QDialog):
    """Edits a ``ConversionSettings``; ``settings()`` returns the edited copy."""

    def __init__(self, settings: ConversionSettings, parent: QWidget | None = None):
        super().__init__(parent)
        from core.api import DRAFTER_NAMES
        from core.api import MODES

        self.setWindowTitle("Conversion settings")
        form = QFormLayout()
        self.model = QLineEdit(settings.model)
        self.model.setPlaceholderText("hub id (e.g. tencent/HunyuanOCR) or a local model folder")
        browse = QPushButton("Folder…")
        browse.clicked.connect(self._browse)
        row = QHBoxLayout()
        row.addWidget(self.model, 1)
        row.addWidget(browse)
        form.addRow("Model", row)
        self.device = QComboBox()
        self.device.setEditable(True)
        self.device.addItems(DEVICES)
        self.device.setCurrentText(settings.device)
        form.addRow("Device", self.device)
        self.drafter = QComboBox()
        self.drafter.addItems(DRAFTER_NAMES)
        self.drafter.setCurrentText(settings.drafter)
        form.addRow("Drafter", self.drafter)
        self.mode = QComboBox()
        self.mode.addItems(MODES)
        self.mode.setCurrentText(settings.mode)
        self.mode.setToolTip("hsd: regions then page (lossless at tau 1); ar: plain decoding; "
                             "page: page-level speculation only; regions: region outputs joined")
        form.addRow("Mode", self.mode)
        self.tau = QDoubleSpinBox()
        self.tau.setRange(0.01, 1.0)
        self.tau.setSingleStep(0.05)
        self.tau.setDecimals(2)
        self.tau.setValue(settings.tau)
        self.tau.setToolTip("1.0 keeps exactly the model's greedy output; lower accepts near-misses")
        form.addRow("Tau", self.tau)
        self.dpi = QSpinBox()
        self.dpi.setRange(36, 600)
        self.dpi.setValue(settings.dpi)
        form.addRow("DPI", self.dpi)
        self.pages = QLineEdit(settings.pages)
        self.pages.setPlaceholderText("all pages, or e.g. 1-3,7")
        form.addRow("Pages", self.pages)
        self.max_new_tokens = QSpinBox()
        self.max_new_tokens.setRange(1, 65536)
        self.max_new_tokens.setValue(settings.max_new_tokens)
        form.addRow("Max tokens per page", self.max_new_tokens)
        self.message = QLabel()
        self.message.setStyleSheet("color: #b00020")
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self._accept)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.message)
        layout.addWidget(buttons)

    def _browse(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Model folder", self.model.text())
        if folder:
            self.model.setText(folder)

    def settings(self) -> ConversionSettings:
        return ConversionSettings(model=self.model.text().strip(), device=self.device.currentText().strip() or "auto",
                                  drafter=self.drafter.currentText(), mode=self.mode.currentText(),
                                  tau=round(self.tau.value(), 4), dpi=self.dpi.value(),
                                  pages=self.pages.text().strip(), max_new_tokens=self.max_new_tokens.value())

    def _accept(self) -> None:
        s = self.settings()
        if not page_spec_ok(s.pages):
            self.message.setText(f"Page range {s.pages!r} is not like 1-3,7")
            return
        try:
            s.engine_config()
        except Exception as exc:  # EngineConfig validates mode and tau
            self.message.setText(str(exc))
            return
        self.accept()
