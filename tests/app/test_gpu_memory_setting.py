"""Settings > GPU memory cap: kept with the other settings and handed to the engine as --max-gpu-memory."""

from __future__ import annotations

import pytest


def test_the_cap_is_kept_and_reaches_the_engine(tmp_path):
    from PySide6.QtCore import QSettings

    from app.settings import AppSettings, ConversionSettings
    from core.errors import HSDError
    from core.hardware import MemoryCap

    settings = AppSettings(QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat))
    assert settings.conversion().engine_config().max_gpu_memory is None
    settings.set_conversion(ConversionSettings(max_gpu_memory="75%"))
    assert settings.conversion().max_gpu_memory == "75%"
    assert settings.conversion().engine_config().max_gpu_memory == MemoryCap(percent=75)
    with pytest.raises(HSDError, match="GPU memory cap: 'plenty' is not an amount"):
        ConversionSettings(max_gpu_memory="plenty").engine_config()


def test_the_dialog_refuses_a_cap_that_is_no_amount(qtbot):
    from app.settings import ConversionSettings, SettingsDialog

    dialog = SettingsDialog(ConversionSettings(model=""))
    qtbot.addWidget(dialog)
    dialog.max_gpu_memory.setText("12GiB")
    assert dialog.settings().max_gpu_memory == "12GiB"
    dialog.max_gpu_memory.setText("a lot")
    dialog._accept()
    assert "not an amount" in dialog.message.text() and not dialog.result()
