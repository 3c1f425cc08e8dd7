"""Settings > Engine (eager or fast): kept with the other settings and handed to the engine as --engine."""

from __future__ import annotations

from app.settings import ENGINE_HELP, ConversionSettings


def test_the_engine_setting_is_kept_and_reaches_the_engine_config(tmp_path):
    from PySide6.QtCore import QSettings

    from app.settings import AppSettings

    assert set(ENGINE_HELP) == {"eager", "fast"}
    settings = AppSettings(QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat))
    assert settings.conversion().engine_config().engine == "eager"
    settings.set_conversion(ConversionSettings(engine="fast"))
    assert settings.conversion().engine == "fast"
    assert settings.conversion().engine_config().engine == "fast"
    assert ConversionSettings(engine="bogus").engine_config().engine == "eager"  # an old or edited settings file


def test_the_dialog_offers_both_engines(qtbot):
    from app.settings import SettingsDialog

    dialog = SettingsDialog(ConversionSettings(model="", engine="fast"))
    qtbot.addWidget(dialog)
    assert dialog.settings().engine == "fast"
    dialog.engine.setCurrentText("eager")
    assert dialog.settings().engine == "eager"
    assert [dialog.engine.itemText(i) for i in range(dialog.engine.count())] == ["eager", "fast"]
