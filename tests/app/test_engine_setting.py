"""The app's Engine setting (eager or fast) reaches the conversion's engine configuration."""

from __future__ import annotations

from app.settings import ENGINE_HELP, ConversionSettings


def test_the_engine_setting_reaches_the_engine_config():
    assert set(ENGINE_HELP) == {"eager", "fast"}
    assert ConversionSettings(engine="fast").engine_config().engine == "fast"
    assert ConversionSettings().engine_config().engine == "eager"
    assert ConversionSettings(engine="bogus").engine_config().engine == "eager"  # an old or edited settings file
