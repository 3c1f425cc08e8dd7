"""The app's OCR settings (workers, device): kept, shown only where the drafter reads with OCR, and
handed to the OCR drafter through its spec as ``hsd convert --ocr-workers/--ocr-device`` hands them."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import QSettings

from app.settings import OCR_DEVICE_HELP, AppSettings, ConversionSettings, SettingsDialog
from core import tuning
from core.drafters.accelerators import DEVICES


def test_the_dialog_offers_the_devices_the_command_line_does():
    assert tuple(OCR_DEVICE_HELP) == DEVICES


def test_the_settings_reach_the_ocr_drafter_s_spec_and_the_defaults_change_nothing():
    layout = tuning.DEFAULT_SCAN_LAYOUT
    assert ConversionSettings().engine_config().drafter == f"auto:layout={layout}"
    assert ConversionSettings(ocr_workers=2, ocr_device="cpu").engine_config().drafter == \
        f"auto:layout={layout},workers=2,device=cpu"
    # the text layer reads no OCR: the settings stay saved but do not reach it
    assert ConversionSettings(drafter="textlayer", ocr_workers=2, ocr_device="cpu").engine_config().drafter == "textlayer"
    # a stored value the dialog does not offer (an older or hand-edited file) is the default
    assert ConversionSettings(ocr_workers=-1, ocr_device="tpu").engine_config().drafter == f"auto:layout={layout}"


def test_they_are_kept(tmp_path):
    path = str(tmp_path / "s.ini")
    AppSettings(QSettings(path, QSettings.Format.IniFormat)).set_conversion(ConversionSettings(ocr_workers=3,
                                                                                               ocr_device="cpu"))
    kept = AppSettings(QSettings(path, QSettings.Format.IniFormat)).conversion()
    assert (kept.ocr_workers, kept.ocr_device) == (3, "cpu")


def test_the_dialog_edits_them_where_the_drafter_reads_with_ocr(qtbot):
    dialog = SettingsDialog(ConversionSettings(drafter="textlayer"))
    qtbot.addWidget(dialog)
    assert dialog.ocr_workers.text() == "auto" and dialog.ocr_device.currentText() == "auto"
    assert not dialog.ocr_workers.isEnabled() and not dialog.ocr_device.isEnabled()
    dialog.drafter.setCurrentText("rapidocr")
    assert dialog.ocr_workers.isEnabled() and dialog.ocr_device.isEnabled()
    dialog.ocr_workers.setValue(2)
    dialog.ocr_device.setCurrentText("cpu")
    assert "CPU only" in dialog.ocr_device.toolTip()
    chosen = dialog.settings()
    assert (chosen.ocr_workers, chosen.ocr_device) == (2, "cpu")
    assert chosen.engine_config().drafter == f"rapidocr:layout={tuning.DEFAULT_SCAN_LAYOUT},workers=2,device=cpu"
    assert SettingsDialog(chosen).settings() == chosen  # opening the dialog changes nothing
